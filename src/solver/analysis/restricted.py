"""Restricted play: the game in which P1 may not play one action, solved
through a wrapper that filters P1's actions (the rules engine is untouched).

Only its certified value at the start is wanted, so the solve assembles no
strategies and stores nothing (`solve_start_figures`, unhurried). A card that
P1's strategy in the rules' own table never plays where its play reaches
needs no solve at all: the restricted value is the rules' (`unplayed_values`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from rules.charge_spark.config import RuleSet, fingerprint
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position

from ..certificate import CertificateStatus, certificate_status
from ..core.graph import distinct_sorted, expansion_of, segment_positions
from ..core.play import reached_breadth_first, table_indices
from ..core.protocol import Expansion, StochasticGame
from ..core.result import SolveResult
from ..tables import WarmTable, further_resume_dir, resuming_in, warm_start, warn_on_stderr
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
    """Value at the start (to P1) when P1 may not play `card`: certified, as the rules' own."""
    error: str | None = None
    """Why the restricted game could not be solved (the value is then nan)."""
    seconds: float | None = None
    """What the solve took (None where an earlier version kept no time, or nothing was solved)."""
    warm_started: bool = False
    """Whether the solve started from the values of `RestrictedJob.warm_from` (same answer, sooner)."""
    states: int | None = None
    """States the restricted game's solve covered (None where an earlier version kept none, or nothing was solved)."""
    unplayed: bool = False
    """Not solved: P1's strategy in the rules' table never plays the card where its play reaches,
    so the value is the rules' (`unplayed_values`)."""
    max_exploitability: float | None = None
    """The solve's certificate over all its states (the rules' table's where `unplayed`); None where an
    earlier version kept none, or nothing was had."""

    @property
    def certificate(self) -> CertificateStatus:
        """Whether the value may be read as certified (not when the certificate is over its bound, or unknown)."""
        return certificate_status(self.max_exploitability)

    @classmethod
    def from_entry(cls, card: str, entry: dict) -> RestrictedValue:
        """What the results cache kept (the figures an earlier version kept beside them, such as a
        win chance of strategies no longer reported, left out)."""
        known = {f.name for f in fields(cls)} - {"card"}
        return cls(card, **{key: value for key, value in entry.items() if key in known})

    def entry(self) -> dict:
        """What the results cache keeps of a restricted game that was had (`from_entry` reads it back)."""
        return {"value": self.value, "seconds": self.seconds, "states": self.states, "unplayed": self.unplayed,
                "max_exploitability": self.max_exploitability}


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
    cache_dir: str | None = None
    """Where the solve keeps its finished ranks until it ends (`tables.further_resume_dir`),
    so that an interrupted report resumes them; None: nothing kept."""


def value_without(job: RestrictedJob) -> RestrictedValue:
    """Solve the game from the start with P1 barred from `job.card` (or say why it could not be)."""
    try:
        return _value_without(job)
    except Exception as error:  # noqa: BLE001 - shown in the report rather than losing every other card
        return RestrictedValue(job.card, float("nan"), f"{type(error).__name__}: {error}")


def _value_without(job: RestrictedJob) -> RestrictedValue:
    from ..core.solve import solve_start_figures

    started = time.perf_counter()
    game = ChargeSparkGame(job.rules)
    start = game.encode(initial_position(job.rules))
    restricted = WithoutRowAction(game, game.action_labels.index(job.card))
    # Barring a card only lowers P1's values: the rules' own are estimates from above.
    warm = warm_start(job.warm_from, restricted, warn_on_stderr)
    # Unhurried: only the value is wanted, and it is the same under any optimal strategies.
    kept = further_resume_dir(job.cache_dir, fingerprint(job.rules), f"without-{job.card}") if job.cache_dir else None
    with resuming_in(kept) as resume:
        figures = solve_start_figures(
            restricted, [start], hurried=False, show_progress=job.show_progress, workers=job.workers,
            max_states=job.max_states, warm=warm, resume_dir=resume,
        )
    return RestrictedValue(job.card, float(figures.values[0]), seconds=time.perf_counter() - started,
                           warm_started=warm is not None, states=int(figures.num_states),
                           max_exploitability=figures.max_exploitability)


def unplayed_values(
    game: StochasticGame, result: SolveResult, start: int, cards: Sequence[str],
) -> list[RestrictedValue]:
    """The restricted values of the cards of `cards` that P1's strategy in the
    solved `result` (the rules' own table) never plays anywhere its play can
    reach from the state coded `start`: each is the rules' value there, with no
    solve (the caller knows the table's certificate: it is theirs too).

    Why: that strategy never plays the card, so it is a strategy of the
    restricted game too, and against every P2 strategy it plays out exactly as
    in the rules' game: it guarantees P1 what it guarantees there (the value,
    to the table's certificate). Barring a card only takes options from P1, so
    the restricted value is no higher than the rules'. `WithoutRowAction`
    leaves the card allowed where it is P1's only card, which changes neither
    half: P1's options there are still those of the rules' game, and the
    strategy, which must play a state's only card, reaches no such state."""
    ids = {game.action_labels.index(card): card for card in cards}
    played = cards_p1_plays(game, result, start, stop_when=list(ids))
    i = result.index_of(start)
    return [RestrictedValue(card, float(result.values[i]), unplayed=True) for a, card in ids.items() if not played[a]]


def cards_p1_plays(
    game: StochasticGame, result: SolveResult, start: int, stop_when: Sequence[int] = (), chunk: int = 1 << 16,
) -> np.ndarray:
    """Per action id, whether P1's strategy in `result` plays it (with positive
    weight) at some state its play reaches from the state coded `start`: P1's
    cards of positive weight, every card of P2's, every chance outcome.

    Breadth first, frontier by frontier, the table read only at the states
    reached (it may be memory-mapped and far larger than memory); stops as
    soon as every action of `stop_when` is found played (the rest are then
    not all known)."""
    played = np.zeros(len(game.action_labels), bool)
    watched = np.asarray(stop_when, np.int64)
    reached_breadth_first(
        result.num_states, result.index_of(start),
        lambda index: table_indices(result, _p1_successors(game, result, index, played), "P1's play"),
        chunk, done=lambda: bool(watched.size and played[watched].all()),
    )
    return played


def _p1_successors(game: StochasticGame, result: SolveResult, index: np.ndarray, played: np.ndarray) -> np.ndarray:
    """Codes of the states one turn leads to from the table's states at `index`
    through a card P1's strategy plays there (any card of P2's, any chance
    outcome), distinct and sorted; marks those cards in `played`."""
    codes = np.asarray(result.states[index])
    e = expansion_of(game, codes)
    at = segment_positions(result.row_ptr, index)
    if not np.array_equal(np.asarray(result.row_actions[at]), e["row_actions"]):
        raise ValueError("the table's actions differ from the game's: a table of other rules?")
    row_played = np.asarray(result.row_strategy[at]) > 0
    played[e["row_actions"][row_played]] = True
    # Cells are row-major: each row of a state has that state's col_count cells.
    cell_played = np.repeat(row_played, np.repeat(e["col_count"], e["row_count"]))
    nxt = e["out_next"][np.repeat(cell_played, e["out_count"])]
    return distinct_sorted(nxt[nxt >= 0])
