"""Random game graphs and stationary strategies, for tests that check a kernel on many small cyclic games."""

from __future__ import annotations

import numpy as np

from solver.core.graph import GameGraph


def random_graph(rng: np.random.Generator, n: int, max_actions: int = 2, max_outcomes: int = 2,
                 p_terminal: float = 0.25, payoffs=(0.0, 1.0, 0.3, 0.7), unending: float = 0.5,
                 local: int | None = None) -> GameGraph:
    """Random GameGraph; with `local`, successors stay within +-local of the state (short cycles)."""
    row_ptr, col_ptr, cell_ptr, out_ptr = [0], [0], [0], [0]
    out_next, out_prob = [], []
    for s in range(n):
        m, k = rng.integers(1, max_actions + 1, size=2)
        row_ptr.append(row_ptr[-1] + m)
        col_ptr.append(col_ptr[-1] + k)
        for _ in range(m * k):
            q = rng.integers(1, max_outcomes + 1)
            probs = rng.dirichlet(np.ones(q))
            for p in probs:
                if rng.random() < p_terminal:
                    out_next.append(-1 - int(rng.integers(len(payoffs))))
                elif local is None:
                    out_next.append(int(rng.integers(n)))
                else:
                    out_next.append(int(np.clip(s + rng.integers(-local, local + 1), 0, n - 1)))
                out_prob.append(p)
            out_ptr.append(len(out_next))
        cell_ptr.append(len(out_ptr) - 1)
    return GameGraph(
        states=np.arange(n, dtype=np.int64),
        row_ptr=np.array(row_ptr, np.int64),
        row_actions=np.zeros(row_ptr[-1], np.int16),
        col_ptr=np.array(col_ptr, np.int64),
        col_actions=np.zeros(col_ptr[-1], np.int16),
        cell_ptr=np.array(cell_ptr, np.int64),
        out_ptr=np.array(out_ptr, np.int64),
        out_next=np.array(out_next, np.int64),
        out_prob=np.array(out_prob, np.float64),
        terminal_payoff=np.array(payoffs, np.float64),
        terminal_labels=tuple(f"t{i}" for i in range(len(payoffs))),
        unending_payoff=unending,
        action_labels=("x",),
    )


def random_strategy(rng: np.random.Generator, ptr: np.ndarray, p_zero: float = 0.3) -> np.ndarray:
    out = np.empty(int(ptr[-1]))
    for i in range(len(ptr) - 1):
        w = rng.random(ptr[i + 1] - ptr[i]) * (rng.random(ptr[i + 1] - ptr[i]) >= p_zero)
        if w.sum() == 0:
            w[rng.integers(len(w))] = 1.0
        out[ptr[i] : ptr[i + 1]] = w / w.sum()
    return out
