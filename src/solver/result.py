"""The frozen record every consumer reads: a solved game and how it was solved."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .graph import GameGraph
from .protocol import StochasticGame


@dataclass(frozen=True)
class StateAnswer:
    """Everything known about one solved state, in plain Python values."""

    value: float
    terminal_probability: dict[str, float]
    unending_probability: float
    expected_length: float  # turns until the end, given that the game ends (nan if it never does)
    row_strategy: dict[str, float]
    col_strategy: dict[str, float]
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    matrix: tuple[tuple[float, ...], ...]
    exploitability: float
    p1_guarantee: float
    p2_guarantee: float


# Per-state (or per-action) arrays: what the cache stores, in this order.
ARRAY_FIELDS = (
    "states", "row_ptr", "row_actions", "col_ptr", "col_actions", "values", "row_strategy",
    "col_strategy", "terminal_probability", "unending_probability", "ending_turns", "p1_guarantee",
    "p2_guarantee", "terminal_payoff",
)


@dataclass(frozen=True, eq=False)
class SolveResult:
    """Values, strategies, outcome probabilities and certificate of every
    solved state. State i has code `states[i]` (sorted) and P1's actions
    `row_actions[row_ptr[i]:row_ptr[i+1]]` (strategy weights at the same
    positions of `row_strategy`), P2's likewise. The transitions are not kept
    (`graph` is None for a table loaded from disk): a stage matrix is rebuilt
    from the game on demand."""

    states: np.ndarray
    row_ptr: np.ndarray
    row_actions: np.ndarray
    col_ptr: np.ndarray
    col_actions: np.ndarray
    values: np.ndarray
    row_strategy: np.ndarray
    col_strategy: np.ndarray
    terminal_probability: np.ndarray  # (states, terminal outcomes)
    unending_probability: np.ndarray
    ending_turns: np.ndarray  # E[turns played x 1{the game ends}]; see `expected_length`
    p1_guarantee: np.ndarray
    p2_guarantee: np.ndarray
    terminal_payoff: np.ndarray
    terminal_labels: tuple[str, ...]
    action_labels: tuple[str, ...]
    unending_payoff: float
    bellman_residual: float
    method: str
    timings: dict[str, float] = field(default_factory=dict)
    graph: GameGraph | None = None
    whole_states: int | None = None  # set when this holds only part of a stored table ...
    whole_max_exploitability: float | None = None  # ... with that table's figures

    @property
    def table_states(self) -> int:
        """States in the whole solved table (this result may hold a part of it)."""
        return self.num_states if self.whole_states is None else self.whole_states

    @property
    def table_max_exploitability(self) -> float:
        """The largest exploitability over the whole solved table."""
        return self.max_exploitability if self.whole_max_exploitability is None else self.whole_max_exploitability

    @property
    def num_states(self) -> int:
        return int(self.states.shape[0])

    @property
    def exploitability(self) -> np.ndarray:
        """Per state: the most either player gains by best-responding to the other's strategy."""
        return np.maximum(
            np.maximum(self.values - self.p1_guarantee, self.p2_guarantee - self.values), 0.0
        )

    @property
    def max_exploitability(self) -> float:
        return float(self.exploitability.max(initial=0.0))

    def expected_length(self, i: int) -> float:
        """Expected turns until the end from state index `i`, given that the
        game ends, under the table's strategies (nan if it never ends)."""
        ending = float(self.terminal_probability[i].sum())
        return float(self.ending_turns[i]) / ending if ending > 0.0 else float("nan")

    def index_of(self, code: int) -> int:
        """Index of the state with encoding `code`; KeyError if it was not solved."""
        i = int(np.searchsorted(self.states, code))
        if i >= self.num_states or self.states[i] != code:
            raise KeyError(code)
        return i

    def stage_matrix(self, code: int, game: StochasticGame) -> np.ndarray:
        """Value to P1 after each action pair at state `code` (rows P1's actions)."""
        expansion = game.expand(np.array([code], dtype=np.int64))
        m, n = int(expansion.row_count[0]), int(expansion.col_count[0])
        counts = np.asarray(expansion.out_count, np.int64)
        nxt = np.asarray(expansion.out_next, np.int64)
        live = nxt >= 0
        index = np.searchsorted(self.states, nxt[live])
        if index.size and (index.max() >= self.num_states or np.any(self.states[index] != nxt[live])):
            raise KeyError(f"a successor of state {code} was not solved")
        cont = np.empty(nxt.shape[0])
        cont[live] = self.values[index]
        cont[~live] = self.terminal_payoff[-1 - nxt[~live]]
        cell = np.repeat(np.arange(m * n), counts)
        return np.bincount(cell, weights=np.asarray(expansion.out_prob) * cont, minlength=m * n).reshape(m, n)

    def answer(self, code: int, game: StochasticGame) -> StateAnswer:
        i = self.index_of(code)
        rows = tuple(self.action_labels[a] for a in self.row_actions[self.row_ptr[i] : self.row_ptr[i + 1]])
        cols = tuple(self.action_labels[a] for a in self.col_actions[self.col_ptr[i] : self.col_ptr[i + 1]])
        x = self.row_strategy[self.row_ptr[i] : self.row_ptr[i + 1]]
        y = self.col_strategy[self.col_ptr[i] : self.col_ptr[i + 1]]
        matrix = self.stage_matrix(code, game)
        return StateAnswer(
            value=float(self.values[i]),
            terminal_probability={
                label: float(self.terminal_probability[i, t])
                for t, label in enumerate(self.terminal_labels)
            },
            unending_probability=float(self.unending_probability[i]),
            expected_length=self.expected_length(i),
            row_strategy={a: float(p) for a, p in zip(rows, x)},
            col_strategy={a: float(p) for a, p in zip(cols, y)},
            rows=rows,
            cols=cols,
            matrix=tuple(tuple(float(v) for v in row) for row in matrix),
            exploitability=float(self.exploitability[i]),
            p1_guarantee=float(self.p1_guarantee[i]),
            p2_guarantee=float(self.p2_guarantee[i]),
        )
