"""The Markov chain of play under a pair of stationary strategies, and the
probability of being in each state turn by turn (exact propagation, no sampling)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..graph import GameGraph


@dataclass(frozen=True, eq=False)
class CellIndex:
    """For every stage-game cell of a graph: its state, and the index of its
    row (into `row_actions`) and column (into `col_actions`) action."""

    state: np.ndarray
    row: np.ndarray
    col: np.ndarray

    @classmethod
    def of(cls, graph: GameGraph) -> "CellIndex":
        cells = np.diff(graph.cell_ptr)
        state = np.repeat(np.arange(graph.num_states, dtype=np.int64), cells)
        local = np.arange(graph.num_cells, dtype=np.int64) - graph.cell_ptr[state]
        n = np.diff(graph.col_ptr)[state]
        return cls(state, graph.row_ptr[state] + local // n, graph.col_ptr[state] + local % n)


def cell_values(graph: GameGraph, values: np.ndarray) -> np.ndarray:
    """Expected continuation payoff to P1 of every cell, given state `values`."""
    nxt = graph.out_next
    cont = np.where(nxt >= 0, values[np.maximum(nxt, 0)], graph.terminal_payoff[-1 - np.minimum(nxt, -1)])
    out_cell = np.repeat(np.arange(graph.num_cells, dtype=np.int64), np.diff(graph.out_ptr))
    return np.bincount(out_cell, weights=graph.out_prob * cont, minlength=graph.num_cells)


@dataclass(frozen=True, eq=False)
class PlayChain:
    """Play under fixed strategies: `transition[s, s']` the probability of
    moving from state s to s' in one turn, `ending[s, t]` of ending in terminal
    outcome t."""

    transition: sp.csr_matrix
    ending: np.ndarray

    def masses(self, start: int, max_turns: int, alive_below: float = 1e-12) -> Iterator[np.ndarray]:
        """The probability of each state at the start of turns 1, 2, ... (the
        game still going), until `max_turns` or until less than `alive_below`
        of the probability is still playing."""
        mass = np.zeros(self.transition.shape[0])
        mass[start] = 1.0
        backward = self.transition.T.tocsr()
        for _ in range(max_turns):
            if mass.sum() < alive_below:
                return
            yield mass
            mass = backward @ mass


def play_chain(graph: GameGraph, row_strategy: np.ndarray, col_strategy: np.ndarray) -> PlayChain:
    """The chain of play when P1 plays `row_strategy` and P2 `col_strategy`."""
    cells = CellIndex.of(graph)
    cell_weight = row_strategy[cells.row] * col_strategy[cells.col]
    out_cell = np.repeat(np.arange(graph.num_cells, dtype=np.int64), np.diff(graph.out_ptr))
    weight = cell_weight[out_cell] * graph.out_prob
    source = cells.state[out_cell]
    live = (graph.out_next >= 0) & (weight > 0)
    n = graph.num_states
    transition = sp.csr_matrix((weight[live], (source[live], graph.out_next[live])), shape=(n, n))
    ends = (graph.out_next < 0) & (weight > 0)
    ending = np.zeros((n, graph.terminal_payoff.shape[0]))
    np.add.at(ending, (source[ends], -1 - graph.out_next[ends]), weight[ends])
    return PlayChain(transition, ending)


def expected_visits(chain: PlayChain, start: int, max_turns: int = 200) -> np.ndarray:
    """Expected number of turns spent in each state over the first `max_turns` turns."""
    return sum(chain.masses(start, max_turns), np.zeros(chain.transition.shape[0]))
