"""Play under a solved game's strategies from one start, followed over the
states it reaches and kept as a Markov chain (`Play`): the start's length
distribution, the chain's visits and the stalls are read from it. A table
can be far larger than what optimal play visits, and its graph larger than
memory, so play is followed chunk by chunk of the reached states."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .graph import GameGraph, distinct_sorted, expansion_of, segment_positions
from .protocol import StochasticGame
from .result import SolveResult


def played_states(game: StochasticGame, result: SolveResult, start: int, chunk: int = 1 << 16) -> np.ndarray:
    """Sorted codes of the states `result`'s strategies reach from the state
    coded `start`: breadth first, marking reached states by their index in the
    table (a sorted list of the reached ones would be re-sorted every turn),
    expanding the frontier in chunks."""
    reached = np.zeros(result.num_states, bool)
    frontier = np.array([result.index_of(start)], np.int64)
    reached[frontier] = True
    while frontier.size:
        found = []
        for lo in range(0, frontier.size, chunk):
            codes = np.asarray(result.states[frontier[lo : lo + chunk]])
            expansion = expansion_of(game, codes)
            nxt = distinct_sorted(expansion["out_next"][_played_outcomes(result, codes, expansion)])
            at = np.searchsorted(result.states, nxt)
            if at.size and (at.max() >= result.num_states or np.any(result.states[at] != nxt)):
                raise KeyError("a state optimal play reaches is missing from the table")
            found.append(at[~reached[at]])
        frontier = distinct_sorted(np.concatenate(found))
        reached[frontier] = True
    return np.asarray(result.states[np.flatnonzero(reached)])


def _played_outcomes(result, codes: np.ndarray, expansion: dict[str, np.ndarray]) -> np.ndarray:
    """Mask of the outcomes (in `expansion` of `codes`) that lead to a state
    through a pair of cards both strategies play."""
    return (_outcome_weights(result, codes, expansion) > 0) & (expansion["out_next"] >= 0)


def _outcome_weights(result, codes: np.ndarray, expansion: dict[str, np.ndarray]) -> np.ndarray:
    """The probability of each outcome (in `expansion` of `codes`) under the
    strategies of `result`: P1's weight on its card, times P2's on its card,
    times the outcome's own probability; 0 where either card is never played."""
    index = np.searchsorted(result.states, codes)
    row_w = result.row_strategy[segment_positions(result.row_ptr, index)]
    col_w = result.col_strategy[segment_positions(result.col_ptr, index)]
    m, n = expansion["row_count"], expansion["col_count"]
    row_start = np.concatenate([[0], np.cumsum(m)[:-1]])
    col_start = np.concatenate([[0], np.cumsum(n)[:-1]])
    state = np.repeat(np.arange(codes.size), m * n)
    within = np.arange(state.size) - np.repeat(np.concatenate([[0], np.cumsum(m * n)[:-1]]), m * n)
    r, c = within // n[state], within % n[state]
    wr, wc = row_w[row_start[state] + r], col_w[col_start[state] + c]
    cell = np.where((wr > 0) & (wc > 0), wr * wc, 0.0)
    prob = np.asarray(expansion["out_prob"], np.float64)
    return np.where(prob > 0, np.repeat(cell, expansion["out_count"]) * prob, 0.0)


@dataclass(frozen=True, eq=False)
class Play:
    """Play under a solved table's strategies from one start, as a Markov
    chain over the states it reaches: `graph` gives each state one 1 x 1
    stage game whose outcomes are where a turn leads (a state's index in
    `states`, or a terminal outcome) with their probabilities. Far smaller
    than those states' game graph (every pair of cards, every outcome)."""

    states: np.ndarray  # codes, sorted
    index: np.ndarray  # each state's index in the table
    graph: GameGraph
    start: int  # index of the start in `states`

    @property
    def strategy(self) -> np.ndarray:
        """The one action's weight at every state (for either seat)."""
        return np.ones(self.states.size)


def play_from(game: StochasticGame, result: SolveResult, start: int, chunk: int = 1 << 16) -> Play:
    """`Play` of the solved `result` of `game` from the state coded `start`,
    built chunk by chunk of the states it reaches."""
    states = played_states(game, result, start)
    terminals = len(game.terminal_payoff)
    counts, targets, probs = [], [], []
    for lo in range(0, states.size, chunk):
        codes = states[lo : lo + chunk]
        expansion = expansion_of(game, codes)
        weight = _outcome_weights(result, codes, expansion)
        nxt = np.asarray(expansion["out_next"], np.int64)
        source = np.repeat(np.repeat(np.arange(codes.size), expansion["row_count"] * expansion["col_count"]),
                           expansion["out_count"])
        keep = weight > 0
        source, nxt, weight = source[keep], nxt[keep], weight[keep]
        live = nxt >= 0
        nxt[live] = np.searchsorted(states, nxt[live])
        # One entry per (state, where it leads): terminals sort first (-1 - t < 0).
        key = source * (states.size + terminals) + (nxt + terminals)
        merged, slot = np.unique(key, return_inverse=True)
        counts.append(np.bincount(merged // (states.size + terminals), minlength=codes.size))
        targets.append(merged % (states.size + terminals) - terminals)
        probs.append(np.bincount(slot, weights=weight, minlength=merged.size))
    single = np.arange(states.size + 1, dtype=np.int64)
    out_ptr = np.zeros(states.size + 1, np.int64)
    np.cumsum(np.concatenate(counts), out=out_ptr[1:])
    graph = GameGraph(
        states=states, row_ptr=single, row_actions=np.zeros(states.size, np.int16), col_ptr=single,
        col_actions=np.zeros(states.size, np.int16), cell_ptr=single, out_ptr=out_ptr,
        out_next=np.concatenate(targets), out_prob=np.concatenate(probs),
        terminal_payoff=np.asarray(game.terminal_payoff, np.float64), terminal_labels=tuple(game.terminal_labels),
        unending_payoff=float(game.unending_payoff), action_labels=tuple(game.action_labels),
    )
    return Play(states, np.searchsorted(result.states, states), graph, int(np.searchsorted(states, start)))
