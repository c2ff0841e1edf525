"""States already solved, as the edge of a new solve.

Play from a position that a stored table does not hold (another start: a
handicap, another starting battery) soon reaches states that the table does
hold, and their figures there are final: values, both sides' guarantees,
outcome probabilities and ending turns. A solve given that table as its
boundary stops at such states, as it stops at a finished rank's exits, and
solves only what lies between its roots and the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .graph import _sorted_contains, distinct_sorted
from .result import SolveResult


@dataclass(frozen=True, eq=False)
class Boundary:
    """Solved states (sorted codes) and their figures, index for index."""

    states: np.ndarray
    p1_guarantee: np.ndarray
    p2_guarantee: np.ndarray
    middle: np.ndarray
    terminal: np.ndarray  # (states, terminal outcomes)
    unending: np.ndarray
    ending_turns: np.ndarray
    terminal_labels: tuple[str, ...]
    excluded: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Sorted codes never taken from the boundary: the roots of a solve are solved, not looked up."""

    @classmethod
    def of(cls, result: SolveResult) -> "Boundary":
        """The states of a solved table (memory-mapped or not) of the same game."""
        return cls(
            result.states, result.p1_guarantee, result.p2_guarantee, result.values, result.terminal_probability,
            result.unending_probability, result.ending_turns, tuple(result.terminal_labels),
        )

    def without(self, codes: np.ndarray) -> "Boundary":
        """This boundary, less `codes` (which are then solved, not looked up)."""
        return Boundary(
            self.states, self.p1_guarantee, self.p2_guarantee, self.middle, self.terminal, self.unending,
            self.ending_turns, self.terminal_labels, distinct_sorted(np.asarray(codes, np.int64)),
        )

    def holds(self, codes: np.ndarray) -> np.ndarray:
        """Whether each of `codes` is a solved state of the boundary."""
        codes = np.asarray(codes, np.int64)
        held = _sorted_contains(self.states, codes) if self.states.size else np.zeros(codes.size, np.bool_)
        if self.excluded.size:
            held &= ~_sorted_contains(self.excluded, codes)
        return held

    def index(self, codes: np.ndarray) -> np.ndarray:
        """Position of each of `codes` (each held) in `states`."""
        return np.searchsorted(self.states, np.asarray(codes, np.int64))
