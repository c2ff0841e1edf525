"""Everything the report shows, computed from the rules in force: the solved
table (cached), then each section's analysis, with the time each took.

The table is read memory-mapped and only what play reaches from the start is
expanded into a graph; what needs every state streams over the table in
chunks; the skill gap and the ~30 further games are solved rank by rank. So
the printed rules (49 million states) are reported within the memory a solve
of them needs. Every section's result is kept in the results cache as soon
as it is known: a second report reads them, and an interrupted one resumes."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rules.charge_spark.cards import Card
from rules.charge_spark.config import RuleSet, differences_from_default, fingerprint
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.notation import format_position
from rules.charge_spark.size import estimate_reachable

from ..analysis.card_status import legal_row_actions
from ..analysis.draws import DrawValue, draw_sums_of, draws_from_play
from ..analysis.policy_play import PlayFigures, Policy, PolicyPlay, play_figures
from ..analysis.policy_ranks import PolicyGames, policy_games
from ..analysis.positions import AnnotatedPosition, annotated_positions
from ..analysis.price import PointValue, PricePoint, price_points
from ..analysis.restricted import RestrictedValue, unplayed_values
from ..analysis.results_cache import ResultsCache
from ..analysis.sensitivity import Skipped, Variant, VariantSummary, sensitivity_variants
from ..analysis.skill_gap import PolicyResult, greedy_policy, table_skill_gap, uniform_policy
from ..analysis.stalls import (
    LengthAndStalls,
    Stall,
    length_and_stalls_entry,
    play_key,
    stall_chain_of_play,
    stalls,
    summary_length_figures,
)
from ..analysis.usage import CardUsage, choices_to_follow, usage_from_play
from ..certificate import CertificateStatus, certificate_status, largest_exploitability
from ..core.chain import TurnByTurn, turn_by_turn
from ..core.graph import GraphTooLargeError
from ..core.play import FollowedPlay, Play, follow_play
from ..core.resources import available_memory, layered_bytes_per_state, states_that_fit, usable_cores
from ..core.result import StateAnswer
from ..core.solve import ESTIMATE_MARGIN, EstimatedTooLargeError, approximate_count, byte_size
from ..hidden.run import HiddenAnalysis, hidden_analysis, phases_progress
from ..hidden.wild_table import WildTable, solved_wild_table
from ..storage import default_cache_dir
from ..summary import LENGTH_TURNS, StartSummary, summarise_from
from ..tables import SolvedTable, solved_table
from . import entries
from .made import CACHED, COMPUTED, TABLE_CACHED, MadePart
from .solves import (
    SolvePlan,
    further_solves,
    keep_unplayed,
    kept_points,
    kept_restricted,
    kept_variants,
    plan_solves,
)

if TYPE_CHECKING:
    from distributed import Client

SECTIONS = ("headline", "usage", "strength", "price", "cost-curves", "sensitivity", "positions", "skill", "hidden")
"""The report's sections, in order; the headline is always there."""
PRICED = ("price", "cost-curves")
"""The sections that read the price points (one-seat rule sets, `analysis.price`)."""
FINDINGS_CARD = "lightning"
"""The card whose cost going up the findings box answers for ("what if Lightning costs 3?")."""
STILL_TO_COME = "still to come"
"""`Report.pending` of a section not started yet (else how far it has got)."""
PART_LABELS = {
    "table": "the rules' table (its states enumerated, solved, certified and stored)",
    "play": "optimal play from the start, as a chain: each state it reaches expanded once, for every part of play",
    "visits": "play turn by turn, one propagation: expected visits, the length's distribution, the cards played",
    "headline": "headline: the start's figures, stalls",
    "usage": "card usage",
    "draws": "draw values",
    "positions": "positions worth knowing",
    "skill": "skill gap",
    "hidden": "hidden bonus cards (phases solved as game trees)",
    "cards": "P1's cards (one restricted game each)",
    "further solves": "further solves",
}
"""How "How this report was made" names each part."""
WILD_PART = "hidden: the wild game's table (P1's, which serves both seats)"
"""The wild table's part, within the hidden section's."""
UNIFORM = "uniform random legal card"
GREEDY = "strongest affordable attack, else Charge"


@dataclass
class Report:
    rules: RuleSet
    fingerprint: str
    states: int
    exploitability: float
    changed: list[str]
    summary: StartSummary
    start: StateAnswer
    usage: CardUsage | None
    restricted: list[RestrictedValue]
    draws: list[DrawValue]
    variants: list[tuple[Variant, VariantSummary]]
    skipped: list[Skipped]
    positions: list[tuple[str, AnnotatedPosition]]  # (position in notation, annotation)
    skill: list[PolicyResult]
    hidden: HiddenAnalysis | None = None
    points: list[tuple[PricePoint, PointValue]] = field(default_factory=list)
    """Each price point had so far with P1's value there (`analysis.price`), in `price_points` order."""
    price_skipped: list[Skipped] = field(default_factory=list)
    """Price points the rules refuse, with the reason."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Per part, and "table" for the solve or load of the rules' table: what it
    took when computed (in this run or, for those in `cached`, an earlier one)."""
    table_reused: bool = False
    sections: tuple[str, ...] = SECTIONS
    """The sections shown (`--sections`); the others are left out."""
    cached: set[str] = field(default_factory=set)
    """Parts read from the results cache rather than computed in this run."""
    pending: dict[str, str] = field(default_factory=dict)
    """Sections still being computed (a report written while it runs), each
    with how far it has got; empty in a finished report."""
    stalls: list[tuple[str, Stall]] = field(default_factory=list)
    """Where play from the start stalls (position in notation, stall), largest share first."""
    made: list[MadePart] = field(default_factory=list)
    """Each part's cost, in the order the parts are made ("How this report was made")."""
    run_seconds: float = 0.0
    """Wall time of this run so far (the report's own part: the page is written after it)."""

    @property
    def certificate(self) -> CertificateStatus:
        """The rules' table's: every figure of the report read from it carries its mark when it is not certified."""
        return certificate_status(self.exploitability)

    @property
    def left_out(self) -> tuple[str, ...]:
        return tuple(name for name in SECTIONS if name not in self.sections)


def chosen_sections(names: str | None) -> tuple[str, ...]:
    """The sections named in `names` ("usage,skill"; None: all), in report
    order, the headline always included; ValueError naming an unknown one."""
    if names is None:
        return SECTIONS
    chosen = {name.strip() for name in names.split(",") if name.strip()}
    unknown = sorted(chosen - set(SECTIONS))
    if unknown:
        raise ValueError(f"unknown section {unknown[0]!r}; the sections are {', '.join(SECTIONS)}")
    return tuple(name for name in SECTIONS if name in chosen | {"headline"})


def build_report(
    rules: RuleSet, cache_dir: Path | str | None = None, *, workers: int | None = None,
    show_progress: bool = False, log: Callable[[str], None] = lambda message: None,
    sections: tuple[str, ...] = SECTIONS, on_partial: Callable[[Report], None] | None = None,
    client: Client | None = None, parts_file: Path | str | None = None,
) -> Report:
    """Solve (or load) the rules' table and run the analyses of `sections`.

    Each finished part is kept in the cache's results, or in `parts_file`
    when given (`ResultsCache.at`: the parts read from it are reused, and
    those computed are added to it as they finish).

    `on_partial(report)` gets the report as far as it is known each time a
    part is computed in this run while others are still to come (their
    sections named in `Report.pending`): a full-size report takes hours, and
    its headline is known after the first few minutes of them.

    `client`: a Dask client whose cluster runs the further solves (see
    `solves`); everything else runs here."""
    refuse_beyond_memory(rules)
    cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
    results = (ResultsCache.at(parts_file, fingerprint(rules)) if parts_file is not None
               else ResultsCache(cache_dir, fingerprint(rules)))
    parts = _Parts(rules, cache_dir, results, show_progress, log)
    known = _Known(rules, sections, parts)

    def progressed() -> None:
        """Hand on the report so far, if this run computed a part since the last time and more is to come."""
        if on_partial is not None and parts.computed > known.shown and known.pending():
            known.shown = parts.computed
            on_partial(known.report())

    def solved_one() -> None:
        parts.computed += 1
        progressed()

    if "hidden" in sections and not _hidden_kept(rules, parts.results):
        # A full-size solve of its own: had before play is followed, since at the printed rules the two would
        # not fit in a laptop's memory side by side.
        parts.wild()
    known.headline = parts.cached("headline", parts.headline, _headline_entry, _headline_from, play=True)
    table_status = certificate_status(known.headline[3])
    if not table_status.certified:  # the page says so too, beside every figure read from the table
        log(f"the rules' table is {table_status.text}")
    progressed()
    if "usage" in sections or any(name in sections for name in PRICED):  # the price rows read how often cards are played
        known.usage = parts.cached("usage", parts.usage, entries.usage_entry, entries.usage_from, play=True)
        progressed()
    if "strength" in sections:
        known.draws = parts.cached("draws", parts.draws, entries.draws_entry, entries.draws_from, play=True)
        progressed()
    if "positions" in sections:
        known.positions = parts.cached("positions", parts.positions, entries.positions_entry,
                                       entries.positions_from, play=True)
        progressed()
    if "hidden" in sections:
        known.hidden = parts.cached("hidden", parts.hidden, lambda h: {**h.as_json(), "wild_refused": parts.wild_refused},
                                    _hidden_from(rules), play=True)
        progressed()
    # The skill gap's solves need the table, not the chain of play (gigabytes at the printed rules):
    # held, it left them less memory than a solve of the rules' size needs, and they were refused.
    parts.let_go_of_play()
    if "skill" in sections:
        known.skill = parts.cached("skill", parts.skill, lambda results: [asdict(r) for r in results],
                                   lambda entry: [PolicyResult(**r) for r in entry])
        progressed()
    cards = parts.cached("cards", parts.cards, list, list) if "strength" in sections else []
    if cards:
        # The cards P1's play never uses need no restricted game: kept, they leave the plan.
        epsilon = known.headline[3]  # an unplayed card's value is the rules' table's: so is its certificate
        keep_unplayed(parts.cached("unplayed cards", lambda: parts.unplayed(cards, epsilon), _values_entry,
                                   _values_from), parts.results)
    parts.let_go()  # the table and its chain of play, before the solves

    variants, known.skipped = sensitivity_variants(rules) if "sensitivity" in sections else ([], [])
    points, known.price_skipped = price_points(rules) if any(name in sections for name in PRICED) else ([], [])
    known.cards, known.variants, known.points = cards, variants, points
    plan = known.plan = plan_solves(rules, cards, variants, parts.results, workers, first=findings_variant(variants),
                                    client=client, log=log, points=points)
    if plan.total:
        log(f"{plan.total} further solves to run, {plan.at_once} at a time{plan.where}"
            " (the rest of them come from the cache)")
        progressed()
    known.restricted, answers, values = parts.timed("further solves", lambda: further_solves(
        rules, cards, variants, cache_dir, plan, parts.results, show_progress=show_progress, log=log,
        on_kept=solved_one, client=client, points=points,
    )) if cards or variants or points else ([], [], [])
    known.point_values = list(zip(points, values))
    known.solved = [(v, s) for v, s in zip(variants, answers) if isinstance(s, VariantSummary)]
    known.skipped += [s for s in answers if isinstance(s, Skipped)]
    return known.report()


class _Known:
    """What the report knows so far, and which of its sections are still to come."""

    def __init__(self, rules: RuleSet, sections: tuple[str, ...], parts: _Parts) -> None:
        self.rules, self.sections, self.parts = rules, sections, parts
        self.headline = None
        self.usage: CardUsage | None = None
        self.draws: list[DrawValue] | None = None
        self.positions: list | None = None
        self.skill: list[PolicyResult] | None = None
        self.hidden: HiddenAnalysis | None = None
        self.cards: list[str] | None = None  # P1's cards, once known: one restricted game each
        self.variants: list[Variant] | None = None
        self.restricted: list[RestrictedValue] | None = None
        self.solved: list[tuple[Variant, VariantSummary]] | None = None
        self.skipped: list[Skipped] = []
        self.points: list[PricePoint] | None = None  # the price points, once known: one solve each
        self.point_values: list[tuple[PricePoint, PointValue]] | None = None
        self.price_skipped: list[Skipped] = []
        self.plan: SolvePlan | None = None  # the further solves, once planned
        self.shown = 0  # `_Parts.computed` when the report so far was last handed on

    def pending(self) -> dict[str, str]:
        """Each section still to come, with how far it has got."""
        later = STILL_TO_COME
        pending = {}
        if "usage" in self.sections and self.usage is None:
            pending["usage"] = later
        pace = f"; all further solves: {self.plan.time_left}" if self.plan and self.plan.time_left else ""
        if "strength" in self.sections and self.restricted is None:
            pending["strength"] = later if self.cards is None else (
                f"{len(self._restricted_so_far())} of {len(self.cards)} restricted games solved so far{pace}")
        if "strength" in self.sections and self.draws is None:
            pending["draws"] = later
        for name in PRICED:
            if name in self.sections and self.point_values is None:
                pending[name] = later if self.points is None else (
                    f"{len(self._points_so_far())} of {len(self.points)} price points solved so far{pace}")
        if "sensitivity" in self.sections and self.solved is None:
            pending["sensitivity"] = later if self.variants is None else (
                f"{len(self._variants_so_far())} of {len(self.variants)} variants solved so far{pace}")
        if "positions" in self.sections and self.positions is None:
            pending["positions"] = later
        if "skill" in self.sections and self.skill is None:
            pending["skill"] = later
        if "hidden" in self.sections and self.hidden is None:
            pending["hidden"] = later
        return pending

    def _restricted_so_far(self) -> list[RestrictedValue]:
        return list(kept_restricted(self.cards or [], self.parts.results).values())

    def _points_so_far(self) -> list[tuple[PricePoint, PointValue]]:
        return list(kept_points(self.points or [], self.parts.results).items())

    def _variants_so_far(self) -> list[tuple[Variant, VariantSummary]]:
        return list(kept_variants(self.variants or [], self.parts.results).items())

    def report(self) -> Report:
        summary, start, states, exploitability, stalled = self.headline
        parts = self.parts
        restricted = self.restricted if self.restricted is not None else self._restricted_so_far()
        restricted = [with_table_certificate(r, exploitability) for r in restricted]
        solved = self.solved if self.solved is not None else self._variants_so_far()
        points = self.point_values if self.point_values is not None else self._points_so_far()
        return Report(
            rules=self.rules, fingerprint=fingerprint(self.rules), states=states, exploitability=exploitability,
            changed=differences_from_default(self.rules), summary=summary, start=start, usage=self.usage,
            restricted=restricted, draws=self.draws or [], variants=solved, skipped=list(self.skipped),
            positions=self.positions or [], skill=self.skill or [], hidden=self.hidden, seconds=dict(parts.seconds),
            table_reused=parts.table_reused, sections=self.sections, cached=set(parts.from_cache),
            pending=self.pending(), stalls=stalled, made=self._made(restricted, solved, points),
            points=points, price_skipped=list(self.price_skipped),
            run_seconds=time.perf_counter() - parts.started,
        )

    def _made(self, restricted: list[RestrictedValue], solved: list[tuple[Variant, VariantSummary]],
              points: list[tuple[PricePoint, PointValue]]) -> list[MadePart]:
        """The parts' costs, each further solve after the rest (computed in this
        run when it was not in the cache at the start: `plan`)."""
        plan = self.plan
        fresh_cards = set(plan.cards) if plan else set()
        fresh_variants = set(plan.variants) if plan else set()
        fresh_points = set(plan.points) if plan else set()
        solves = [MadePart(f"P1 may not play {r.card}", r.seconds, r.states,
                           COMPUTED if r.card in fresh_cards else CACHED, "further solves")
                  for r in restricted if not r.unplayed]  # those not solved cost nothing
        solves += [MadePart(p.label, v.seconds, v.states, COMPUTED if p in fresh_points else CACHED, "further solves")
                   for p, v in points if v.error is None]
        for v, s in solved:
            source = (TABLE_CACHED if s.reused else COMPUTED) if v in fresh_variants else CACHED
            solves.append(MadePart(v.label, s.seconds, s.states, source, "further solves"))
        made = self.parts.made_parts(leaving_out=("further solves",))  # rebuilt below, with each solve
        if not solves:
            return made
        wall = self.parts.seconds.get("further solves")
        if any(part.source != CACHED for part in solves):
            head = MadePart(PART_LABELS["further solves"], wall, None, COMPUTED)
        else:  # each kept by an earlier run: their times side by side are not known, their sum is
            head = MadePart(PART_LABELS["further solves"], sum(p.seconds or 0.0 for p in solves), None, CACHED)
        return made + [head] + solves


def with_table_certificate(value: RestrictedValue, exploitability: float) -> RestrictedValue:
    """`value`, given the rules' table's certificate where it is that table's value (an unplayed card)
    kept by an earlier version without one."""
    if value.unplayed and value.max_exploitability is None:
        return replace(value, max_exploitability=exploitability)
    return value


def findings_variant(variants: list[Variant]) -> Variant | None:
    """The variant the findings box reports: `FINDINGS_CARD`'s cost one up."""
    return next((v for v in variants if v.key.startswith(f"cost.{FINDINGS_CARD}.") and v.step > 0), None)


def refuse_beyond_memory(rules: RuleSet) -> None:
    """Stop at once, before any solve, when even a rank-by-rank solve of the
    rules (which the table, the skill gap and every further game need) clearly
    would not fit in memory, rather than after solving for hours."""
    estimate = estimate_reachable(rules)
    per_state = layered_bytes_per_state()
    limit = states_that_fit(per_state)
    if limit is not None and estimate > ESTIMATE_MARGIN * limit:
        raise EstimatedTooLargeError(
            f"the report solves the rules in force rank by rank: about {approximate_count(estimate)} states from the"
            f" start (~{byte_size(estimate * per_state)} at {per_state:,} bytes a state),"
            f" and the {available_memory() / 1e9:.1f} GB of memory available holds about {approximate_count(limit)}"
        )


class _Parts:
    """The parts of the report computed from the rules' table, each read from
    the results cache when it is there; the table and the graph of the states
    play reaches are loaded only when some part needs them."""

    def __init__(self, rules: RuleSet, cache_dir: Path, results: ResultsCache, show_progress: bool, log) -> None:
        self.rules, self.cache_dir, self.results = rules, cache_dir, results
        self.show_progress, self.log = show_progress, log
        self.game = ChargeSparkGame(rules)
        self.seconds: dict[str, float] = {}
        self.made: dict[str, MadePart] = {}  # by part name, in the order they were had
        self.started = time.perf_counter()
        self.from_cache: set[str] = set()
        self.table_reused = True
        self._table: SolvedTable | None = None
        self._followed: FollowedPlay | None = None
        self._turns: TurnByTurn | None = None
        self._wild: WildTable | None = None
        self.wild_refused = False  # the wild table would not fit in memory
        self.running: set[str] = set()  # the parts being timed
        self.ahead: dict[str, float] = {}  # per part, the time its members took computed ahead of it
        self.computed = 0  # parts computed in this run (not read from the cache)

    def timed(self, name: str, compute: Callable, states: Callable[[object], int | None] = lambda value: None):
        started = time.perf_counter()
        self.running.add(name)
        try:
            value = compute()
        finally:
            self.running.discard(name)
        # A member computed ahead of its part (the wild table, before play) is counted within it.
        self.seconds[name] = time.perf_counter() - started + self.ahead.pop(name, 0.0)
        self.log(f"{name}: {self.seconds[name]:.1f} s")
        self._made(name, self.seconds[name], states(value), COMPUTED)
        return value

    def _made(self, name: str, seconds: float | None, states: int | None, source: str) -> None:
        group = name.split(": ", 1)[0] if ": " in name else None
        label = name.split(": ", 1)[1] if group else PART_LABELS.get(name, name)
        self.made[name] = MadePart(label, seconds, states, source, group)

    def made_parts(self, leaving_out: tuple[str, ...] = ()) -> list[MadePart]:
        """The parts so far, each group's members after it; the rules' table
        first, as the run that solved it kept it when this one did not need it."""
        kept = self.results.get("report:table")
        if "table" not in self.made and kept is not None:
            self.made = {"table": MadePart(PART_LABELS["table"], kept["seconds"], kept["states"], CACHED), **self.made}
        top = [name for name, part in self.made.items() if part.group is None and name not in leaving_out]
        members = [name for name in self.made if self.made[name].group is not None]
        groups = set(top)
        order = []
        for name in top:
            order.append(self.made[name])
            order += [self.made[m] for m in members if m.split(": ", 1)[0] == name]
        order += [self.made[m] for m in members if m.split(": ", 1)[0] not in groups]  # a group still running
        return order

    def cached(self, name: str, compute: Callable, to_entry: Callable, from_entry: Callable, *, play: bool = False):
        """`compute()`, or what the results cache kept of it. What it needs (the
        table, and with `play` the chain of play) is had and timed first, on its own."""
        entry = self.results.get(f"report:{name}")
        if entry is not None:
            try:
                value = from_entry(entry["data"])
            except (KeyError, TypeError, ValueError):
                pass  # kept before the part gained a field: computed again
            else:
                self.seconds[name] = entry["seconds"]
                self.from_cache.add(name)
                self._made(name, entry["seconds"], entry.get("states"), CACHED)
                for key, member in self.results.entries.items():  # a part's own parts (the skill gap's solves)
                    if key.startswith(f"report:{name}: "):
                        self._made(key.removeprefix("report:"), member["seconds"], member.get("states"), CACHED)
                return value
        self._load()
        if play:
            self._turn_by_turn()  # built (and timed) here, not within the first part that needs it
        value = self.timed(name, compute, lambda value: self._states_of(name, value, play))
        self.results.put_all({f"report:{name}": {
            "seconds": self.seconds[name], "states": self.made[name].states, "data": to_entry(value)}})
        self.computed += 1
        return value

    @property
    def table(self) -> SolvedTable:
        return self._load()

    def _load(self) -> SolvedTable:
        if self._table is None:
            self.log("solving the rules' table (or reading it from the cache)")
            self._table = self.timed("table", lambda: solved_table(
                self.rules, self.cache_dir, show_progress=self.show_progress, warn=self.log, mapped=True,
                workers=usable_cores(), max_states=states_that_fit(layered_bytes_per_state()),
            ), lambda table: table.result.num_states)
            self.table_reused = self._table.reused
            kept = self.results.get("report:table")
            if self.table_reused and kept is not None:  # solved by an earlier run: its cost then, as every part read
                self._made("table", kept["seconds"], kept["states"], CACHED)
            elif self.table_reused:
                self._made("table", self.seconds["table"], self._table.result.num_states, CACHED)
            else:  # for the runs that read every part from the cache and never open the table
                self.results.put_all({"report:table": {"seconds": self.seconds["table"],
                                                       "states": self._table.result.num_states}})
        return self._table

    @property
    def followed(self) -> FollowedPlay:
        """Play under the table's strategies from the start, followed once: a
        chain over the states it reaches, both seats' strategies there and what
        the draw values sum (`follow_play`, on every core: the further solves
        start only after play is let go)."""
        if self._followed is None:
            result = self.table.result
            self._followed = self.timed(
                "play", lambda: follow_play(self.game, result, self.table.start, draw_sums_of(self.game, result),
                                            workers=usable_cores()),
                lambda followed: int(followed.play.states.size))
            self.log(f"optimal play reaches {self.play.states.size:,} of the table's {result.num_states:,} states")
        return self._followed

    @property
    def play(self) -> Play:
        return self.followed.play

    @property
    def visits(self) -> np.ndarray:
        return self._turn_by_turn().visits

    def _turn_by_turn(self) -> TurnByTurn:
        """Play's state probabilities propagated once, with every figure the parts read turn by turn."""
        if self._turns is None:
            def propagate() -> TurnByTurn:
                followed = self.followed
                return turn_by_turn(followed.chain, followed.play.start, LENGTH_TURNS, choices_to_follow(followed),
                                    len(self.game.action_labels))

            self._turns = self.timed("visits", propagate, lambda turns: int(self.play.states.size))
        return self._turns

    def _states_of(self, name: str, value, play: bool) -> int | None:
        """The states a part's work covers: play's, a policy game's, or the table's."""
        if play:
            return int(self.play.states.size)
        if isinstance(value, (PlayFigures, PolicyGames)):
            return value.states
        return None if name == "skill" else self._table.result.num_states

    def let_go(self) -> None:
        self._table = self._wild = None
        self.let_go_of_play()

    def let_go_of_play(self) -> None:
        self._followed = self._turns = None

    def headline(self):
        """The start's summary and answer, the table's size and largest exploitability, and where play stalls."""
        result, start = self.table.result, self.table.start
        summary = summarise_from(self.game, result, start, length_pmf=self._turn_by_turn().length_pmf)
        found = stalls(stall_chain_of_play(self.followed, result))
        # What a query of the start would otherwise follow play through the whole table again for.
        lasting = LengthAndStalls(summary_length_figures(summary), tuple(found), int(self.play.states.size))
        self.results.put_all({play_key(start): length_and_stalls_entry(lasting)})
        stalled = [(format_position(self.game.decode(s.position), self.rules), s) for s in found]
        return (summary, result.answer(start, self.game), result.num_states, largest_exploitability(result), stalled)

    def usage(self) -> CardUsage:
        return usage_from_play(self.game, self.table.result, self.followed, self._turn_by_turn())

    def draws(self) -> list[DrawValue]:
        return draws_from_play(self.game, self.followed, self.visits)

    def positions(self) -> list[tuple[str, AnnotatedPosition]]:
        result = self.table.result
        annotated = annotated_positions(self.rules, result, self.play.states, self.visits,
                                        lambda code: result.answer(code, self.game))
        return [(format_position(self.game.decode(a.code), self.rules), a) for a in annotated]

    def hidden(self) -> HiddenAnalysis:
        """Every hidden phase of a small table; the most frequent in play of a large one (with bounds where they
        outgrow the cap), both sides of each bracket and the whole game's from the wild table."""
        wild = self.wild()
        with phases_progress() as progress:
            return hidden_analysis(self.rules, self.table.result, play=(self.play, self.visits), wild=wild,
                                   progress=progress)

    def wild(self) -> WildTable | None:
        """The rules' wild table, solved or read from the tables cache (None where it would not fit in
        memory: the hidden section then goes without the wild bounds, and says so)."""
        if self._wild is None and not self.wild_refused:
            result = self.table.result
            try:
                self._wild = self.timed(WILD_PART, lambda: solved_wild_table(
                    self.rules, result.states, self.cache_dir, warn=self.log, workers=usable_cores(),
                    show_progress=self.show_progress, max_states=states_that_fit(layered_bytes_per_state()),
                ), lambda wild: wild.num_states)
            except GraphTooLargeError as error:
                self.log(f"the hidden section goes without the wild bounds: {error}")
                self.wild_refused = True
                return None
            if "hidden" not in self.running:
                self.ahead["hidden"] = self.seconds[WILD_PART]
            kept = self.results.get(f"report:{WILD_PART}")
            if not self._wild.reused or kept is None:
                self.results.put_all({f"report:{WILD_PART}": {"seconds": self.seconds[WILD_PART],
                                                              "states": self._wild.num_states}})
            else:  # solved by an earlier run: its cost then, not this run's reading
                self._made(WILD_PART, kept["seconds"], kept["states"], TABLE_CACHED)
        return self._wild

    def cards(self) -> list[str]:
        """P1's cards legal somewhere in the table: one restricted game each."""
        return [self.game.action_labels[a] for a in legal_row_actions(self.table.result)]

    def unplayed(self, cards: list[str], exploitability: float) -> list[RestrictedValue]:
        """The restricted values of the cards of `cards` P1's play never uses: the rules' value, with no
        solve, and the certificate of the rules' table (`exploitability`)."""
        values = unplayed_values(self.game, self.table.result, self.table.start, cards)
        return [with_table_certificate(value, exploitability) for value in values]

    def skill(self) -> list[PolicyResult]:
        """The skill gap: one pass a policy (and, where the table's strategies do not
        mirror between the seats, one policy game more), each kept in the results cache as it finishes."""
        strength = np.array([self.rules.damage_of(card) for card in Card])
        fallback = [int(Card.CHARGE), int(Card.BARRIER), int(Card.MOVE)]
        policies = {
            UNIFORM: lambda codes, ptr, actions: uniform_policy(ptr),
            GREEDY: lambda codes, ptr, actions: greedy_policy(ptr, actions, strength, fallback),
        }

        def play_both(name: str, policy: Policy) -> PolicyGames:
            label = f"{name} against optimal play and its best response"
            return self.cached(f"skill: {label}", lambda: self._solve_policy_games(label, policy),
                               PolicyGames.as_json, PolicyGames.from_json)

        def play(label: str, game: PolicyPlay) -> PlayFigures:
            return self.cached(f"skill: {label}", lambda: self._solve_policy_game(label, game),
                               entries.figures_entry, entries.figures_from)

        return table_skill_gap(self.game, self.table.result, policies, play_both, play)

    def _solve_policy_games(self, label: str, policy: Policy) -> PolicyGames:
        self.log(f"skill gap: {label}")
        return policy_games(self.game, self.table.result, policy, self.table.start, workers=usable_cores(),
                            show_progress=self.show_progress)

    def _solve_policy_game(self, label: str, game: PolicyPlay) -> PlayFigures:
        self.log(f"skill gap: {label}")
        return play_figures(game, self.table.start, show_progress=self.show_progress, workers=usable_cores(),
                            max_states=states_that_fit(layered_bytes_per_state()))


def _headline_entry(headline) -> dict:
    summary, start, states, exploitability, stalled = headline
    return {"summary": entries.summary_entry(summary), "start": entries.answer_entry(start), "states": states,
            "exploitability": exploitability, "stalls": entries.stalls_entry(stalled)}


def _headline_from(entry: dict):
    return (entries.summary_from_entry(entry["summary"]), entries.answer_from(entry["start"]), entry["states"],
            entry["exploitability"], entries.stalls_from(entry["stalls"]))


def _hidden_kept(rules: RuleSet, results: ResultsCache) -> bool:
    """Whether the results cache holds the hidden section as this version makes it."""
    entry = results.get("report:hidden")
    try:
        return entry is not None and _hidden_from(rules)(entry["data"]) is not None
    except (KeyError, TypeError, ValueError):
        return False


def _hidden_from(rules: RuleSet) -> Callable[[dict], HiddenAnalysis]:
    """The hidden section kept in the results cache; KeyError for one kept before
    the wild bounds (computed again, now with them)."""
    def from_entry(entry: dict) -> HiddenAnalysis:
        if entry.get("game_lower") is None and not entry.get("wild_refused"):
            raise KeyError("game_lower")
        return HiddenAnalysis.from_json(rules, entry)

    return from_entry


def _values_entry(values: list[RestrictedValue]) -> list[dict]:
    return [{"card": v.card, **v.entry()} for v in values]


def _values_from(entry: list[dict]) -> list[RestrictedValue]:
    return [RestrictedValue.from_entry(e["card"], e) for e in entry]
