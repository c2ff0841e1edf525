"""What a game must offer the solver.

The solver knows two-player zero-sum stochastic games with simultaneous moves
and chance, and nothing of any particular game. A game hands over batches of
integer-encoded states and gets back, per state, both players' legal actions
and, per action pair, the chance outcomes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True, eq=False)
class Expansion:
    """The stage games of a batch of states, flattened (see `graph.GameGraph`).

    State i of the batch has `row_count[i]` actions for P1 and `col_count[i]`
    for P2 (concatenated in `row_actions` / `col_actions`), and
    `row_count[i] * col_count[i]` cells in row-major order. Cell k has
    `out_count[k]` outcomes: `out_next` holds the next state's code, or
    `-1 - t` for terminal outcome t; `out_prob` their probabilities.
    """

    row_count: np.ndarray
    row_actions: np.ndarray
    col_count: np.ndarray
    col_actions: np.ndarray
    out_count: np.ndarray
    out_next: np.ndarray
    out_prob: np.ndarray


class StochasticGame(Protocol):
    """A two-player zero-sum stochastic game with simultaneous moves and chance."""

    action_labels: tuple[str, ...]
    """Name of each action id."""
    terminal_labels: tuple[str, ...]
    """Name of each terminal outcome (display text: nothing reads a winner from it)."""
    terminal_winners: tuple[int | None, ...]
    """Seat winning each terminal outcome (0: P1, 1: P2, see `outcome.Seat`), None if nobody does."""
    terminal_kinds: tuple[str, ...]
    """How each terminal outcome ends (the game's own words, e.g. "knock-out")."""
    terminal_payoff: np.ndarray
    """Payoff to P1 of each terminal outcome."""
    unending_payoff: float
    """Payoff to P1 when play never ends."""

    def expand(self, codes: np.ndarray) -> Expansion:
        """Legal actions and transitions of each state in `codes` (int64)."""
        ...

    def swap(self, codes: np.ndarray) -> np.ndarray | None:
        """The seat-swapped codes if the game is symmetric between seats, else None."""
        ...

    # Optional, for following play (`solver.core.play.follow_play`):
    #   expand_cells(codes, cells) -> Expansion: `expand` with only the cells
    #       flagged in `cells` (a bool per cell, row-major per state) resolved,
    #       the others without outcomes.
    # Optional, for a game solved rank by rank (`solver.core.layered`):
    #   progress_rank(codes) -> int64 array: a number no transition lowers.
    # and, with them, for a symmetric game to be solved folded by seat:
    #   seat_order(codes) -> int8 array: -1, 0 or 1 comparing P1's progress
    #       with P2's; unchanged by a transition within a rank, negated by `swap`.
    #   terminal_swap: each terminal outcome's index seen from the other seat.
