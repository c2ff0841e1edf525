"""Hidden phases' bounds checked against their exact values (used by test_hidden_soundness).

A phase's exact value is taken from leaves at the payoff's floor and ceiling
alone (`Phase(open_leaves=False)`, no wild bounds): those bounds need no
argument, so the horizon grown until they meet gives the value whatever the
other leaf rules claim. Every horizon's bracket of the analysis, without and
with the wild bounds, and the wild bounds themselves, must hold it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from solver.core.sequence_form import solve_tree
from solver.hidden.analysis import EXACT, _root_bounds, solve_start
from solver.hidden.phase_tree import OpenGame, Phase, PhaseTree, WildBounds
from solver.hidden.starts import PhaseStart, phase_starts
from solver.hidden.wild_table import solved_wild_table, wild_bounds
from solver.tables import solved_table

TOLERANCE = 1e-8
"""How far outside a bracket an exact value may lie: the LPs' tolerances (1e-10 on payoffs in [0, 1]), with room."""


def open_game_of(overrides: tuple[str, ...], cache: Path) -> OpenGame:
    rules = apply_overrides(RuleSet(), list(overrides))
    return OpenGame(ChargeSparkGame(rules), solved_table(rules, cache).result)


def wild_of(open_game: OpenGame, cache: Path) -> WildBounds:
    table = solved_wild_table(open_game.game.rules, open_game.table.states, cache)
    return wild_bounds(table, open_game.decode)


def bracket_of(phase_tree: PhaseTree) -> tuple[float, float]:
    """The tree's bracket: the root's average at horizon 0, else both LPs."""
    if phase_tree.horizon == 0:
        return _root_bounds(phase_tree)
    return solve_tree(phase_tree.tree, phase_tree.lower).value, solve_tree(phase_tree.tree, phase_tree.upper).value


def exact_value(open_game: OpenGame, start: PhaseStart, max_nodes: int) -> tuple[float, int] | None:
    """(the phase's value, the horizon it took) from floor and ceiling leaves alone; None
    where the tree outgrows `max_nodes` before the bounds meet."""
    phase = Phase(open_game, list(start.worlds), open_leaves=False)
    for horizon in range(0, 60):
        phase_tree = phase.tree(horizon)
        if len(phase_tree.tree) > max_nodes:
            return None
        low, high = bracket_of(phase_tree)
        if high - low <= EXACT or phase_tree.horizon_leaves == 0:
            return (low + high) / 2, horizon
    return None


@dataclass
class Soundness:
    """What a sweep checked, and the worst it found."""

    starts: int = 0
    brackets: int = 0
    """Horizon brackets checked (each start at every horizon up to its exact one, without and with wild bounds)."""
    skipped: int = 0
    """Starts whose exact value outgrew the node cap."""
    margin: float = 1.0
    """The smallest distance of an exact value inside its bracket (negative: outside)."""
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """What the analysis warned of (an LP without an optimum, bounds crossed)."""

    def check(self, what: str, exact: float, low: float, high: float) -> None:
        margin = min(exact - low, high - exact)
        self.margin = min(self.margin, margin)
        if margin < -TOLERANCE:
            self.failures.append(f"{what}: exact {exact!r} outside [{low!r}, {high!r}]")


def sweep(open_game: OpenGame, wild: WildBounds | None, max_nodes: int, found: Soundness | None = None) -> Soundness:
    """Every start of the open game whose exact value fits `max_nodes`: every horizon's
    bracket (without, and with `wild` if given), the analysis's result, and the wild bounds."""
    found = found or Soundness()
    rules = open_game.game.rules
    for k, start in enumerate(phase_starts(open_game)):
        exact = exact_value(open_game, start, max_nodes)
        if exact is None:
            found.skipped += 1
            continue
        value, last = exact
        found.starts += 1
        name = f"{rules.board} {rules.bonus_cards} start {k}"
        for valuation in (None, wild) if wild is not None else (None,):
            phase = Phase(open_game, list(start.worlds), wild=valuation)
            tag = "wild" if valuation is not None else "open"
            for horizon in range(0, last + 1):
                found.check(f"{name} H{horizon} {tag}", value, *bracket_of(phase.tree(horizon)))
                found.brackets += 1
            result = solve_start(open_game, start, max_nodes=max_nodes, wild=valuation, warn=found.warnings.append)
            found.check(f"{name} result {tag}", value, result.lower, result.upper)
            if valuation is not None:
                assert result.relaxed_lower is not None and result.relaxed_upper is not None
                found.check(f"{name} wild bounds", value, result.relaxed_lower, result.relaxed_upper)
    return found
