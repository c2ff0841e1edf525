"""The report's solves beyond the rules' own table: one restricted game per
card (strength) and one game per rule variant (sensitivity), about 30.

Each answer is kept in the results cache the moment it is known, so an
interrupted report resumes where it left off. As many run side by side as
fit in memory together (by the rules' size estimate); when only one fits,
they run one after another in this process, each on every core, saying which
solve is running and how many remain."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rules.charge_spark.config import RuleSet
from rules.charge_spark.notation import parse_position
from rules.charge_spark.size import estimate_reachable

from ..analysis.parallel import solves_at_once, states_that_fit
from ..analysis.restricted import RestrictedJob, RestrictedValue, restricted_values, value_without
from ..analysis.results_cache import ResultsCache
from ..analysis.sensitivity import (
    Skipped, Variant, VariantJob, VariantSummary, summarise_variant, summarise_variants, variant_key,
)
from ..solve import LAYERED_BYTES_PER_STATE, usable_cores
from .entries import variant_entry, variant_from

Log = Callable[[str], None]


@dataclass
class SolvePlan:
    """Which solves are left, and how many run at once."""

    cards: list[str]  # restricted games not in the cache
    variants: list[Variant]  # variants not in the cache
    at_once: int
    done: int = 0  # solves finished so far in this run

    @property
    def total(self) -> int:
        return len(self.cards) + len(self.variants)

    def started(self, label: str, log: Log) -> None:
        log(f"solve {self.done + 1} of {self.total} ({self.total - self.done - 1} more after it): {label}")


def plan_solves(
    rules: RuleSet, cards: Sequence[str], variants: Sequence[Variant], results: ResultsCache, workers: int | None,
    first: Variant | None = None,
) -> SolvePlan:
    """The solves not in `results`: the restricted games, then the variants,
    `first` (the one the findings box reads) ahead of the others, so that a
    report read while it runs answers its question as early as it can."""
    cards = [card for card in cards if results.get(restricted_key(card)) is None]
    variants = sorted((v for v in variants if results.get(variant_key(v)) is None), key=lambda v: v != first)
    estimates = [float(estimate_reachable(rules))] * bool(cards) + [_estimate(v) for v in variants]
    return SolvePlan(cards, variants, solves_at_once(estimates, LAYERED_BYTES_PER_STATE, workers))


def _estimate(variant: Variant) -> float:
    start = parse_position(variant.start, variant.rules) if variant.start else None
    return float(estimate_reachable(variant.rules, start) if start else estimate_reachable(variant.rules))


def restricted_key(card: str) -> str:
    return f"without:{card}"


def kept_restricted(cards: Sequence[str], results: ResultsCache) -> dict[str, RestrictedValue]:
    """The restricted games of `cards` that `results` holds, by card."""
    return {card: RestrictedValue(card, **results.get(restricted_key(card))) for card in cards
            if results.get(restricted_key(card)) is not None}


def kept_variants(variants: Sequence[Variant], results: ResultsCache) -> dict[Variant, VariantSummary]:
    """The summaries of `variants` that `results` holds, by variant."""
    return {v: variant_from(results.get(variant_key(v))) for v in variants if results.get(variant_key(v)) is not None}


def restricted_play(
    rules: RuleSet, cards: Sequence[str], plan: SolvePlan, results: ResultsCache, *, show_progress: bool, log: Log,
    on_kept: Callable[[], None] = lambda: None,
) -> list[RestrictedValue]:
    """The value of the game with P1 barred from each card (`cards` in order);
    `on_kept()` after each is solved and kept in `results`."""

    def keep(answer: RestrictedValue) -> None:
        if answer.error is None:
            results.put_all({restricted_key(answer.card): {"value": answer.value, "p1_win": answer.p1_win}})
        on_kept()

    fresh: dict[str, RestrictedValue] = {}
    if plan.at_once > 1:
        for answer in restricted_values(rules, plan.cards, workers=plan.at_once, show_progress=show_progress,
                                        on_answer=keep):
            fresh[answer.card] = answer
    else:
        for card in plan.cards:
            plan.started(f"P1 may not play {card}", log)
            answer = value_without(RestrictedJob(rules, card, **_alone(show_progress)))
            keep(answer)
            fresh[card] = answer
            plan.done += 1
    kept = kept_restricted([card for card in cards if card not in fresh], results)
    return [fresh[card] if card in fresh else kept[card] for card in cards]


def variant_summaries(
    variants: Sequence[Variant], cache_dir: Path, plan: SolvePlan, results: ResultsCache, *, show_progress: bool,
    log: Log, on_kept: Callable[[], None] = lambda: None,
) -> list[VariantSummary | Skipped]:
    """Each variant's start summary, or why it could not be had (in `variants`
    order); `on_kept()` after each is solved and kept in `results`."""

    def keep(variant: Variant, answer: VariantSummary | Skipped) -> None:
        if isinstance(answer, VariantSummary):
            results.put_all({variant_key(variant): variant_entry(answer)})
        on_kept()

    fresh: dict[Variant, VariantSummary | Skipped] = {}
    if plan.at_once > 1:
        answers = summarise_variants(plan.variants, cache_dir, workers=plan.at_once, show_progress=show_progress,
                                     on_answer=keep)
        fresh.update(zip(plan.variants, answers))
    else:
        for variant in plan.variants:
            plan.started(variant.label, log)
            answer = summarise_variant(VariantJob(variant, str(cache_dir), **_alone(show_progress)))
            keep(variant, answer)
            fresh[variant] = answer
            plan.done += 1
    kept = kept_variants([v for v in variants if v not in fresh], results)
    return [fresh[v] if v in fresh else kept[v] for v in variants]


def _alone(show_progress: bool) -> dict:
    """Options of a solve that runs by itself: every core, and the memory there is now."""
    return {"workers": usable_cores(), "show_progress": show_progress,
            "max_states": states_that_fit(LAYERED_BYTES_PER_STATE)}
