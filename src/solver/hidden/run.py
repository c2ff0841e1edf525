"""The hidden-card analysis of one rule set, from its solved open table:
which phases to solve, solving them, and the record the CLI and the report read."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from rules.charge_spark.config import RuleSet
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position

from ..core.play import Play
from ..core.result import SolveResult
from ..progress_lines import PhaseProgress
from .analysis import (
    DEFAULT_MAX_HORIZON,
    DEFAULT_MAX_NODES,
    StartResult,
    Summary,
    Warn,
    bracket_start,
    mirrored,
    strategies_mirror,
    summarise,
    warn_on_stderr,
)
from .frequency import frequent_starts, play_and_visits, start_frequencies
from .phase_tree import OpenGame, PhaseTree
from .starts import PhaseStart, phase_starts
from .wild_table import WildTable, wild_bounds

MODEL = (
    "drawn bonus cards stay hidden until played; each hidden phase runs from a draw until every hidden card has"
    " been played or can be told, with open hands after it; values are P1's (a win, a draw counting half);"
    " gains and losses are the holder's (the player who drew; P1 where both drew)"
)


LEAF_RULE = "open value where a side keeps telling"
"""How the horizon's leaves are valued, kept with each analysis: one kept without it gave a side its
open value where it could tell the position but a later draw could hide it (not a bound), and is made again."""

ALL_PHASES_UP_TO = 1_000_000
"""Tables up to this many states get every hidden phase solved (if they have no more than
`ALL_PHASES_AT_MOST`); larger ones (the printed rules have millions of drawing turns) the
`MOST_FREQUENT` that play from the start meets most often, unless told otherwise."""
ALL_PHASES_AT_MOST = 2_000
"""More phases than this and only the `MOST_FREQUENT` are solved by default: S*M at health 1 has
17,373, many needing trees of over 100,000 nodes (about a day in all, 2 cores), while play from
the start meets 4 of them."""
MOST_FREQUENT = 8


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
    game_lower: float | None = None
    """P1's value at the start of a game with every drawn card hidden, at least:
    P2's wild bound there (None: no wild table given)..."""
    game_upper: float | None = None
    """... and at most: P1's wild bound there."""

    def as_json(self) -> dict:
        return {
            "model": MODEL,
            "states": self.states,
            "selection": self.selection,
            "max_horizon": self.max_horizon,
            "max_nodes": self.max_nodes,
            "starts": [dict(result.as_json(), per_game=times) for result, times in zip(self.results, self.frequency)],
            "summary": self.summary.as_json(),
            "game_lower": self.game_lower,
            "game_upper": self.game_upper,
            "leaf_rule": LEAF_RULE,
        }

    @classmethod
    def from_json(cls, rules: RuleSet, entry: dict) -> HiddenAnalysis:
        """The analysis `as_json` wrote, for `rules` (the report's results cache keeps it so);
        KeyError for one made with another leaf rule (`LEAF_RULE`), unless it has no phase to differ in."""
        if entry["starts"] and entry.get("leaf_rule") != LEAF_RULE:
            raise KeyError("leaf_rule")
        starts = [dict(s) for s in entry["starts"]]
        frequency = [s.pop("per_game") for s in starts]
        return cls(
            rules, entry["states"], entry["selection"], [StartResult(**s) for s in starts], frequency,
            Summary(**entry["summary"]), entry["max_horizon"], entry["max_nodes"],
            entry.get("game_lower"), entry.get("game_upper"),
        )


@contextlib.contextmanager
def phases_progress() -> Iterator[Callable[[int, int], None]]:
    """A `progress` for `hidden_analysis` that says where the phases stand: a
    bar on a terminal, else a line every 30 s (S*M at health 1 has 17,373 phases)."""
    shown: list[PhaseProgress] = []

    def progress(done: int, total: int) -> None:
        if not shown:
            shown.append(PhaseProgress("hidden phases solved", total))
        shown[0].update(done)

    try:
        yield progress
    finally:
        for bar in shown:
            bar.close()


def hidden_analysis(
    rules: RuleSet, table: SolveResult, *, max_horizon: int = DEFAULT_MAX_HORIZON, max_nodes: int = DEFAULT_MAX_NODES,
    frequent: int | None = None, progress: Callable[[int, int], None] | None = None,
    play: tuple[Play, np.ndarray] | None = None, on_tree: Callable[[int, StartResult, PhaseTree], None] | None = None,
    wild: WildTable | None = None, warn: Warn = warn_on_stderr, every_phase: bool = False,
) -> HiddenAnalysis:
    """Solve the hidden phases of `rules`: all of them, or the `frequent` most
    frequent in play from the start (by default where the table is larger than
    `ALL_PHASES_UP_TO` or has more than `ALL_PHASES_AT_MOST` phases, unless
    `every_phase`). `play`: play from the start under the table's
    strategies with its states' expected visits, if known already. `on_tree(k,
    result, tree)` gets each start's last tree solved, as it is solved. `wild`: the
    rules' wild table, for both wild bounds of each start and the horizon's leaves. `warn`: told, a
    line each, of a phase whose LP ended without an optimum or whose bounds crossed (never raised)."""
    if frequent is None and not every_phase and table.table_states > ALL_PHASES_UP_TO:
        frequent = MOST_FREQUENT
    game = ChargeSparkGame(rules)
    open_game = OpenGame(game, table)
    play, visits = play or play_and_visits(open_game, game.encode(initial_position(rules)))
    by_outcomes = start_frequencies(open_game, play, visits)
    starts = phase_starts(open_game) if frequent is None else []
    of_all = ""
    if frequent is None and not every_phase and len(starts) > ALL_PHASES_AT_MOST:
        frequent, of_all = MOST_FREQUENT, f", of {len(starts):,} phases"
    if frequent is None:
        frequency: list[float | None] = [by_outcomes[s.outcomes][0] if s.outcomes in by_outcomes else None for s in starts]
        selection = "all"
    else:
        chosen = frequent_starts(open_game, by_outcomes, frequent)
        starts = [s for s, _ in chosen]
        frequency = [times for _, times in chosen]
        selection = f"the {frequent} most frequent in play from the start{of_all}"
    bounds = None if wild is None else wild_bounds(wild, open_game.decode)
    open_game.trim()  # the table's pages read in following play go before the first phase
    began = time.perf_counter()
    # A one-sided start and its seat-swapped twin have mirrored figures: the second is read off the first.
    mirror = on_tree is None and frequent is None and strategies_mirror(open_game)
    solved: dict[frozenset, int] = {}

    def seat_swapped(phase_start: PhaseStart) -> frozenset:
        """The outcomes of the start's seat-swapped twin, as `solved` keys them."""
        codes, chances = zip(*phase_start.outcomes)
        return frozenset(zip(game.swap(np.array(codes)).tolist(), chances))

    results: list[StartResult] = []
    if progress is not None:
        progress(0, len(starts))  # the clock starts before the first phase: one of minutes is reported at its end
    for k, phase_start in enumerate(starts):
        twin = solved.get(seat_swapped(phase_start)) if mirror and phase_start.holder != "both" else None
        if twin is not None:
            results.append(mirrored(results[twin], twin, open_game, phase_start))
        else:
            result, tree = bracket_start(open_game, phase_start, max_horizon=max_horizon, max_nodes=max_nodes, wild=bounds,
                                         warn=warn)
            results.append(result)
            solved[frozenset(phase_start.outcomes)] = k
            if on_tree is not None:
                on_tree(k, result, tree)
        open_game.trim()
        if wild is not None:
            wild.release_pages()
        if progress is not None:
            progress(k + 1, len(starts))
    game_bounds: tuple[float | None, float | None] = (None, None)
    if wild is not None:
        # Hidden hands from the start: P2's wild game shows P1's cards, P1's shows P2's.
        start = initial_position(rules)
        game_bounds = (wild.p2_bound(start, ()), wild.p1_bound(start, ()))
    return HiddenAnalysis(
        rules, table.table_states, selection, results, frequency, summarise(results, time.perf_counter() - began),
        max_horizon, max_nodes, *game_bounds,
    )
