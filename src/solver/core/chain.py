"""The Markov chain of play under a pair of stationary strategies, and the
probability of being in each state turn by turn (exact propagation, no sampling).
`turn_by_turn` propagates once for every figure read turn by turn."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .graph import GameGraph, index_type

if TYPE_CHECKING:  # scipy is loaded where a chain is built: a query that reads kept figures never needs it
    import scipy.sparse as sp


@dataclass(frozen=True, eq=False)
class CellIndex:
    """For every stage-game cell of a graph: its state, and the index of its
    row (into `row_actions`) and column (into `col_actions`) action."""

    state: np.ndarray
    row: np.ndarray
    col: np.ndarray

    @classmethod
    def of(cls, graph: GameGraph) -> CellIndex:
        return cls.of_counts(np.diff(graph.row_ptr), np.diff(graph.col_ptr))

    @classmethod
    def of_counts(cls, row_count: np.ndarray, col_count: np.ndarray) -> CellIndex:
        """Of states with `row_count` and `col_count` actions each (a game's expansion)."""
        row_count, col_count = np.asarray(row_count, np.int64), np.asarray(col_count, np.int64)
        cells = row_count * col_count
        state = np.repeat(np.arange(cells.size, dtype=np.int64), cells)
        local = np.arange(int(cells.sum()), dtype=np.int64) - np.repeat(np.cumsum(cells) - cells, cells)
        n = col_count[state]
        row_start, col_start = np.cumsum(row_count) - row_count, np.cumsum(col_count) - col_count
        return cls(state, row_start[state] + local // n, col_start[state] + local % n)


def cell_values(graph: GameGraph, values: np.ndarray) -> np.ndarray:
    """Expected continuation payoff to P1 of every cell, given state `values`."""
    nxt = graph.out_next
    cont = np.where(nxt >= 0, values[np.maximum(nxt, 0)], graph.terminal_payoff[-1 - np.minimum(nxt, -1)])
    out_cell = np.repeat(np.arange(graph.num_cells, dtype=np.int64), np.diff(graph.out_ptr))
    return np.bincount(out_cell, weights=graph.out_prob * cont, minlength=graph.num_cells)


@dataclass(frozen=True, eq=False)
class PlayChain:
    """Play under fixed strategies: `transition[s, s']` the probability of
    moving from state s to s' in one turn, `ending[s]` of ending in this turn
    (in any terminal outcome: what is read of it; one column per outcome
    would take as many times the bytes)."""

    transition: sp.csr_matrix
    ending: np.ndarray

    def masses(self, start: int, max_turns: int, alive_below: float = 1e-12) -> Iterator[np.ndarray]:
        """The probability of each state at the start of turns 1, 2, ... (the
        game still going), until `max_turns` or until less than `alive_below`
        of the probability is still playing."""
        mass = np.zeros(self.transition.shape[0])
        mass[start] = 1.0
        backward = self.transition.T  # a view (CSC): a copy would double the chain's memory
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
    import scipy.sparse as sp

    transition = sp.csr_matrix((weight[live], (source[live], graph.out_next[live])), shape=(n, n))
    ends = (graph.out_next < 0) & (weight > 0)
    ending = np.zeros((n, graph.terminal_payoff.shape[0]))
    np.add.at(ending, (source[ends], -1 - graph.out_next[ends]), weight[ends])
    return PlayChain(transition, ending.sum(axis=1))


def chain_of_play(graph: GameGraph) -> PlayChain:
    """`play_chain` of a graph whose every state has one 1 x 1 stage game (a
    `play.Play`'s), built straight from its outcome arrays: a table's play
    can reach tens of millions of states, too many for per-outcome temporaries.
    The transition's indices are int32 where they fit, taken from the graph
    without an int64 copy."""
    n = graph.num_states
    if graph.num_cells != n or graph.row_actions.size != n or graph.col_actions.size != n:
        raise ValueError("a graph with one 1 x 1 stage game per state expected")
    live = graph.out_next >= 0
    moves = np.add.reduceat(live, graph.out_ptr[:-1]) if n else np.zeros(0, np.int64)
    indptr = np.zeros(n + 1, index_type(int(moves.sum()) + 1))
    np.cumsum(moves, out=indptr[1:])
    del moves
    indices = np.asarray(graph.out_next[live], index_type(max(n, 1)))
    import scipy.sparse as sp

    transition = sp.csr_matrix((graph.out_prob[live], indices, indptr), shape=(n, n))
    del live, indices, indptr
    return PlayChain(transition, _ending_of(graph))


def _ending_of(graph: GameGraph) -> np.ndarray:
    """Per state of a graph with one 1 x 1 stage game per state: the
    probability that play ends this turn, summed terminal by terminal in
    their order (as the sum of `play_chain`'s per-terminal columns)."""
    ending = np.zeros(graph.num_states)
    for t in range(graph.terminal_payoff.shape[0]):
        ends = np.flatnonzero(graph.out_next == -1 - t)
        np.add.at(ending, np.searchsorted(graph.out_ptr, ends, side="right") - 1, graph.out_prob[ends])
    return ending


def expected_visits(chain: PlayChain, start: int, max_turns: int = 200) -> np.ndarray:
    """Expected number of turns spent in each state over the first `max_turns` turns."""
    return sum(chain.masses(start, max_turns), np.zeros(chain.transition.shape[0]))


@dataclass(frozen=True, eq=False)
class TurnByTurn:
    """What one propagation of a chain's state probabilities turn by turn
    gives (`turn_by_turn`): the figures each of these would otherwise need a
    propagation of its own for."""

    visits: np.ndarray
    """Expected turns spent in each state over the turns followed (`expected_visits`)."""
    length_pmf: np.ndarray
    """[t - 1]: the probability that play ends at turn t, over all `max_turns` turns
    (`absorption.length_distribution`)."""
    alive: np.ndarray
    """[t - 1]: the probability that play is still going at the start of turn t, over the turns followed."""
    chosen: np.ndarray
    """[k, t - 1, label]: the probability that play is still going at turn t and
    the k-th of the `choices` picks `label` there, over the turns followed."""


def turn_by_turn(
    chain: PlayChain, start: int, max_turns: int = 200,
    choices: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...] = (), labels: int = 0,
    alive_below: float = 1e-12,
) -> TurnByTurn:
    """The state probabilities of `chain` from `start`, propagated once, turn
    by turn for `max_turns` turns, and every figure read from them on the way:
    the turns followed are those of `PlayChain.masses` (until less than
    `alive_below` is still playing), the length's distribution runs to
    `max_turns`. `choices`: per state, labelled weights (a seat's strategy:
    `(ptr, labels, weights)`, state i's at ptr[i]:ptr[i + 1]), each summed
    under the probability of being there, turn by turn."""
    n = chain.transition.shape[0]
    t = chain.transition
    # The chain's own index arrays (scipy keeps them int32 where that fits): no copy, half the bytes a turn reads.
    ptr, idx = np.ascontiguousarray(t.indptr), np.ascontiguousarray(t.indices)
    data = np.ascontiguousarray(t.data, np.float64)
    ending = np.ascontiguousarray(chain.ending, np.float64)
    # Each seat's arrays passed as they are: joined, their copy would be most of what a propagation adds.
    # One empty set stands in for none (the compiler types the tuples by their first).
    sets = choices or ((np.zeros(n + 1, np.int32), np.zeros(0, np.int16), np.zeros(0, np.float64)),)
    at_type = np.result_type(*(p for p, _labels, _weights in sets))
    choice_ptr = tuple(np.ascontiguousarray(p, at_type) for p, _labels, _weights in sets)
    choice_label = tuple(np.ascontiguousarray(c, np.int16) for _p, c, _weights in sets)
    choice_weight = tuple(np.ascontiguousarray(w, np.float64) for _p, _labels, w in sets)
    from .absorption import propagate_figures  # loads the compiler

    visits, pmf, alive, chosen = propagate_figures(ptr, idx, data, ending, int(start), int(max_turns), float(alive_below),
                                               len(choices), choice_ptr, choice_label, choice_weight, int(labels))
    return TurnByTurn(visits, pmf, alive, chosen)
