"""The report's solves beyond the rules' own table: one restricted game per
card (strength), one one-seat rule set per point of a cost curve (price) and
one game per rule variant (sensitivity).

Each computes only what the report reads: a restricted game and a price
point their certified value at the start, a variant its start's value,
outcome split and length; none stores a table. A card P1's strategy in the rules' table never plays
where its play reaches is not solved at all (`restricted.unplayed_values`).

Each answer is kept in the results cache the moment it is known, so an
interrupted report resumes where it left off. They run through
`jobs.run_jobs`, in one of two ways:
- here: as many side by side as fit in memory together (by the rules' size
  estimate), in one queue of local worker processes; when only one fits,
  one after another in this process, each on every core, saying which solve
  is running and how many remain. A worker process that dies leaves the
  solves not yet answered to run that way.
- on a Dask cluster (`report --scheduler`): one solve a worker thread, one
  core each, answers (small summaries) sent back here and kept in this
  machine's results cache. A job carries its rules and this machine's cache
  directory (where a variant's table may be stored already). A solve that
  kills every worker it is given stops the report with an error (the
  answers had are kept).

Memory on a cluster: a solve's memory-mapped arrays count as its resident
memory, and Dask's nanny kills a worker past 95% of its memory limit. So a
solve goes only to workers whose limit holds a solve of its size (its
estimated states times the bytes a state its kind of solve takes:
`solve_need`) on each of their threads at once, or that have no limit;
workers that hold none of the solves are left out with a one-line warning,
and a cluster with none that holds one is refused (`cluster_workers_for`). A variant larger than any worker holds is
listed as left out, with the reason."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rules.charge_spark.config import RuleSet
from rules.charge_spark.notation import parse_position
from rules.charge_spark.size import estimate_reachable

from ..analysis.parallel import solves_at_once
from ..analysis.price import PointValue, PriceJob, PricePoint, point_key, point_value
from ..analysis.restricted import RestrictedJob, RestrictedValue, value_without
from ..analysis.results_cache import ResultsCache
from ..analysis.sensitivity import Skipped, Variant, VariantJob, VariantSummary, summarise_variant, variant_key
from ..core.jobs import (
    SchedulerError,
    WorkersLostError,
    cluster_threads,
    cluster_workers,
    memory_room,
    run_jobs,
    workers_holding,
    writable_dir,
)
from ..core.resources import layered_bytes_per_state, states_that_fit, usable_cores
from ..summary import LENGTH_TURNS
from ..tables import warm_table_of
from .entries import variant_entry, variant_from

if TYPE_CHECKING:
    from distributed import Client

Log = Callable[[str], None]


@dataclass
class SolvePlan:
    """Which solves are left, and how many run at once."""

    cards: list[str]  # restricted games not in the cache
    variants: list[Variant]  # variants not in the cache
    at_once: int
    done: int = 0  # solves finished so far in this run
    time_left: str = ""  # what the solves left take at the pace so far, once one has finished
    first: Variant | None = None  # the variant the findings box reads: its length distribution is computed too
    where: str = ""  # " on the Dask cluster at ADDRESS" when they run there
    cluster: dict[str, dict] | None = None  # there, the workers that hold a solve of the rules' size (`cluster_workers`)
    points: list[PricePoint] = field(default_factory=list)  # price points not in the cache (after the cards)

    @property
    def total(self) -> int:
        return len(self.cards) + len(self.points) + len(self.variants)

    def started(self, label: str, log: Log) -> None:
        log(f"solve {self.done + 1} of {self.total} ({self.total - self.done - 1} more after it): {label}")


def plan_solves(
    rules: RuleSet, cards: Sequence[str], variants: Sequence[Variant], results: ResultsCache, workers: int | None,
    first: Variant | None = None, client: Client | None = None, log: Log = lambda message: None,
    points: Sequence[PricePoint] = (),
) -> SolvePlan:
    """The solves not in `results`: the restricted games, the price points, then the variants,
    `first` (the one the findings box reads) ahead of the others, so that a
    report read while it runs answers its question as early as it can. On
    `client`'s cluster as many run at once as the workers that hold them
    have threads (`cluster_workers_for`; those left out are named through `log`)."""
    cards = [card for card in cards if results.get(restricted_key(card)) is None]
    variants = sorted((v for v in variants if results.get(variant_key(v)) is None), key=lambda v: v != first)
    points = [p for p in points if results.get(point_key(p)) is None]
    needs = solve_needs(rules, cards, variants, points)
    if client is not None:
        fit = cluster_workers_for(client, min(needs, default=restricted_need(rules)), log)
        return SolvePlan(cards, variants, cluster_threads(fit), first=first,
                         where=f" on the Dask cluster at {client.scheduler.address}", cluster=fit, points=points)
    # The needs are in bytes: one byte "a state" makes `solves_at_once` compare them with the memory.
    return SolvePlan(cards, variants, solves_at_once(needs, 1, workers), first=first, points=points)


def solve_need(states: float, hurried: bool = True) -> float:
    """Bytes a solve of about `states` states needs at its peak (rank by rank; `hurried=False`: values alone)."""
    return states * layered_bytes_per_state(hurried)


def restricted_need(rules: RuleSet) -> float:
    """Bytes a restricted game of `rules` needs: its value alone, over about the rules' states."""
    return solve_need(float(estimate_reachable(rules)), hurried=False)


def solve_needs(
    rules: RuleSet, cards: Sequence[str], variants: Sequence[Variant], points: Sequence[PricePoint] = (),
) -> list[float]:
    """Bytes each solve needs, in the queue's order: the restricted games of `cards`, the price
    `points` (values alone), then `variants` (hurried play)."""
    return ([restricted_need(rules)] * len(cards)
            + [solve_need(float(estimate_reachable(p.rules)), hurried=False) for p in points]
            + [solve_need(_estimate(v)) for v in variants])


def cluster_workers_for(client: Client, need: float, log: Log = lambda message: None) -> dict[str, dict]:
    """The workers of `client`'s cluster (`cluster_workers`) that can run a
    solve needing `need` bytes (the smallest of the solves) on each of their
    threads at once (no memory limit, or one that holds them:
    `jobs.workers_holding`); the others are named in one line through `log`.
    `SchedulerError` if there are no workers, or none that can."""
    workers = cluster_workers(client)
    holding = set(workers_holding(workers, need))
    left_out = {address: info for address, info in workers.items() if address not in holding}
    if not holding:
        largest = max(left_out.values(), key=lambda info: memory_room(info) or 0.0)
        raise SchedulerError(
            f"no Dask worker at {client.scheduler.address} can hold a further solve: the smallest needs about"
            f" {need / 1e9:.1f} GB a thread, and the largest memory limit is {_limit_of(largest)}; start workers"
            " with more memory, fewer threads, or --memory-limit 0")
    if left_out:
        named = ", ".join(f"{info.get('name') or address} ({_limit_of(info)})" for address, info in left_out.items())
        log(f"{len(left_out)} of {len(workers)} Dask workers left out, their memory limit too small for any further"
            f" solve (the smallest needs about {need / 1e9:.1f} GB a thread): {named}")
    return {address: info for address, info in workers.items() if address in holding}


def _limit_of(info: dict) -> str:
    """'8.0 GB for 2 threads': a worker's memory limit and what shares it."""
    threads = int(info.get("nthreads") or 1)
    return f"{int(info['memory_limit']) / 1e9:.1f} GB for {threads} thread{'s' if threads > 1 else ''}"


def _estimate(variant: Variant) -> float:
    start = parse_position(variant.start, variant.rules) if variant.start else None
    return float(estimate_reachable(variant.rules, start) if start else estimate_reachable(variant.rules))


def restricted_key(card: str) -> str:
    return f"without:{card}"


def kept_restricted(cards: Sequence[str], results: ResultsCache) -> dict[str, RestrictedValue]:
    """The restricted games of `cards` that `results` holds, by card."""
    return {card: RestrictedValue.from_entry(card, results.get(restricted_key(card))) for card in cards
            if results.get(restricted_key(card)) is not None}


def keep_unplayed(unplayed: Sequence[RestrictedValue], results: ResultsCache) -> None:
    """Keep in `results` the restricted values had with no solve (`restricted.unplayed_values`),
    where no value of the card is kept yet: the plan then leaves those cards out."""
    results.put_all({restricted_key(v.card): v.entry() for v in unplayed
                     if results.get(restricted_key(v.card)) is None})


def kept_variants(variants: Sequence[Variant], results: ResultsCache) -> dict[Variant, VariantSummary]:
    """The summaries of `variants` that `results` holds, by variant."""
    return {v: variant_from(results.get(variant_key(v))) for v in variants if results.get(variant_key(v)) is not None}


def kept_points(points: Sequence[PricePoint], results: ResultsCache) -> dict[PricePoint, PointValue]:
    """The values of the price `points` that `results` holds, by point."""
    return {p: PointValue.from_entry(results.get(point_key(p))) for p in points if results.get(point_key(p)) is not None}


Answer = RestrictedValue | PointValue | VariantSummary | Skipped
Job = RestrictedJob | PriceJob | VariantJob


def further_solve(job: Job) -> Answer:
    """One further solve: a restricted game, a price point or a variant (what a worker runs). A
    variant's stored table, if any, is looked for in the job's cache directory
    where this process reaches it, else (a cluster's worker on another machine)
    in its own default cache."""
    if isinstance(job, RestrictedJob):
        return value_without(replace(job, cache_dir=writable_dir(job.cache_dir)))
    if isinstance(job, PriceJob):
        return point_value(replace(job, cache_dir=writable_dir(job.cache_dir)))
    return summarise_variant(replace(job, cache_dir=writable_dir(job.cache_dir)))


def further_solves(
    rules: RuleSet, cards: Sequence[str], variants: Sequence[Variant], cache_dir: Path, plan: SolvePlan,
    results: ResultsCache, *, show_progress: bool, log: Log, on_kept: Callable[[], None] = lambda: None,
    client: Client | None = None, points: Sequence[PricePoint] = (),
) -> tuple[list[RestrictedValue], list[VariantSummary | Skipped], list[PointValue]]:
    """The value of the game with P1 barred from each card (`cards` in order),
    each variant's start summary or why it could not be had (`variants`
    in order) and P1's value at each price point (`points` in order): the solves of `plan` in one queue, in its order, `plan.at_once`
    at a time (a core each), so that no core waits for the last solve of one
    kind before the next kind starts. Each answer is kept in `results` as it
    comes, then `on_kept()`. A worker process that dies (killed for memory,
    say) leaves the solves not yet kept to run one at a time here. With
    `client`, they run on its Dask cluster instead, whatever `plan.at_once`;
    `WorkersLostError` if the cluster gives up on some."""
    labels = ([f"P1 may not play {card}" for card in plan.cards] + [p.label for p in plan.points]
              + [v.label for v in plan.variants])
    options = {"workers": 1, "show_progress": False}
    # The sensitivity rows give each variant's median game length and how its play uses each card:
    # a stalling tail of a few games in a thousand can put the mean in the thousands of turns.
    # Each starts from the rules' own table where it shares its state encoding: same answer, sooner.
    warm = warm_table_of(rules, cache_dir)
    kept_in = str(Path(cache_dir).resolve())
    jobs: list[Job] = [RestrictedJob(rules, card, warm_from=warm, cache_dir=kept_in, **options) for card in plan.cards]
    jobs += [PriceJob(p, warm_from=warm, cache_dir=kept_in, **options) for p in plan.points]
    first_variant = len(jobs)
    jobs += [
        # Cold: a warm start ends on another of the optimal strategies where there are several, and the
        # variant's card shares would then differ from those `query` gives for its rules.
        VariantJob(v, kept_in, length_turns=LENGTH_TURNS, **options)
        for v in plan.variants]

    started = time.perf_counter()

    def keep(i: int, answer: Answer) -> None:
        if isinstance(answer, RestrictedValue):
            if answer.error is None:
                results.put_all({restricted_key(answer.card): answer.entry()})
        elif isinstance(answer, PointValue):
            if answer.error is None:
                results.put_all({point_key(plan.points[i - len(plan.cards)]): answer.entry()})
        elif isinstance(answer, VariantSummary):
            results.put_all({variant_key(plan.variants[i - first_variant]): variant_entry(answer)})
        plan.done += 1
        seconds = f" in {answer.seconds:.0f} s" if getattr(answer, "seconds", None) is not None else ""
        mark = ""  # never silent: the page's row gives no number of a solve that is not certified
        failed = getattr(answer, "error", None) or getattr(answer, "reason", None)
        if failed:
            mark = f" (could not be solved: {failed})"
        elif isinstance(answer, (RestrictedValue, PointValue, VariantSummary)):
            mark = "" if answer.certificate.certified else f" ({answer.certificate.text})"
        left = plan.total - plan.done
        plan.time_left = time_left(time.perf_counter() - started, plan.done, left) if left else ""
        pace = f"; {left} to go, {plan.time_left}" if left else ""
        log(f"solved {plan.done} of {plan.total}{seconds}: {labels[i]}{mark}{pace}")
        on_kept()

    fresh: dict[int, Answer] = {}

    def finished(i: int, answer: Answer) -> None:
        fresh[i] = answer
        keep(i, answer)

    if client is not None:
        assert plan.cluster is not None
        needs = solve_needs(rules, plan.cards, plan.variants, plan.points)
        placement = [workers_holding(plan.cluster, need) for need in needs]
        for i, where in enumerate(placement):
            if not where:  # larger than any worker holds: left out, as one too large to solve here
                why = f"no Dask worker's memory limit holds it (about {needs[i] / 1e9:.1f} GB a thread)"
                finished(i, Skipped(labels[i], why) if i >= first_variant else
                         RestrictedValue(plan.cards[i], float("nan"), why) if i < len(plan.cards) else
                         PointValue(float("nan"), why))
        sent = [i for i in range(len(jobs)) if i not in fresh]
        try:
            run_jobs(further_solve, [jobs[i] for i in sent], client=client, description="further solves",
                     show_progress=show_progress, on_answer=lambda k, answer: finished(sent[k], answer),
                     placement=[placement[i] for i in sent])
        except WorkersLostError as lost:
            raise _given_up(WorkersLostError(str(lost), [sent[k] for k in lost.unanswered]), labels) from None
    elif plan.at_once > 1 and len(jobs) > 1:
        try:
            run_jobs(further_solve, jobs, workers=plan.at_once, description="further solves",
                     show_progress=show_progress, on_answer=finished)
        except WorkersLostError:
            log("a solve's process died (out of memory?); the solves left run one at a time")
    for i, job in enumerate(jobs):
        if i not in fresh:
            plan.started(labels[i], log)
            fresh[i] = further_solve(replace(job, **_alone(job, show_progress)))
            keep(i, fresh[i])
    by_card = {job.card: fresh[i] for i, job in enumerate(jobs) if isinstance(job, RestrictedJob)}
    by_variant = {job.variant: fresh[i] for i, job in enumerate(jobs) if isinstance(job, VariantJob)}
    by_point = {job.point: fresh[i] for i, job in enumerate(jobs) if isinstance(job, PriceJob)}
    kept_cards = kept_restricted([card for card in cards if card not in by_card], results)
    kept = kept_variants([v for v in variants if v not in by_variant], results)
    kept_at = kept_points([p for p in points if p not in by_point], results)
    return ([by_card[card] if card in by_card else kept_cards[card] for card in cards],
            [by_variant[v] if v in by_variant else kept[v] for v in variants],
            [by_point[p] if p in by_point else kept_at[p] for p in points])


def _given_up(lost: WorkersLostError, labels: Sequence[str]) -> WorkersLostError:
    """What to say when a cluster gives up on solves: they are not run here
    instead, as this machine is usually the one that cannot hold them."""
    names = "; ".join(labels[i] for i in lost.unanswered)
    return WorkersLostError(
        f"the Dask cluster gave up on {len(lost.unanswered)} further solves whose workers kept dying (out of"
        f" memory?): {names}; the solves answered are kept in the cache: run the report again to resume (without"
        " --scheduler to solve the rest here)", lost.unanswered)


def time_left(elapsed: float, done: int, left: int) -> str:
    """What `left` more solves take at the pace of the `done` ones so far (wall
    time, so solves side by side count as such): 'about 2 h 05 min left'."""
    minutes = round(elapsed / done * left / 60)
    hours, minutes = divmod(minutes, 60)
    return f"about {hours} h {minutes:02d} min left at this pace" if hours else (
        f"about {max(minutes, 1)} min left at this pace")


def _alone(job: Job, show_progress: bool) -> dict:
    """Options of a solve that runs by itself: every core, and the memory there is now."""
    per_state = layered_bytes_per_state(hurried=isinstance(job, VariantJob))
    return {"workers": usable_cores(), "show_progress": show_progress, "max_states": states_that_fit(per_state)}
