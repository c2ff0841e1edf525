"""What a point is worth, and the cost curves (issue 44, items 2 and 3): each
point is P1's value in a one-seat rule set, solved values-only and warm-started
as the restricted games are, equal to a full solve of the same rules; a cheaper
card is never worse for its owner; the price rows read the curves."""

from __future__ import annotations

import json
import math
import re

import pytest
from click.testing import CliRunner

from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.analysis.price import DAMAGE, PointValue, PriceJob, point_value, price_points
from solver.cli import main
from solver.core.solve import solve_from
from solver.report.build import build_report
from solver.report.figures import TOO_STRONG, cost_curves, price_rows, price_sentence
from solver.tables import solved_table, warm_table_of

BASE = ["board=S*M", "health=1", "bonus_cards=ray", "battery_tiles=3", "disc_tiles=2"]
"""A small rule set (about 5,000 states, a fraction of a second a solve)."""
PRICED = ("headline", "price", "cost-curves")


@pytest.fixture(scope="module")
def rules() -> RuleSet:
    return apply_overrides(RuleSet(), BASE)


@pytest.fixture(scope="module")
def priced(rules, tmp_path_factory):
    """The report of BASE with the price sections only, built on an empty cache; (report, cache)."""
    cache = tmp_path_factory.mktemp("priced")
    return build_report(rules, cache, sections=PRICED, workers=1), cache


def full_value(rules: RuleSet) -> float:
    game = ChargeSparkGame(rules)
    root = game.encode(initial_position(rules))
    result = solve_from(game, [root], show_progress=False)
    assert result.max_exploitability <= 1e-9
    return result.answer(root, game).value


def test_the_points_are_each_cost_and_damage_one_down_one_up_and_two_up_for_p1_alone(rules):
    points, skipped = price_points(rules)
    assert skipped == []
    numbers = {(p.card, p.kind): [] for p in points}
    for p in points:
        numbers[(p.card, p.kind)].append(p.amount)
        assert p.rules.seat(1) == rules.seat(1)  # P2 plays by the rules
        assert not p.rules.is_seat_symmetric
    assert numbers == {("spark", "battery"): [0, 2, 3], ("lightning", "battery"): [1, 3, 4],
                       ("counter", "disc"): [1, 3, 4], ("ray", "disc"): [0, 2, 3],
                       ("spark", DAMAGE): [0, 2, 3], ("lightning", DAMAGE): [1, 3, 4], ("ray", DAMAGE): [0, 2, 3]}
    spark_free = next(p for p in points if p.setting == "p1.cost.spark.battery=0")
    assert spark_free.rules == apply_overrides(rules, ["p1.cost.spark.battery=0"]) and spark_free.better == 1
    assert spark_free.label == "P1's spark costs 0 battery (1)"


def test_a_card_with_a_cost_has_a_curve_of_it_and_a_free_one_none():
    rules = apply_overrides(RuleSet(), [*BASE, "cost.barrier.battery=1"])
    points, skipped = price_points(rules)
    assert [p.amount for p in points if p.card == "barrier"] == [0, 2, 3] and skipped == []
    rules = apply_overrides(RuleSet(), [*BASE, "cost.spark.battery=0", "damage.ray=0"])
    points, _ = price_points(rules)
    assert all(p.card != "spark" or p.kind == DAMAGE for p in points)
    assert [p.amount for p in points if (p.card, p.kind) == ("ray", DAMAGE)] == [1, 2]  # no damage below 0


def test_each_cost_curve_point_equals_a_full_solve_of_its_one_seat_rules(priced):
    report, _ = priced
    assert len(report.points) == len(price_points(report.rules)[0])
    for point, value in report.points:
        assert value.error is None and value.certificate.certified, point.label
        assert value.value == pytest.approx(full_value(point.rules), abs=1e-9), point.label


def test_a_point_equals_query_set_of_the_same_key(priced):
    report, cache = priced
    point, value = next((p, v) for p, v in report.points if p.setting == "p1.cost.lightning.battery=3")
    args = [arg for key in BASE for arg in ("--set", key)]
    answer = CliRunner().invoke(main, ["query", "start", *args, "--set", point.setting, "--json", "--no-store",
                                       "--cache-dir", str(cache / "query")])
    assert answer.exit_code == 0, answer.output
    assert json.loads(answer.stdout)["value"] == pytest.approx(value.value, abs=1e-9)


def test_a_cheaper_card_is_never_worse_for_its_owner(priced):
    report, _ = priced
    for curve in cost_curves(report):
        values = [p["value"] for p in curve["points"]]
        assert all(v is not None for v in values), curve
        if curve["number"] != DAMAGE:  # a cost only ever takes options away from the payer
            assert all(a >= b - 1e-9 for a, b in zip(values, values[1:])), curve
    assert report.summary.value == pytest.approx(0.5, abs=1e-9)


def test_the_points_are_solved_warm_from_the_rules_table_and_kept_for_the_next_report(priced, rules):
    report, cache = priced
    assert warm_table_of(rules, cache) is not None
    point = report.points[0][0]
    warm = point_value(PriceJob(point, warm_from=warm_table_of(rules, cache)))
    cold = point_value(PriceJob(point))
    assert warm.warm_started and not cold.warm_started
    assert warm.value == pytest.approx(cold.value, abs=1e-9)
    said: list[str] = []
    again = build_report(rules, cache, sections=PRICED, workers=1, log=said.append)
    assert not any("further solves to run" in line for line in said)  # every point read from the parts
    assert [(p, v.value) for p, v in again.points] == [(p, v.value) for p, v in report.points]


def test_the_price_rows_read_the_curves(priced):
    report, _ = priced
    rows = price_rows(report)
    values = {(p.card, p.kind, p.amount): v.value for p, v in report.points}
    base = report.summary.value
    for row in rows:
        damage = row["number"] == DAMAGE
        better = values[(row["card"], row["number"], row["printed"] + (1 if damage else -1))]
        worse = values[(row["card"], row["number"], row["printed"] + (-1 if damage else 1))]
        assert row["price_pp"] == pytest.approx(100 * (better - base), abs=1e-9)
        assert row["nerf_pp"] == pytest.approx(100 * (base - worse), abs=1e-9)
        share = row["p1_play_share"]
        assert share == pytest.approx(report.usage.overall[0][report.usage.cards.index(row["card"])])
        if share >= 0.01:
            assert row["nerf_pp_per_play_pct"] == pytest.approx(row["nerf_pp"] / (100 * share))
    labelled = [row for row in rows if row["label"] == TOO_STRONG]
    least = min(row["nerf_pp_per_play_pct"] for row in rows if row["nerf_pp_per_play_pct"] is not None)
    assert labelled and all(row["nerf_pp_per_play_pct"] == pytest.approx(least) for row in labelled)
    spark = next(row for row in rows if (row["card"], row["number"]) == ("spark", "battery"))
    assert price_sentence(spark) == f"one battery off spark is worth {round(spark['price_pp'], 1) + 0.0:+.1f} pp to its owner"


def test_an_uncertified_point_is_shown_as_not_certified_never_as_a_number(priced):
    from dataclasses import replace

    from solver.report.render import render_report

    report, _ = priced
    (point, value), *rest = report.points
    shaky = replace(report, points=[(point, PointValue(0.123456, max_exploitability=0.25)), *rest])
    curve = next(c for c in cost_curves(shaky) if (c["card"], c["number"]) == (point.card, point.kind))
    shown = next(p for p in curve["points"] if p["amount"] == point.amount)
    assert shown["value"] is None and shown["change_pp"] is None and not shown["certified"]
    assert shown["certificate"].startswith("not certified: epsilon-optimal within 2.50e-01")
    html = render_report(shaky)
    assert "0.1235" not in html and "0.123" not in html
    assert "not certified: epsilon-optimal within 2.50e-01" in html


def test_the_page_has_the_price_and_cost_curve_sections(priced):
    from solver.report.render import render_report

    report, _ = priced
    html = render_report(report)
    assert '<section id="price">' in html and '<section id="cost-curves">' in html
    assert html.count('class="cost-curve"') == len(cost_curves(report))
    assert 'id="price-finding"' in html and "to its owner" in html


def test_the_rules_table_serves_as_the_printed_point(priced, rules):
    report, cache = priced
    table = solved_table(rules, cache)
    assert table.reused
    for curve in cost_curves(report):
        printed = [p for p in curve["points"] if p["printed"]]
        assert len(printed) == 1 and printed[0]["amount"] == curve["printed"]
        assert printed[0]["value"] == pytest.approx(report.summary.value) and math.isfinite(printed[0]["value"])


def test_the_most_valuable_point_names_every_number_tied_for_it():
    from solver.report.figures import most_valuable

    rows = [{"card": c, "number": "battery", "price_pp": v} for c, v in (("a", 50.0), ("b", 12.0), ("c", 50.0 - 1e-9),
                                                                         ("d", None))]
    assert [row["card"] for row in most_valuable(rows)] == ["a", "c"]
    assert most_valuable([{"card": "d", "price_pp": None}]) == []


def test_a_json_file_that_cannot_be_written_is_refused_before_anything_is_solved(tmp_path):
    args = [arg for key in BASE for arg in ("--set", key)]
    result = CliRunner().invoke(main, ["report", *args, "--out", str(tmp_path / "r.html"), "--cache-dir",
                                       str(tmp_path / "cache"), "--json", str(tmp_path / "missing" / "r.json")])
    assert result.exit_code == 2 and "r.json" in result.stderr
    assert not (tmp_path / "cache").exists() and not (tmp_path / "r.html").exists()


def test_an_interrupted_price_report_resumes_from_its_parts(tmp_path, monkeypatch):
    """The points solved before an interruption are kept in the parts file and not solved again."""
    import solver.report.solves as solves

    solved = []
    real = solves.point_value

    def interrupted_at_the_third(job):
        if len(solved) == 2:
            raise KeyboardInterrupt
        solved.append(job.point.setting)
        return real(job)

    monkeypatch.setattr(solves, "point_value", interrupted_at_the_third)
    parts = tmp_path / "parts.json"
    args = ["report", *[arg for key in BASE for arg in ("--set", key)], "--sections", "price", "--workers", "1",
            "--cache-dir", str(tmp_path / "cache"), "--parts", str(parts)]
    result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "first.html")])
    assert result.exit_code == 130 and "run the report again to resume" in result.stderr
    total = int(re.search(r"solve 1 of (\d+)", result.stderr).group(1))
    kept = [key for key in json.loads(parts.read_text())["entries"] if key.startswith("price:")]
    assert len(kept) == 2

    monkeypatch.setattr(solves, "point_value", real)
    result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "second.html"), "--json",
                                       str(tmp_path / "second.json")])
    assert result.exit_code == 0, result.output
    assert f"solve 1 of {total - 2} " in result.stderr
    figures = json.loads((tmp_path / "second.json").read_text())
    assert "price" in figures and "cost_curves" not in figures  # the sections left out are left out here too
    assert all(row["price_pp"] is not None and row["nerf_pp"] is not None for row in figures["price"])


def test_a_point_that_could_not_be_solved_says_so_on_its_curve_and_in_its_row(priced):
    from dataclasses import replace

    from solver.report.render import render_report

    report, _ = priced
    (point, _), *rest = report.points
    failed = replace(report, points=[(point, PointValue(float("nan"), "GraphTooLargeError: too large")), *rest])
    shown = next(p for c in cost_curves(failed) for p in c["points"]
                 if (c["card"], c["number"], p["amount"]) == (point.card, point.kind, point.amount))
    assert shown["value"] is None and shown["certificate"] == "could not be solved: GraphTooLargeError: too large"
    html = render_report(failed)
    assert ">not solved</text>" in html and "could not be solved: GraphTooLargeError: too large" in html


def test_a_running_report_says_how_many_price_points_are_solved(rules, tmp_path):
    from solver.report.render import render_report

    partials = []
    finished = build_report(rules, tmp_path, sections=("headline", "price"), workers=1, on_partial=partials.append)
    total = len(price_points(rules)[0])
    counts = [int(re.match(rf"(\d+) of {total} price points solved so far", p.pending["price"]).group(1))
              for p in partials if p.pending.get("price", "still to come") != "still to come"]
    assert counts and counts == sorted(counts) and counts[-1] <= total
    assert all(len(p.points) == n for p, n in zip(
        [p for p in partials if p.pending.get("price", "still to come") != "still to come"], counts))
    page = render_report(partials[-1])
    assert 'id="price-pending"' in page and "price points solved so far" in page
    assert "price" not in finished.pending and len(finished.points) == total
