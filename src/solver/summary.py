"""What a solved rule set comes to at the start: value, how games end, how long they last.

The outcome split and the length belong to the strategies the table holds
(other optimal strategies can split differently); the value does not.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from rules.charge_spark.game import ChargeSparkGame

from .certify import expected_length_and_distribution
from .graph import GameGraph, build_graph, expansion_of, graph_of
from .tables import SolvedTable

UNENDING = "unending"


@dataclass(frozen=True, eq=False)
class StartSummary:
    """The start of one solved rule set under the equilibrium its table holds."""

    value: float  # to P1
    outcomes: dict[str, float]  # each terminal label -> probability, and UNENDING
    expected_length: float  # turns, given that the game ends (nan if it never does)
    length_pmf: np.ndarray  # length_pmf[t - 1] = P(the game ends at turn t)

    def wins(self, seat: str) -> float:
        """P(`seat` wins) over every way of winning, `seat` "P1" or "P2"."""
        return sum(p for label, p in self.outcomes.items() if label.startswith(f"{seat} wins"))

    @property
    def length_beyond(self) -> float:
        """P(the game lasts longer than the turns `length_pmf` covers), unending play included."""
        return max(0.0, 1.0 - float(self.length_pmf.sum()))


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
    result = table.result
    game = ChargeSparkGame(table.rules)
    reached = np.array([table.start], np.int64)
    frontier = reached
    while frontier.size:
        expansion = expansion_of(game, frontier)
        live = _played_outcomes(result, frontier, expansion)
        nxt = np.unique(expansion["out_next"][live])
        frontier = nxt[~np.isin(nxt, reached)]
        reached = np.union1d(reached, frontier)
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


def _segments(ptr: np.ndarray, values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """values[ptr[i]:ptr[i+1]] for each i in `index`, joined."""
    counts = ptr[index + 1] - ptr[index]
    starts = np.repeat(ptr[index] - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    return values[starts + np.arange(counts.sum())]


def _played_outcomes(result, codes: np.ndarray, expansion: dict[str, np.ndarray]) -> np.ndarray:
    """Mask of the outcomes (in `expansion` of `codes`) that lead to a state
    through a pair of cards both strategies play."""
    index = np.searchsorted(result.states, codes)
    row_w = _segments(result.row_ptr, result.row_strategy, index)
    col_w = _segments(result.col_ptr, result.col_strategy, index)
    m, n = expansion["row_count"], expansion["col_count"]
    row_start = np.concatenate([[0], np.cumsum(m)[:-1]])
    col_start = np.concatenate([[0], np.cumsum(n)[:-1]])
    state = np.repeat(np.arange(codes.size), m * n)
    within = np.arange(state.size) - np.repeat(np.concatenate([[0], np.cumsum(m * n)[:-1]]), m * n)
    r, c = within // n[state], within % n[state]
    played = (row_w[row_start[state] + r] > 0) & (col_w[col_start[state] + c] > 0)
    return np.repeat(played, expansion["out_count"]) & (expansion["out_next"] >= 0) & (expansion["out_prob"] > 0)


def summarise_start(table: SolvedTable, max_turns: int = 200) -> StartSummary:
    """Value, outcome probabilities and game length (exact: state probabilities
    propagated turn by turn under the table's strategies, over the states they
    reach) at the start."""
    result = table.result
    i = result.index_of(table.start)
    outcomes = {label: float(result.terminal_probability[i, t]) for t, label in enumerate(result.terminal_labels)}
    outcomes[UNENDING] = float(result.unending_probability[i])
    graph, row, col = played_graph(table)
    start = int(np.searchsorted(graph.states, table.start))
    expected, pmf = expected_length_and_distribution(graph, row, col, start, max_turns)
    return StartSummary(float(result.values[i]), outcomes, expected, pmf)
