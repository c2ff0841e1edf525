"""What a solved rule set comes to at the start: value, how games end, how long they last.

The outcome split and the length belong to the strategies the table holds
(other optimal strategies can split differently); the value does not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rules.charge_spark.game import ChargeSparkGame

from .certify import expected_length_and_distribution
from .graph import GameGraph, build_graph
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


def summarise_start(table: SolvedTable, max_turns: int = 200) -> StartSummary:
    """Value, outcome probabilities and game length (exact: state probabilities
    propagated turn by turn under the table's strategies) at the start."""
    result = table.result
    i = result.index_of(table.start)
    outcomes = {label: float(result.terminal_probability[i, t]) for t, label in enumerate(result.terminal_labels)}
    outcomes[UNENDING] = float(result.unending_probability[i])
    expected, pmf = expected_length_and_distribution(
        transition_graph(table), result.row_strategy, result.col_strategy, i, max_turns
    )
    return StartSummary(float(result.values[i]), outcomes, expected, pmf)
