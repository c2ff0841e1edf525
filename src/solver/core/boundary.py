"""States already solved, as the edge of a new solve.

Play from a position that a stored table does not hold (another start: a
handicap, another starting battery) soon reaches states that the table does
hold, and their figures there are final: values, both sides' guarantees,
outcome probabilities and ending turns. A solve given that table as its
boundary stops at such states, as it stops at a finished rank's exits, and
solves only what lies between its roots and the table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from .graph import distinct_sorted, sorted_contains
from .result import SolveResult
from .table_file import header_outcomes
from .table_reader import TableReader


@dataclass(frozen=True, eq=False)
class Boundary:
    """Solved states (sorted codes), and a way to read their figures."""

    states: np.ndarray
    figures: Callable[[str, np.ndarray], np.ndarray]
    """`figures(name, index)`: the `SolveResult` field `name` (values, a guarantee, outcome
    probabilities, ending turns) of the states at `index`."""
    terminal_labels: tuple[str, ...]
    excluded: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Sorted codes never taken from the boundary: the roots of a solve are solved, not looked up."""

    @classmethod
    def of(cls, result: SolveResult) -> Boundary:
        """The states of a solved table (in memory, or memory-mapped) of the same game."""
        return cls(np.asarray(result.states), lambda name, index: np.asarray(getattr(result, name))[index],
                   tuple(result.terminal_labels))

    @classmethod
    def of_stored(cls, reader: TableReader) -> Boundary:
        """The states of a stored table, read as needed: its codes in memory (8
        bytes a state, verified now), of the figures only the blocks that hold
        the states a solve reaches (each verified when first read)."""
        states = reader.take("states", 0, reader.num_states)
        return cls(states, reader.rows, tuple(o.label for o in header_outcomes(reader.header)))

    def without(self, codes: np.ndarray) -> Boundary:
        """This boundary, less `codes` (which are then solved, not looked up)."""
        return replace(self, excluded=distinct_sorted(np.asarray(codes, np.int64)))

    def holds(self, codes: np.ndarray) -> np.ndarray:
        """Whether each of `codes` is a solved state of the boundary."""
        codes = np.asarray(codes, np.int64)
        held = sorted_contains(self.states, codes) if self.states.size else np.zeros(codes.size, np.bool_)
        if self.excluded.size:
            held &= ~sorted_contains(self.excluded, codes)
        return held

    def index(self, codes: np.ndarray) -> np.ndarray:
        """Position of each of `codes` (each held) in `states`."""
        return np.searchsorted(self.states, np.asarray(codes, np.int64))

    def estimates(self, codes: np.ndarray) -> np.ndarray:
        """The values of `codes` where the boundary holds them, nan elsewhere: the
        first estimates of a warm start (`layered.WarmStart`), which reads only
        the blocks of the table that hold those states."""
        codes = np.asarray(codes, np.int64)
        out = np.full(codes.size, np.nan)
        held = self.holds(codes)
        if held.any():
            out[held] = self.figures("values", self.index(codes[held]))
        return out
