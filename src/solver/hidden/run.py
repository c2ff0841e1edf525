"""The hidden-card analysis of one rule set, from its solved open table:
which phases to solve, solving them, and the record the CLI and the report read."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rules.charge_spark.config import RuleSet
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position

from ..core.result import SolveResult
from .analysis import DEFAULT_MAX_HORIZON, DEFAULT_MAX_NODES, StartResult, Summary, solve_start, summarise
from .frequency import frequent_starts, start_frequencies
from .phase_tree import OpenGame
from .starts import phase_starts

MODEL = (
    "drawn bonus cards stay hidden until played; each hidden phase runs from a draw until every hidden card has"
    " been played or can be told, with open hands after it; values are P1's (a win, a draw counting half);"
    " gains and losses are the holder's (the player who drew; P1 where both drew)"
)


@dataclass(frozen=True)
class HiddenAnalysis:
    rules: RuleSet
    states: int
    """States of the open game's table."""
    selection: str
    """Which starts were solved: "all", or "the K most frequent"."""
    results: list[StartResult]
    frequency: list[float | None]
    """Per result: expected times per game under the reported open strategies (None: not reached)."""
    summary: Summary
    max_horizon: int
    max_nodes: int

    def as_json(self) -> dict:
        return {
            "model": MODEL,
            "states": self.states,
            "selection": self.selection,
            "max_horizon": self.max_horizon,
            "max_nodes": self.max_nodes,
            "starts": [dict(result.as_json(), per_game=times) for result, times in zip(self.results, self.frequency)],
            "summary": self.summary.as_json(),
        }


def hidden_analysis(
    rules: RuleSet, table: SolveResult, *, max_horizon: int = DEFAULT_MAX_HORIZON, max_nodes: int = DEFAULT_MAX_NODES,
    frequent: int | None = None, progress: Callable[[int, int], None] | None = None,
) -> HiddenAnalysis:
    """Solve the hidden phases of `rules` (all of them, or the `frequent` most frequent in play from the start)."""
    game = ChargeSparkGame(rules)
    open_game = OpenGame(game, table)
    start = game.encode(initial_position(rules))
    if frequent is None:
        starts = phase_starts(open_game)
        by_outcomes = start_frequencies(open_game, start)
        frequency: list[float | None] = [by_outcomes[s.outcomes][0] if s.outcomes in by_outcomes else None for s in starts]
        selection = "all"
    else:
        chosen = frequent_starts(open_game, start, frequent)
        starts = [s for s, _ in chosen]
        frequency = [times for _, times in chosen]
        selection = f"the {frequent} most frequent in play from the start"
    began = time.perf_counter()
    results = []
    for k, phase_start in enumerate(starts):
        results.append(solve_start(open_game, phase_start, max_horizon=max_horizon, max_nodes=max_nodes))
        if progress is not None:
            progress(k + 1, len(starts))
    return HiddenAnalysis(
        rules, table.table_states, selection, results, frequency, summarise(results, time.perf_counter() - began),
        max_horizon, max_nodes,
    )
