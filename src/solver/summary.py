"""What a solved rule set comes to at the start: value, how games end, how long they last.

The outcome split and the length belong to the strategies the table holds
(other optimal strategies can split differently); the value does not.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from rules.charge_spark.game import ChargeSparkGame

from .core.graph import GameGraph, build_graph, distinct_sorted, expansion_of, graph_of
from .core.result import SolveResult
from .tables import SolvedTable

UNENDING = "unending"
LENGTH_TURNS = 200  # turns of the exact length distribution at the start


@dataclass(frozen=True, eq=False)
class StartSummary:
    """The start of one solved rule set under the equilibrium its table holds."""

    value: float  # to P1
    outcomes: dict[str, float]  # each terminal label -> probability, and UNENDING
    expected_length: float  # turns, given that the game ends (nan if it never does)
    length_pmf: np.ndarray  # length_pmf[t - 1] = P(the game ends at turn t); empty if not computed

    def wins(self, seat: str) -> float:
        """P(`seat` wins) over every way of winning, `seat` "P1" or "P2"."""
        return sum(p for label, p in self.outcomes.items() if label.startswith(f"{seat} wins"))

    @property
    def length_beyond(self) -> float:
        """P(the game lasts longer than the turns `length_pmf` covers), unending play included."""
        return length_beyond(self.length_pmf)


def length_beyond(length_pmf) -> float:
    """P(a game lasts longer than the turns of `length_pmf`), unending play included."""
    return max(0.0, 1.0 - float(np.sum(length_pmf)))


def transition_graph(table: SolvedTable) -> GameGraph:
    """The table's transitions: kept from the solve, else rebuilt from its states."""
    if table.result.graph is not None:
        return table.result.graph
    return build_graph(ChargeSparkGame(table.rules), table.result.states)


def played_graph(table: SolvedTable) -> tuple[GameGraph, np.ndarray, np.ndarray]:
    """The transitions among the states the table's strategies reach from the
    start, with those strategies: (graph, P1's strategy, P2's). Moves that the
    strategies never make and that leave these states end in an extra terminal
    outcome that nothing reaches. The whole table can be far larger than what
    optimal play visits (and its graph larger than memory)."""
    return played_graph_from(ChargeSparkGame(table.rules), table.result, table.start)


def played_graph_from(game, result: SolveResult, start: int) -> tuple[GameGraph, np.ndarray, np.ndarray]:
    """`played_graph` of the solved `result` of `game`, from the state coded `start`."""
    reached = played_states(game, result, start)
    expansion = expansion_of(game, reached)
    out_next = expansion["out_next"].astype(np.int64)
    live = np.flatnonzero(out_next >= 0)
    where = np.searchsorted(reached, out_next[live])
    inside = (where < reached.size) & (reached[np.minimum(where, reached.size - 1)] == out_next[live])
    out_next[live[inside]] = where[inside]
    unplayed = len(game.terminal_payoff)
    out_next[live[~inside]] = -1 - unplayed
    graph = graph_of(game, reached, expansion, out_next)
    graph = replace(
        graph, terminal_payoff=np.append(graph.terminal_payoff, game.unending_payoff),
        terminal_labels=graph.terminal_labels + ("never played",),
    )
    index = np.searchsorted(result.states, reached)
    return graph, _segments(result.row_ptr, result.row_strategy, index), _segments(result.col_ptr, result.col_strategy, index)


def played_states(game, result: SolveResult, start: int, chunk: int = 1 << 16) -> np.ndarray:
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


def _segments(ptr: np.ndarray, values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """values[ptr[i]:ptr[i+1]] for each i in `index`, joined."""
    counts = ptr[index + 1] - ptr[index]
    starts = np.repeat(ptr[index] - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    return values[starts + np.arange(counts.sum())]


def _played_outcomes(result, codes: np.ndarray, expansion: dict[str, np.ndarray]) -> np.ndarray:
    """Mask of the outcomes (in `expansion` of `codes`) that lead to a state
    through a pair of cards both strategies play."""
    return (_outcome_weights(result, codes, expansion) > 0) & (expansion["out_next"] >= 0)


def _outcome_weights(result, codes: np.ndarray, expansion: dict[str, np.ndarray]) -> np.ndarray:
    """The probability of each outcome (in `expansion` of `codes`) under the
    strategies of `result`: P1's weight on its card, times P2's on its card,
    times the outcome's own probability; 0 where either card is never played."""
    index = np.searchsorted(result.states, codes)
    row_w = _segments(result.row_ptr, result.row_strategy, index)
    col_w = _segments(result.col_ptr, result.col_strategy, index)
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


def play_from(game, result: SolveResult, start: int, chunk: int = 1 << 16) -> Play:
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


def summarise_start(table: SolvedTable, max_turns: int = LENGTH_TURNS) -> StartSummary:
    """Value, outcome probabilities and expected game length at the start, read
    from the table (the figures of its strategies), and the length's
    distribution over the first `max_turns` turns (exact: state probabilities
    propagated turn by turn under the table's strategies, over the states they
    reach). `max_turns=0` skips the distribution, and with it following play
    through the table: the figures alone are one lookup."""
    return summarise_from(ChargeSparkGame(table.rules), table.result, table.start, max_turns)


def summarise_from(
    game, result: SolveResult, start: int, max_turns: int = LENGTH_TURNS, play: Play | None = None,
) -> StartSummary:
    """`summarise_start` of the solved `result` of `game` at the state coded
    `start`; `play`: its `play_from` there, if already built."""
    i = result.index_of(start)
    outcomes = {label: float(result.terminal_probability[i, t]) for t, label in enumerate(result.terminal_labels)}
    outcomes[UNENDING] = float(result.unending_probability[i])
    pmf = np.zeros(0)
    if max_turns > 0:
        # Imported here: it loads the compiler, which following play over a small stored table does without.
        from .core.absorption import length_distribution

        play = play or play_from(game, result, start)
        ones = play.strategy
        pmf = length_distribution(play.graph, ones, ones, play.start, max_turns)
    return StartSummary(float(result.values[i]), outcomes, result.expected_length(i), pmf)
