"""The frozen record every consumer reads: a solved game and how it was solved."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .graph import GameGraph


@dataclass(frozen=True)
class StateAnswer:
    """Everything known about one solved state, in plain Python values."""

    value: float
    terminal_probability: dict[str, float]
    unending_probability: float
    row_strategy: dict[str, float]
    col_strategy: dict[str, float]
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    matrix: tuple[tuple[float, ...], ...]
    exploitability: float
    p1_guarantee: float
    p2_guarantee: float


@dataclass(frozen=True, eq=False)
class SolveResult:
    graph: GameGraph
    values: np.ndarray
    row_strategy: np.ndarray
    col_strategy: np.ndarray
    terminal_probability: np.ndarray  # (states, terminal outcomes)
    unending_probability: np.ndarray
    p1_guarantee: np.ndarray
    p2_guarantee: np.ndarray
    bellman_residual: float
    method: str
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def exploitability(self) -> np.ndarray:
        """Per state: the most either player gains by best-responding to the other's strategy."""
        return np.maximum(
            np.maximum(self.values - self.p1_guarantee, self.p2_guarantee - self.values), 0.0
        )

    @property
    def max_exploitability(self) -> float:
        return float(self.exploitability.max(initial=0.0))

    def answer(self, code: int) -> StateAnswer:
        g = self.graph
        i = g.index_of(code)
        rows = tuple(g.action_labels[a] for a in g.row_actions[g.row_ptr[i] : g.row_ptr[i + 1]])
        cols = tuple(g.action_labels[a] for a in g.col_actions[g.col_ptr[i] : g.col_ptr[i + 1]])
        x = self.row_strategy[g.row_ptr[i] : g.row_ptr[i + 1]]
        y = self.col_strategy[g.col_ptr[i] : g.col_ptr[i + 1]]
        matrix = g.stage_matrix(i, self.values)
        return StateAnswer(
            value=float(self.values[i]),
            terminal_probability={
                label: float(self.terminal_probability[i, t])
                for t, label in enumerate(g.terminal_labels)
            },
            unending_probability=float(self.unending_probability[i]),
            row_strategy={a: float(p) for a, p in zip(rows, x)},
            col_strategy={a: float(p) for a, p in zip(cols, y)},
            rows=rows,
            cols=cols,
            matrix=tuple(tuple(float(v) for v in row) for row in matrix),
            exploitability=float(self.exploitability[i]),
            p1_guarantee=float(self.p1_guarantee[i]),
            p2_guarantee=float(self.p2_guarantee[i]),
        )
