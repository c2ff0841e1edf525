"""Restricted play: the game in which P1 may not play one action, solved
through a wrapper that filters P1's actions (the rules engine is untouched)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from rules.charge_spark.config import RuleSet
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position

from ..core.outcome import Seat
from ..core.protocol import Expansion, StochasticGame
from ..tables import WarmTable, warm_start, warn_on_stderr
from .wrapped import WrappedGame


class WithoutRowAction(WrappedGame):
    """`game` with P1's action `banned` removed wherever P1 has another
    legal action; where it is P1's only legal action it stays allowed (a
    player must play a card)."""

    def __init__(self, game: StochasticGame, banned: int) -> None:
        super().__init__(game)
        self.banned = int(banned)

    def expand(self, codes: np.ndarray):
        e = self.game.expand(codes)
        row_count = np.asarray(e.row_count, np.int64)
        col_count = np.asarray(e.col_count, np.int64)
        row_actions = np.asarray(e.row_actions)
        row_state = np.repeat(np.arange(row_count.size), row_count)
        banned = row_actions == self.banned
        only_choice = row_count[row_state] == 1
        keep_row = ~banned | only_choice
        # Cells are row-major: each row's cells are col_count of its state.
        keep_cell = np.repeat(keep_row, col_count[row_state])
        out_count = np.asarray(e.out_count, np.int64)
        keep_out = np.repeat(keep_cell, out_count)
        return Expansion(
            row_count=np.bincount(row_state[keep_row], minlength=row_count.size).astype(np.int64),
            row_actions=row_actions[keep_row],
            col_count=col_count,
            col_actions=np.asarray(e.col_actions),
            out_count=out_count[keep_cell],
            out_next=np.asarray(e.out_next)[keep_out],
            out_prob=np.asarray(e.out_prob)[keep_out],
        )

    def swap(self, codes: np.ndarray) -> None:
        """None: with one side restricted the game is no longer symmetric between seats."""
        return None


@dataclass(frozen=True)
class RestrictedValue:
    card: str
    value: float
    """Value at the start (to P1) when P1 may not play `card`."""
    p1_win: float
    """P(P1 wins) under the restricted game's reported strategies."""
    error: str | None = None
    """Why the restricted game could not be solved (the numbers are then nan)."""
    seconds: float | None = None
    """What the solve took (None where an earlier version kept no time)."""
    warm_started: bool = False
    """Whether the solve started from the values of `RestrictedJob.warm_from` (same answer, sooner)."""
    states: int | None = None
    """States the restricted game's solve covered (None where an earlier version kept none)."""


@dataclass(frozen=True)
class RestrictedJob:
    rules: RuleSet
    card: str
    workers: int = 1
    """Processes the solve may use (rank by rank)."""
    show_progress: bool = False
    max_states: int | None = None
    """Refuse to enumerate more (None: what the solver's own memory check allows)."""
    warm_from: WarmTable | None = None
    """A stored table (the rules' own: `tables.warm_table_of`) whose values start the
    solve, used when it shares the state encoding; else the solve starts cold."""


def value_without(job: RestrictedJob) -> RestrictedValue:
    """Solve the game from the start with P1 barred from `job.card` (or say why it could not be)."""
    try:
        return _value_without(job)
    except Exception as error:  # noqa: BLE001 - shown in the report rather than losing every other card
        return RestrictedValue(job.card, float("nan"), float("nan"), f"{type(error).__name__}: {error}")


def _value_without(job: RestrictedJob) -> RestrictedValue:
    from ..core.solve import solve_from

    started = time.perf_counter()
    game = ChargeSparkGame(job.rules)
    start = game.encode(initial_position(job.rules))
    restricted = WithoutRowAction(game, game.action_labels.index(job.card))
    # Barring a card only lowers P1's values: the rules' own are estimates from above.
    warm = warm_start(job.warm_from, restricted, warn_on_stderr)
    result = solve_from(
        restricted, [start], show_progress=job.show_progress, workers=job.workers, max_states=job.max_states,
        warm=warm,
    )
    i = result.index_of(start)
    return RestrictedValue(job.card, float(result.values[i]), result.win_probability(i, Seat.P1),
                           seconds=time.perf_counter() - started, warm_started=warm is not None,
                           states=int(result.num_states))
