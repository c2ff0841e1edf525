"""What a solved rule set comes to at the start: value, how games end, how long they last.

The outcome split and the length belong to the strategies the table holds
(other optimal strategies can split differently); the value does not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rules.charge_spark.game import ChargeSparkGame

from .core.outcome import Outcome, Seat, kind_probability, win_probability
from .core.play import Play, play_from
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
    terminal_outcomes: tuple[Outcome, ...]  # who wins each labelled outcome, and how

    def wins(self, seat: Seat) -> float:
        """P(`seat` wins) over every way of winning."""
        return win_probability(self.outcomes, self.terminal_outcomes, seat)

    def by(self, kind: str) -> float:
        """P(either player wins by `kind`: "knock-out" or "moon")."""
        return kind_probability(self.outcomes, self.terminal_outcomes, kind)

    @property
    def length_beyond(self) -> float:
        """P(the game lasts longer than the turns `length_pmf` covers), unending play included."""
        return length_beyond(self.length_pmf)


def length_beyond(length_pmf) -> float:
    """P(a game lasts longer than the turns of `length_pmf`), unending play included."""
    return max(0.0, 1.0 - float(np.sum(length_pmf)))


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
    length_pmf: np.ndarray | None = None,
) -> StartSummary:
    """`summarise_start` of the solved `result` of `game` at the state coded
    `start`; `play`: its `play_from` there, if already built; `length_pmf`:
    the length's distribution over `max_turns` turns, if already propagated
    (`core.chain.turn_by_turn`)."""
    i = result.index_of(start)
    outcomes = {label: float(result.terminal_probability[i, t]) for t, label in enumerate(result.terminal_labels)}
    outcomes[UNENDING] = float(result.unending_probability[i])
    pmf = np.zeros(0)
    if length_pmf is not None:
        pmf = np.asarray(length_pmf[:max_turns], np.float64)
    elif max_turns > 0:
        # Imported here: it loads the compiler, which following play over a small stored table does without.
        from .core.absorption import length_distribution

        play = play or play_from(game, result, start)
        ones = play.strategy
        pmf = length_distribution(play.graph, ones, ones, play.start, max_turns)
    return StartSummary(float(result.values[i]), outcomes, result.expected_length(i), pmf, result.terminal_outcomes)
