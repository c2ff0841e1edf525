"""Sensitivity: the start of the game under small changes of the rules.

The variants are built from the rules in force (the report's baseline): each
printed cost and damage one up and one down, the other start-battery reading,
the board one space shorter and longer, the other Recovery reading, and a
handicap (P1 starts one Health down), which is a start position, not a rule
set. A variant the rules refuse is listed with the reason.

A variant needs its start's value, how its games end and how long they last,
under hurried play: it is solved for those figures alone (`solve_start_figures`),
no strategies assembled and no table stored. The one variant whose length
distribution the report reads is solved whole, held in memory, not stored."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rules.charge_spark.cards import Card
from rules.charge_spark.config import RulesError, RuleSet, apply_overrides, fingerprint
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.notation import parse_position
from rules.charge_spark.size import estimate_reachable
from rules.charge_spark.state import initial_position

from ..certificate import CertificateStatus, certificate_status, largest_exploitability
from ..core.boundary import Boundary
from ..core.graph import GraphTooLargeError
from ..core.outcome import Outcome, Seat, kind_probability, win_probability
from ..core.resources import layered_bytes_per_state
from ..core.table_file import table_path
from ..storage import default_cache_dir
from ..summary import UNENDING, StartSummary, length_beyond, summarise_from
from ..tables import (
    WarmTable,
    cached_table,
    further_resume_dir,
    resuming_in,
    solve_to_boundary,
    warm_start,
    warn_on_stderr,
)
from .usage import CardUsage

if TYPE_CHECKING:
    from ..core.solve import StartFigures  # not imported at run time: it loads the compiled kernels

START_BATTERY_READINGS = (0, 2)  # the French page and the English rulebook
START_KEYS = ("start_battery", "start_disc")  # keys that change only the start position, not the game
RECOVERY_READINGS = ("battery+disc", "battery")
TILE_KINDS = ("battery", "disc")


@dataclass(frozen=True)
class Variant:
    label: str
    """What changes, for a reader: "lightning costs 3 battery (2)"."""
    setting: str
    """How to ask for it: `--set KEY=VALUE`, or the start position."""
    rules: RuleSet
    start: str | None = None
    """Position notation of the start, when the variant is a start position rather than a rule set."""
    key: str = ""
    """The rules key changed ("" for a start position)."""
    step: int = 0
    """+1 or -1 for a number moved up or down, else 0."""
    same_game_as: RuleSet | None = None
    """Rules of the same game with another start (a start position, a start
    battery): their stored table is the edge of this variant's solve."""


@dataclass(frozen=True)
class Skipped:
    label: str
    reason: str


@dataclass(frozen=True)
class VariantPlay:
    """Which cards a variant's optimal play uses, over whole games from its start (`usage.CardUsage`, kept small)."""

    cards: tuple[str, ...]
    """Every card legal somewhere in the variant, in action order."""
    p1_share: tuple[float, ...]
    """P1's share of its plays going to each card of `cards`."""
    p2_share: tuple[float, ...]
    dead: tuple[str, ...]
    """The cards in no optimal strategy anywhere (`CardStatus.DEAD`)."""

    @classmethod
    def of(cls, usage: CardUsage) -> VariantPlay:
        return cls(tuple(usage.cards), tuple(float(x) for x in usage.overall[0]),
                   tuple(float(x) for x in usage.overall[1]), tuple(usage.dead))

    def share(self, card: str) -> float:
        """P1's share of its plays going to `card` (0 where it is never legal)."""
        return dict(zip(self.cards, self.p1_share)).get(card, 0.0)

    def entry(self) -> dict:
        return {"cards": list(self.cards), "p1_share": list(self.p1_share), "p2_share": list(self.p2_share),
                "dead": list(self.dead)}

    @classmethod
    def from_entry(cls, entry: dict | None) -> VariantPlay | None:
        if entry is None:
            return None
        return cls(tuple(entry["cards"]), tuple(entry["p1_share"]), tuple(entry["p2_share"]), tuple(entry["dead"]))


def play_of(game: ChargeSparkGame, result, start: int, max_turns: int = 200) -> tuple[VariantPlay, np.ndarray]:
    """How optimal play from state `start` of the solved `result` uses each card, and the length's
    distribution over `max_turns` turns: play followed once and propagated once, as the report does for the rules."""
    from ..core.chain import turn_by_turn
    from ..core.play import follow_play
    from .usage import choices_to_follow, usage_from_play

    followed = follow_play(game, result, start)
    turns = turn_by_turn(followed.chain, followed.play.start, max_turns, choices_to_follow(followed),
                         len(game.action_labels))
    return VariantPlay.of(usage_from_play(game, result, followed, turns)), np.asarray(turns.length_pmf[:max_turns])


@dataclass(frozen=True)
class VariantSummary:
    """What a variant comes to at its start (the numbers a sweep row holds)."""

    value: float
    outcomes: dict[str, float]  # each terminal label -> probability, and unending play
    terminal_outcomes: tuple[Outcome, ...]  # who wins each labelled outcome, and how
    expected_length: float
    seconds: float
    reused: bool
    length_pmf: tuple[float, ...] = field(default=(), repr=False)
    warm_started: bool = False  # solved from the values of `VariantJob.warm_from` (same answer, sooner)
    states: int | None = None  # the variant table's states (None for another start, or kept by an earlier version)
    max_exploitability: float | None = None  # the solve's certificate, over all its states (None: not kept)
    play: VariantPlay | None = None
    """How the variant is played from its start (None: not known, as for a part kept by an earlier version,
    or a variant solved only up to another table's edge)."""

    @classmethod
    def of(cls, summary: StartSummary, seconds: float, reused: bool, warm_started: bool = False,
           states: int | None = None, max_exploitability: float | None = None,
           play: VariantPlay | None = None) -> VariantSummary:
        return cls(summary.value, dict(summary.outcomes), summary.terminal_outcomes, summary.expected_length, seconds,
                   reused, tuple(float(p) for p in summary.length_pmf), warm_started, states, max_exploitability,
                   play)

    @property
    def certificate(self) -> CertificateStatus:
        """Whether the figures may be read as certified (not when the certificate is over its bound, or unknown)."""
        return certificate_status(self.max_exploitability)

    @property
    def length_beyond(self) -> float:
        """P(the game lasts longer than the turns `length_pmf` covers), unending play included."""
        return length_beyond(self.length_pmf)

    def wins(self, seat: Seat) -> float:
        """P(`seat` wins) over every way of winning."""
        return win_probability(self.outcomes, self.terminal_outcomes, seat)

    def by(self, kind: str) -> float:
        """P(either player wins by `kind`: "knock-out" or "moon")."""
        return kind_probability(self.outcomes, self.terminal_outcomes, kind)


def sensitivity_variants(rules: RuleSet) -> tuple[list[Variant], list[Skipped]]:
    """The variants of `rules` the report compares (see the module docstring)."""
    candidates: list[tuple[str, str, str | None, int]] = []  # label, KEY=VALUE or start position, key, step
    playable = [card for card in Card if not card.is_bonus or card in rules.bonus_cards]
    for card in playable:
        for kind, amount in zip(TILE_KINDS, rules.cost(card)):
            if amount == 0:
                continue
            for new in (amount - 1, amount + 1):
                key = f"cost.{card.label}.{kind}"
                candidates.append((f"{card.label} costs {new} {kind} ({amount})", f"{key}={new}", key, new - amount))
    for card in playable:
        if card.is_attack:
            amount = rules.damage_of(card)
            for new in (amount - 1, amount + 1):
                key = f"damage.{card.label}"
                candidates.append((f"{card.label} deals {new} ({amount})", f"{key}={new}", key, new - amount))
    for new in START_BATTERY_READINGS:
        if new != rules.start_battery:
            candidates.append((f"start battery {new} ({rules.start_battery})", f"start_battery={new}", "start_battery",
                               1 if new > rules.start_battery else -1))
    for board, step in ((shorter_board(rules.board), -1), (longer_board(rules.board), 1)):
        if board is not None:
            candidates.append((f"board {board} ({rules.board})", f"board={board}", "board", step))
    if Card.RECOVERY in rules.bonus_cards:
        for reading in RECOVERY_READINGS:
            if reading != rules.recovery:
                candidates.append((f"Recovery gives {reading} ({rules.recovery})", f"recovery={reading}", "recovery", 0))
    variants, skipped = [], []
    handicap_label = f"P1 starts with Health {rules.health - 1} ({rules.health})"
    if rules.health > 1:
        candidates.append((handicap_label, f"h{rules.health - 1} / ", None, -1))
    else:
        skipped.append(Skipped(handicap_label, "not possible: the rules start each player at Health 1"))

    base = replace(rules, name="")
    for label, setting, key, step in candidates:
        try:
            if key is None:
                parse_position(setting, base)
                variants.append(Variant(label, f"start at '{setting}'", base, setting, "", step, same_game_as=base))
            else:
                variants.append(Variant(label, f"--set {setting}", apply_overrides(base, [setting]), None, key, step,
                                        same_game_as=base if key in START_KEYS else None))
        except (RulesError, ValueError) as error:
            skipped.append(Skipped(label, str(error)))
    return variants, skipped


def shorter_board(board: str) -> str | None:
    """One space fewer: the last plain space, else the last star; None for a board with no space."""
    inner = board[1:-1]
    if not inner:
        return None
    at = inner.rfind(".") if "." in inner else inner.rfind("*")
    return "S" + inner[:at] + inner[at + 1 :] + "M"


def longer_board(board: str) -> str:
    """One plain space more, right after the start."""
    return "S." + board[1:]


@dataclass(frozen=True)
class VariantJob:
    variant: Variant
    cache_dir: str | None
    workers: int = 1
    """Processes the solve may use (rank by rank)."""
    show_progress: bool = False
    max_states: int | None = None
    """Refuse to enumerate more (None: what the solver's own memory check allows)."""
    length_turns: int = 0
    """Turns of the exact length distribution to compute, with how play uses each card (`VariantPlay`)
    (0: neither; the expected length only, one lookup)."""
    warm_from: WarmTable | None = None
    """A stored table (the baseline rules': `tables.warm_table_of`) whose values start a
    variant's solve when the variant keeps the state encoding; else it starts cold."""


def summarise_variant(job: VariantJob) -> VariantSummary | Skipped:
    """The variant's summary, or why it could not be solved (too large, or the solver failed)."""
    try:
        return _summary(job)
    except GraphTooLargeError as error:
        return Skipped(job.variant.label, str(error))
    except Exception as error:  # noqa: BLE001 - shown in the report rather than losing every other variant
        return Skipped(job.variant.label, f"the solve failed: {type(error).__name__}: {error}")


def _summary(job: VariantJob) -> VariantSummary:
    started = time.perf_counter()
    variant = job.variant
    if variant.same_game_as is not None:
        # Another start of a game: solved up to the game's stored table (whole if none is stored).
        key = fingerprint(variant.same_game_as)
        path = table_path(Path(job.cache_dir) if job.cache_dir else default_cache_dir(), key)
        # No length distribution or card usage: play goes on past the edge, in the stored table.
        (summary, epsilon), _ = solve_to_boundary(path, key, lambda boundary: certified_summary_from(
            variant.rules, variant.start, 0, workers=job.workers, show_progress=job.show_progress,
            max_states=job.max_states, boundary=boundary,
        ), warn_on_stderr)
        return VariantSummary.of(summary, time.perf_counter() - started, False, max_exploitability=epsilon)
    if variant.start is None:
        return _rules_summary(job, started)
    summary, epsilon = certified_summary_from(variant.rules, variant.start, job.length_turns, workers=job.workers,
                                              show_progress=job.show_progress, max_states=job.max_states)
    return VariantSummary.of(summary, time.perf_counter() - started, False, max_exploitability=epsilon)


def _rules_summary(job: VariantJob, started: float) -> VariantSummary:
    """The summary of a rule-set variant at its start: from its table where one is
    stored already (solved by an earlier run, or by `solve`), else solved now,
    storing nothing."""
    rules = job.variant.rules
    game = ChargeSparkGame(rules)
    code = game.encode(initial_position(rules))
    key = fingerprint(rules)
    path = table_path(Path(job.cache_dir) if job.cache_dir else default_cache_dir(), key)
    stored = cached_table(path, key, warn_on_stderr, mapped=True) if path.is_file() else None
    if stored is not None:
        play = play_of(game, stored, code, job.length_turns)[0] if job.length_turns > 0 else None
        summary = summarise_from(game, stored, code, job.length_turns)  # the length as `query` reads it
        return VariantSummary.of(summary, time.perf_counter() - started, True, states=stored.num_states,
                                 max_exploitability=largest_exploitability(stored), play=play)
    from ..core.solve import refuse_if_estimate_too_large, solve_from, solve_start_figures

    refuse_if_estimate_too_large(estimate_reachable(rules), "from the start", job.max_states, layered_bytes_per_state())
    warm = warm_start(job.warm_from, game, warn_on_stderr)
    options = {"show_progress": job.show_progress, "workers": job.workers, "max_states": job.max_states, "warm": warm}
    if job.length_turns > 0:
        # The length distribution follows play through the strategies of every state it reaches:
        # a whole solve, held (memory-mapped) only while it is read.
        # Resumable too: an interrupted report resumes the ranks it finished (kept apart from a figures-only solve's).
        kept = further_resume_dir(job.cache_dir, key, "whole") if job.cache_dir else None
        with resuming_in(kept) as resume:
            result = solve_from(game, [code], resume_dir=resume, **options)
        play, pmf = play_of(game, result, code, job.length_turns)
        summary, states = summarise_from(game, result, code, job.length_turns, length_pmf=pmf), result.num_states
        epsilon = largest_exploitability(result)
    else:
        # Half an hour at the printed rules' size: an interrupted report resumes the ranks it finished.
        kept = further_resume_dir(job.cache_dir, key, "start") if job.cache_dir else None
        with resuming_in(kept) as resume:
            figures = solve_start_figures(game, [code], hurried=True, resume_dir=resume, **options)
        summary, states, epsilon = figures_summary(figures, 0), figures.num_states, figures.max_exploitability
        play = None
    return VariantSummary.of(summary, time.perf_counter() - started, False, warm is not None, int(states), epsilon,
                             play)


def figures_summary(figures: StartFigures, i: int) -> StartSummary:
    """The `StartSummary` of root `i` of `solve_start_figures`'s answer (no length distribution)."""
    outcomes = {label: float(p) for label, p in zip(figures.terminal_labels, figures.terminal_probability[i])}
    outcomes[UNENDING] = float(figures.unending_probability[i])
    return StartSummary(float(figures.values[i]), outcomes, figures.expected_length(i), np.zeros(0),
                        figures.terminal_outcomes)


def summary_from(
    rules: RuleSet, start: str | None, max_turns: int = 200, *, workers: int = 1, show_progress: bool = False,
    max_states: int | None = None, boundary: Boundary | None = None,
) -> StartSummary:
    """The start summary of play from the position `start` (None: the rules'
    own start), solved now (not stored); up to `boundary`, if given."""
    return certified_summary_from(rules, start, max_turns, workers=workers, show_progress=show_progress,
                                  max_states=max_states, boundary=boundary)[0]


def certified_summary_from(
    rules: RuleSet, start: str | None, max_turns: int = 200, *, workers: int = 1, show_progress: bool = False,
    max_states: int | None = None, boundary: Boundary | None = None,
) -> tuple[StartSummary, float]:
    """`summary_from`, with the solve's largest exploitability over its states (its certificate)."""
    from ..core.solve import solve_from

    game = ChargeSparkGame(rules)
    code = game.encode(parse_position(start, rules) if start is not None else initial_position(rules))
    result = solve_from(game, [code], show_progress=show_progress, workers=workers, max_states=max_states,
                        boundary=boundary)
    return summarise_from(game, result, code, max_turns), largest_exploitability(result)


def variant_key(variant: Variant) -> str:
    """Identity of a variant's answer, for the results cache."""
    return f"variant:{fingerprint(variant.rules)}:{variant.start or 'start'}"
