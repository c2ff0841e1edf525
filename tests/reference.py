"""The plain baseline: Shapley value iteration over all states, one scipy LP per stage.

No component ordering, no compiled kernel: every sweep solves every state's
stage game with `linprog`. It is slow on purpose-free grounds (it is what the
fast path must agree with and beat), so keep it simple and obviously right.
"""

from __future__ import annotations

import numpy as np

from solver.core.graph import GameGraph
from solver.core.stage import solve_matrix_game_lp


def reference_values(
    graph: GameGraph, tol: float = 1e-13, max_sweeps: int = 100_000, states: np.ndarray | None = None
) -> tuple[np.ndarray, int]:
    """(values, sweeps): Jacobi iteration of Shapley's operator from the unending payoff.

    With `states`, only those states are updated each sweep (the rest keep the
    unending payoff): used to time a subset for extrapolation.
    """
    values = np.full(graph.num_states, graph.unending_payoff)
    which = np.arange(graph.num_states) if states is None else np.asarray(states)
    for sweep in range(1, max_sweeps + 1):
        new = values.copy()
        for i in which:
            new[i] = solve_matrix_game_lp(graph.stage_matrix(int(i), values)).value
        change = float(np.max(np.abs(new - values), initial=0.0))
        values = new
        if change <= tol:
            return values, sweep
    return values, max_sweeps
