"""The size estimate against exact enumeration, and the guard that refuses before enumerating."""

from __future__ import annotations

import re
import time

import pytest
from click.testing import CliRunner

from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.notation import parse_position
from rules.charge_spark.size import estimate_reachable
from rules.charge_spark.state import initial_position
from solver.cli import main
from solver.core.graph import reachable_states
from solver.core.resources import layered_bytes_per_state
from solver.core.solve import refuse_if_estimate_too_large

STATED_FACTOR = 1.5  # the module's measured worst is 1.46x, and it never undercounts


def rules_with(*overrides: str) -> RuleSet:
    return apply_overrides(RuleSet(), list(overrides))


def exact_count(rules: RuleSet, position=None) -> int:
    game = ChargeSparkGame(rules)
    position = initial_position(rules) if position is None else position
    return int(reachable_states(game, [game.encode(position)]).size)


@pytest.mark.parametrize("overrides", [
    ("board=S.M", "health=1"),
    ("board=SM", "health=2"),
    ("board=S*M", "health=1", "bonus_cards=copy,copy,ray"),
    ("board=S*M", "health=1", "battery_tiles=2", "start_battery=1"),
    ("board=S*M", "health=1", "bonus_cards=copy"),
    ("board=S*M", "health=1", "bonus_cards=ray", "contested_draw=nobody"),
    ("board=S.M", "health=3", "damage.lightning=3", "recovery=battery"),
    ("board=SM", "health=4", "damage.spark=2", "counter_reflect=3", "clash=difference"),
    # One-seat keys: each player followed by its own seat's numbers.
    ("board=S.M", "health=3", "p1.damage.lightning=3", "p2.cost.spark.battery=0", "p2.start_battery=1"),
    ("board=S*M", "health=1", "bonus_cards=ray,recovery", "p1.recovery=battery", "p2.barrier_reduce=0"),
])
def test_estimate_is_within_the_stated_factor_of_the_exact_count(overrides):
    rules = rules_with(*overrides)
    exact = exact_count(rules)
    estimate = estimate_reachable(rules)
    assert exact <= estimate <= STATED_FACTOR * exact, (overrides, exact, estimate)
    refuse_if_estimate_too_large(estimate, "from the start", max_states=exact)  # fits: never refused up front


def test_estimate_from_a_position_other_than_the_start():
    rules = rules_with("board=S*M", "health=1")
    position = parse_position("b1 rest=spark / rest=move bonus=ray", rules)
    exact = exact_count(rules, position)
    assert exact <= estimate_reachable(rules, position) <= STATED_FACTOR * exact


def test_estimate_grows_with_health_and_board_length():
    by_health = [estimate_reachable(rules_with(f"health={h}")) for h in (1, 2, 3, 4, 6, 10, 40)]
    assert by_health == sorted(by_health) and len(set(by_health)) == len(by_health)
    by_board = [estimate_reachable(rules_with(f"board={b}")) for b in ("SM", "S.M", "S*M", "S.*M", "S.*.*M", "S.*.*.M")]
    assert by_board == sorted(by_board) and len(set(by_board)) == len(by_board)


def test_estimate_of_the_default_rules_is_close_and_quick():
    started = time.perf_counter()
    estimate = estimate_reachable(RuleSet())
    assert time.perf_counter() - started < 5  # well under a second when the machine is free
    assert 49_383_601 <= estimate <= 1.01 * 49_383_601  # the exact count, enumerated once (18 min)


@pytest.mark.parametrize("command", [["solve"], ["query", "start"]])
def test_a_rule_set_far_too_large_is_refused_at_once_in_one_line(command):
    started = time.perf_counter()
    result = CliRunner().invoke(main, [*command, "--set", "health=40"])
    assert time.perf_counter() - started < 10  # about a second; enumeration would take hours
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
    line = result.stderr
    assert line.startswith("charge-spark: error: the rules in force would need about 5.8e9 reachable states")
    assert re.search(rf"\(~[0-9.]+ [GT]B at {layered_bytes_per_state():,} bytes a state\)", line)
    assert "(--max-states sets another limit)" in line


def test_max_states_is_honoured_before_enumerating():
    result = CliRunner().invoke(main, ["query", "start", "--set", "board=S*M", "--set", "health=1", "--max-states", "1000"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "would need about 220,000 reachable states from the start" in result.stderr
    assert "the limit is --max-states 1,000" in result.stderr


def test_a_rule_set_that_fits_is_not_refused_even_at_a_tight_limit():
    rules = ["--set", "board=S.M", "--set", "health=1"]
    exact = exact_count(rules_with("board=S.M", "health=1"))
    result = CliRunner().invoke(main, ["solve", *rules, "--max-states", str(exact)])
    assert result.exit_code == 0, result.output
    assert f"states       {exact:,}" in result.output


def test_a_report_whose_rank_by_rank_solve_would_not_fit_stops_before_any_solve(monkeypatch, tmp_path):
    import solver.core.resources

    # 1 GB: far short of the printed rules' rank-by-rank solve, even with its figures on disk.
    monkeypatch.setattr(solver.core.resources, "available_memory", lambda: 1e9)
    started = time.perf_counter()
    result = CliRunner().invoke(main, ["report", "--out", str(tmp_path / "r.html"), "--cache-dir", str(tmp_path)])
    assert time.perf_counter() - started < 20  # no solve was started
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "the report solves the rules in force rank by rank: about 50,000,000 states" in result.stderr
    assert not (tmp_path / "r.html").exists()
