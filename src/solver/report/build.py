"""Everything the report shows, computed from the rules in force: the solved
table (cached), then each section's analysis, with the time each took."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from rules.charge_spark.cards import Card
from rules.charge_spark.config import RuleSet, differences_from_default, fingerprint
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.notation import format_position
from rules.charge_spark.state import held_bonus_counts
from rules.charge_spark.size import estimate_reachable

from ..cache import default_cache_dir
from ..solve import ESTIMATE_MARGIN, GRAPH_BYTES_PER_STATE, EstimatedTooLargeError, approximate_count, byte_size, fitting_states
from ..result import StateAnswer
from ..summary import StartSummary, summarise_start, transition_graph
from ..tables import solved_table
from ..analysis.chain import expected_visits, play_chain
from ..analysis.draws import DrawValue, draw_values
from ..analysis.positions import AnnotatedPosition, annotated_positions
from ..analysis.restricted import RestrictedValue, restricted_values
from ..analysis.results_cache import ResultsCache
from ..analysis.sensitivity import Skipped, Variant, VariantSummary, sensitivity_variants, summarise_variants, variant_key
from ..analysis.skill_gap import PolicyResult, greedy_policy, skill_gap, uniform_policy
from ..analysis.usage import CardUsage, card_usage

SECTIONS = ("headline", "usage", "strength", "sensitivity", "positions", "skill")
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
    usage: CardUsage
    restricted: list[RestrictedValue]
    draws: list[DrawValue]
    variants: list[tuple[Variant, VariantSummary]]
    skipped: list[Skipped]
    positions: list[tuple[str, AnnotatedPosition]]  # (position in notation, annotation)
    skill: list[PolicyResult]
    seconds: dict[str, float] = field(default_factory=dict)
    """Per section, and "table" for the solve or load of the rules' table."""
    table_reused: bool = False


def build_report(
    rules: RuleSet, cache_dir: Path | str | None = None, *, workers: int | None = None,
    show_progress: bool = False, log: Callable[[str], None] = lambda message: None,
) -> Report:
    """Solve (or load) the rules' table and run every analysis the report shows."""
    refuse_beyond_memory(rules)
    cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
    seconds: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[name] = now - clock
        clock = now
        log(f"{name}: {seconds[name]:.1f} s")

    log("solving the rules' table (or loading it from the cache)")
    table = solved_table(rules, cache_dir, show_progress=show_progress)
    # The many solves run first, while this process holds only the table: at
    # most `workers` game graphs are in memory at once, never one more here.
    table = replace(table, result=replace(table.result, graph=None))
    lap("table")

    results = ResultsCache(cache_dir, fingerprint(rules))
    cards = tuple(table.result.action_labels[a] for a in np.unique(table.result.row_actions))
    restricted = _restricted(rules, cards, results, workers, show_progress)
    lap("strength")

    variants, skipped = sensitivity_variants(rules)
    answers = _variant_summaries(variants, cache_dir, results, workers, show_progress)
    solved = [(v, s) for v, s in zip(variants, answers) if isinstance(s, VariantSummary)]
    skipped += [s for s in answers if isinstance(s, Skipped)]
    lap("sensitivity")

    game = ChargeSparkGame(rules)
    graph = transition_graph(table)
    result = replace(table.result, graph=graph)
    table = replace(table, result=result)
    summary = summarise_start(table)
    start = result.index_of(table.start)
    answer = result.answer(table.start, game)
    lap("headline")

    row, col = result.row_strategy, result.col_strategy
    usage = card_usage(graph, result.values, row, col, start)
    visits = expected_visits(play_chain(graph, row, col), start)
    kinds = tuple(card.label for card in game.codec.bonus_kinds)
    draws = draw_values(graph, result.values, row, col, start, held_bonus_counts(game.codec, result.states), kinds)
    lap("usage")

    annotated = annotated_positions(rules, result, visits, lambda code: result.answer(code, game))
    positions = [(format_position(game.decode(a.code), rules), a) for a in annotated]
    lap("positions")

    strength = np.array([rules.damage_of(card) for card in Card])
    fallback = [int(Card.CHARGE), int(Card.BARRIER), int(Card.MOVE)]
    policies = {
        UNIFORM: (uniform_policy(graph.row_ptr), uniform_policy(graph.col_ptr)),
        GREEDY: (greedy_policy(graph.row_ptr, graph.row_actions, strength, fallback),
                 greedy_policy(graph.col_ptr, graph.col_actions, strength, fallback)),
    }
    skill = skill_gap(graph, start, row, col, policies)
    lap("skill")

    return Report(
        rules=rules, fingerprint=table.fingerprint, states=result.num_states,
        exploitability=result.max_exploitability, changed=differences_from_default(rules), summary=summary,
        start=answer, usage=usage, restricted=restricted, draws=draws, variants=solved,
        skipped=skipped, positions=positions, skill=skill, seconds=seconds, table_reused=table.reused,
    )


def refuse_beyond_memory(rules: RuleSet) -> None:
    """Stop at once, before any solve, when the analyses could not hold the
    rules' whole transition graph (they walk it: usage, draws, positions,
    skill gap), rather than after solving for half an hour."""
    estimate = estimate_reachable(rules)
    limit = fitting_states(GRAPH_BYTES_PER_STATE)
    if limit is not None and estimate > ESTIMATE_MARGIN * limit:
        raise EstimatedTooLargeError(
            f"the report walks the whole transition graph of the rules in force: about {approximate_count(estimate)}"
            f" states (~{byte_size(estimate * GRAPH_BYTES_PER_STATE)} at {GRAPH_BYTES_PER_STATE:,} bytes a state),"
            f" and the memory available holds about {approximate_count(limit)}; `solve` and `query` handle these rules"
        )


def _restricted(rules, cards, results: ResultsCache, workers, show_progress) -> list[RestrictedValue]:
    known = {card: results.get(f"without:{card}") for card in cards}
    missing = [card for card, entry in known.items() if entry is None]
    fresh = {r.card: r for r in restricted_values(rules, missing, workers=workers, show_progress=show_progress)}
    results.put_all({
        f"without:{card}": {"value": r.value, "p1_win": r.p1_win} for card, r in fresh.items() if r.error is None
    })
    return [fresh[card] if card in fresh else RestrictedValue(card, **known[card]) for card in cards]


def _variant_summaries(
    variants, cache_dir, results: ResultsCache, workers, show_progress,
) -> list[VariantSummary | Skipped]:
    # Only the numbers are kept: a variant summary otherwise costs a graph rebuild even from a cached table.
    cached = {v: results.get(variant_key(v)) for v in variants}
    todo = [v for v in variants if cached.get(v) is None]
    fresh = dict(zip(todo, summarise_variants(todo, cache_dir, workers=workers, show_progress=show_progress)))
    results.put_all({
        variant_key(v): _as_entry(s) for v, s in fresh.items() if isinstance(s, VariantSummary)
    })
    return [fresh[v] if v in fresh else _from_entry(cached[v]) for v in variants]


def _as_entry(summary: VariantSummary) -> dict:
    return {"value": summary.value, "outcomes": summary.outcomes, "expected_length": summary.expected_length,
            "seconds": summary.seconds, "length_pmf": list(summary.length_pmf)}


def _from_entry(entry: dict) -> VariantSummary:
    return VariantSummary(entry["value"], dict(entry["outcomes"]), entry["expected_length"], entry["seconds"],
                          True, tuple(entry["length_pmf"]))
