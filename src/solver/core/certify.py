"""Certificates: what a pair of stationary strategies provably guarantees.

Each side's guarantee is the exact value of the other side's best response
to its strategy (`best_response`); the claimed values are checked against
both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .best_response import best_response_values
from .graph import GameGraph


@dataclass(frozen=True, eq=False)
class Certificate:
    """What a strategy pair provably guarantees, per state (P1's payoff).

    `p1_guarantee <= true value <= p2_guarantee`, so `gap` >= 0 up to rounding
    and bounds how far either strategy can be from optimal.
    """

    p1_guarantee: np.ndarray  # P1's strategy against P2's best response
    p2_guarantee: np.ndarray  # P2's strategy against P1's best response
    exploitability: np.ndarray  # max(values - p1_guarantee, p2_guarantee - values), >= 0
    max_exploitability: float
    gap: np.ndarray  # p2_guarantee - p1_guarantee

    @property
    def min_gap(self) -> float:
        return float(self.gap.min()) if self.gap.size else 0.0

    @property
    def max_gap(self) -> float:
        return float(self.gap.max()) if self.gap.size else 0.0


def certify(graph: GameGraph, values: np.ndarray, row_strategy: np.ndarray, col_strategy: np.ndarray) -> Certificate:
    """Exact guarantees of both strategies and the exploitability of the claimed `values`."""
    values = np.asarray(values, np.float64)
    p1 = best_response_values(graph, 0, row_strategy)
    p2 = best_response_values(graph, 1, col_strategy)
    expl = np.maximum(np.maximum(values - p1, p2 - values), 0.0)
    return Certificate(
        p1_guarantee=p1,
        p2_guarantee=p2,
        exploitability=expl,
        max_exploitability=float(expl.max()) if expl.size else 0.0,
        gap=p2 - p1,
    )

