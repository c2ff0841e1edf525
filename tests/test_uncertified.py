"""A certificate over its bound is never silent: `solve` exits 3 naming the
states, and every figure read from such a table carries the mark."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

import solver.core.solve
from solver.certificate import CERTIFICATE_BOUND, certificate_status
from solver.cli import main

SMALL = ["--set", "board=SM", "--set", "health=1", "--set", "bonus_cards="]
EPSILON = 1e-3  # what an epsilon-optimal strategy of an Everett game leaves, about


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def loosened(result, states: int = 2):
    """`result` with P2's guarantee loosened by `EPSILON` at its first `states` states:
    what a solve that is epsilon-optimal there reports."""
    p2 = np.array(result.p2_guarantee, copy=True)
    p2[:states] += EPSILON * np.arange(1, states + 1) / states
    return dataclasses.replace(result, p2_guarantee=p2)


@pytest.fixture
def uncertified_solves(monkeypatch):
    """Every solve from here on reports strategies over the bound at two states."""
    real = solver.core.solve.solve_from
    monkeypatch.setattr(solver.core.solve, "solve_from", lambda *args, **kw: loosened(real(*args, **kw)))


def test_certified_means_at_most_the_bound():
    assert certificate_status(CERTIFICATE_BOUND).certified
    assert certificate_status(0.0).text.startswith("certified")
    status = certificate_status(2.5e-1, 3)
    assert not status.certified and status.epsilon == 2.5e-1
    assert status.text == "not certified: epsilon-optimal within 2.50e-01 (bound 1e-09; 3 states over the bound)"
    assert status.as_json() == {"certified": False, "epsilon": 2.5e-1, "states_over_bound": 3}
    assert certificate_status(2.5e-1).text.endswith("(bound 1e-09)")  # a table stored without the count
    unknown = certificate_status(float("nan"))
    assert not unknown.certified and not unknown.known and "unknown" in unknown.text


def test_solve_of_an_uncertified_table_exits_3_naming_the_states_and_stores_it(uncertified_solves,
                                                                              private_table_cache):
    solved = run("solve", *SMALL)
    assert solved.exit_code == 3, solved.output
    assert "NOT CERTIFIED, bound 1e-09" in solved.stdout
    assert "not certified: epsilon-optimal within 1.00e-03 (bound 1e-09; 2 states over the bound)" in solved.stdout
    named = [line for line in solved.stdout.splitlines() if "  at h" in line]
    assert [line.split()[0] for line in named] == ["1.00e-03", "5.00e-04"]  # the worst first
    assert "(not certified)" in solved.stdout.splitlines()[3]
    assert len(list(private_table_cache.glob("*.npz"))) == 1  # stored all the same
    again = run("solve", *SMALL)  # read back: the mark comes from the stored table's own certificate
    assert again.exit_code == 3 and "already solved" in again.stdout
    assert "2 states over the bound" in again.stdout


def test_query_of_an_uncertified_table_shows_the_mark(uncertified_solves):
    assert run("solve", *SMALL).exit_code == 3
    text = run("query", "start", *SMALL)
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    value = next(i for i, line in enumerate(lines) if line.startswith("value "))
    assert lines[value].endswith("(to P1) (not certified)")
    assert lines[value + 1] == ("certificate  NOT CERTIFIED: epsilon-optimal within 1.00e-03 (bound 1e-09;"
                                " 2 states over the bound)")  # the count as the stored table's metadata records it
    answer = json.loads(run("query", "start", *SMALL, "--json").stdout)
    assert answer["certified"] is False and answer["epsilon"] == pytest.approx(EPSILON)
    assert answer["states_over_bound"] == 2


def test_a_certified_table_is_not_marked():
    solved = run("solve", *SMALL)
    assert solved.exit_code == 0 and "NOT CERTIFIED" not in solved.stdout
    assert "not certified" not in run("query", "start", *SMALL).stdout
    answer = json.loads(run("query", "start", *SMALL, "--json").stdout)
    assert answer["certified"] is True and answer["epsilon"] <= CERTIFICATE_BOUND


def test_sweep_rows_of_an_uncertified_table_show_the_mark(uncertified_solves, tmp_path):
    import csv
    import io

    from rules.charge_spark.config import RuleSet, apply_overrides
    from solver.sweep import CsvRows, grid_points, parse_grid, solve_row
    from solver.sweep_page import sweep_page

    rules = apply_overrides(RuleSet(), [a for a in SMALL if a != "--set"])
    row = solve_row(rules, str(tmp_path / "cache"), None)
    assert row.ok and not row.certificate.certified
    stream = io.StringIO()
    CsvRows(stream, []).write(row)
    written = next(csv.DictReader(io.StringIO(stream.getvalue())))
    assert float(written["max_exploitability"]) == pytest.approx(EPSILON)
    assert written["certificate"] == ("not certified: epsilon-optimal within 1.00e-03 (bound 1e-09; 2 states over"
                                      " the bound)")
    axes = [parse_grid("board=SM")]
    page = sweep_page("t", axes, grid_points(rules, axes), [row])
    assert "<td>0.5 (not certified)</td>" in page
    assert "epsilon-optimal within 1.00e-03" in page


# --- the report ------------------------------------------------------------------

TINY = ("board=SM", "health=1", "bonus_cards=")
STRENGTH_ONLY = ("headline", "strength")


def tiny_rules():
    from rules.charge_spark.config import RuleSet, apply_overrides

    return apply_overrides(RuleSet(), list(TINY))


@pytest.fixture
def spark_barred_is_uncertified(monkeypatch):
    """The restricted game without spark reports strategies over the bound; every other solve is certified."""
    real = solver.core.solve.solve_start_figures

    def figures(game, *args, **kw):
        answer = real(game, *args, **kw)
        barred = getattr(game, "banned", None)
        if barred is not None and game.action_labels[barred] == "spark":
            return dataclasses.replace(answer, max_exploitability=EPSILON)
        return answer

    monkeypatch.setattr(solver.core.solve, "solve_start_figures", figures)


def _row_of(html: str, table_id: str, label: str) -> str:
    table = html.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    return next(row for row in table.split("<tr>") if f'<td class="text">{label}</td>' in row)


def test_a_restricted_game_not_certified_shows_no_value_and_no_finding(spark_barred_is_uncertified, tmp_path):
    from solver.analysis.results_cache import ResultsCache
    from solver.report.build import build_report
    from solver.report.render import render_report

    rules = tiny_rules()
    said: list[str] = []
    report = build_report(rules, tmp_path, sections=STRENGTH_ONLY, workers=1, log=said.append)
    assert any("P1 may not play spark (not certified: epsilon-optimal within 1.00e-03" in line for line in said)
    by_card = {x.card: x for x in report.restricted}
    assert not by_card["spark"].certificate.certified and by_card["spark"].max_exploitability == EPSILON
    assert all(x.certificate.certified for card, x in by_card.items() if card != "spark")
    html = render_report(report)
    row = _row_of(html, "restricted-table", "spark")
    assert "not certified: epsilon-optimal within 1.00e-03" in row
    assert re.findall(r"<td>[-+0-9.,]+( pp)?</td>", row.split("not certified")[0]) == []  # no value, no change
    findings = html.split('id="findings"', 1)[1].split("</div>", 1)[0]
    assert "their restricted game not certified: spark" in findings
    assert "spark" not in findings.split("Left out of this comparison")[0]  # no finding drawn from it
    chart = next(svg for svg in html.split("<svg")[1:] if "may not play the card" in svg)
    assert ">charge<" in chart and ">spark<" not in chart  # in no chart either
    # The parts keep each solve's certificate: a second report reads it back, not solving again.
    kept = ResultsCache(tmp_path, report.fingerprint).get("without:spark")
    assert kept["max_exploitability"] == EPSILON
    again = build_report(rules, tmp_path, sections=STRENGTH_ONLY, workers=1)
    assert [(x.card, x.max_exploitability) for x in again.restricted] == [
        (x.card, x.max_exploitability) for x in report.restricted]


def _variant_summary(baseline, value: float, max_exploitability: float | None):
    """A variant's summary with figures unlike the baseline's, so that any of them shown is seen."""
    from solver.analysis.sensitivity import VariantSummary

    outcomes = {label: 0.0 for label in baseline.outcomes}
    first, second = [label for label in outcomes if label != "unending"][:2]
    outcomes.update({first: 0.61, second: 0.39})
    return dataclasses.replace(VariantSummary.of(baseline, 1.0, False, max_exploitability=max_exploitability),
                               value=value, outcomes=outcomes, expected_length=7.25)


def test_a_variant_not_certified_or_kept_without_its_certificate_shows_no_number(tmp_path):
    from solver.analysis.sensitivity import sensitivity_variants
    from solver.report.build import build_report, findings_variant
    from solver.report.entries import variant_entry, variant_from
    from solver.report.render import render_report

    rules = tiny_rules()
    report = build_report(rules, tmp_path, sections=("headline",), workers=1)
    variants, _ = sensitivity_variants(rules)
    first = findings_variant(variants)
    other = next(v for v in variants if v != first)
    uncertified = _variant_summary(report.summary, 0.6125, EPSILON)
    kept = variant_entry(uncertified)
    assert variant_from(json.loads(json.dumps(kept))).max_exploitability == EPSILON  # the parts round trip
    old = variant_from({key: value for key, value in kept.items() if key != "max_exploitability"})
    assert old.certificate.text.startswith("not certified: certificate unknown")
    shown = dataclasses.replace(report, sections=("headline", "sensitivity"),
                                variants=[(first, uncertified), (other, old)])
    html = render_report(shown)
    for variant, text in ((first, "epsilon-optimal within 1.00e-03"), (other, "certificate unknown")):
        row = _row_of(html, "sensitivity-table", variant.label)
        assert text in row and "0.6125" not in row and "61.0%" not in row and "7.2" not in row
    findings = html.split('id="findings"', 1)[1].split("</div>", 1)[0]
    assert "no figure of it is given" in findings and "0.6125" not in findings
    assert "Left out of these findings, their solve not certified" in findings  # what a change does to play
    assert "never end" not in findings and "61.0%" not in findings
    assert "Change in P1" not in html.split('id="sensitivity"', 1)[1]


def test_a_variant_solved_for_the_report_keeps_its_certificate(tmp_path):
    from solver.analysis.sensitivity import VariantJob, sensitivity_variants, summarise_variant

    variants, _ = sensitivity_variants(tiny_rules())
    variant = next(v for v in variants if v.start is None and v.same_game_as is None)
    summary = summarise_variant(VariantJob(variant, str(tmp_path)))
    assert summary.max_exploitability is not None and summary.certificate.certified


def test_the_report_headline_of_an_uncertified_table_shows_the_mark(uncertified_solves, tmp_path):
    from solver.report.build import build_report
    from solver.report.render import render_report

    said: list[str] = []
    report = build_report(tiny_rules(), tmp_path, sections=("headline",), workers=1, log=said.append)
    assert "the rules' table is not certified: epsilon-optimal within 1.00e-03 (bound 1e-09)" in said
    html = render_report(report)
    assert not report.certificate.certified
    assert 'id="uncertified"' in html and "(not certified)" in html.split('id="value"', 1)[1].split("</tr>", 1)[0]
    assert "not certified: epsilon-optimal within 1.00e-03" in html.split('id="certificate"', 1)[1][:200]


# --- the explorer ----------------------------------------------------------------


def test_the_explorer_shows_the_mark_on_the_page_in_api_query_and_compare(uncertified_solves, tmp_path):
    from starlette.testclient import TestClient

    from rules.charge_spark.config import RuleSet, apply_overrides
    from solver.explore.answers import Explorer
    from solver.explore.app import create_app
    from solver.tables import solved_table

    rules = apply_overrides(RuleSet(), [a for a in SMALL if a != "--set"])
    cache = str(tmp_path / "cache")
    solved_table(rules, cache)
    client = TestClient(create_app(Explorer(rules, cache)))
    try:
        page = client.get("/", params={"position": "start"}).text
        assert "(not certified)" in page.split('id="value-p1"', 1)[1][:200]
        assert "not certified: epsilon-optimal within 1.00e-03" in page.split('id="certificate"', 1)[1][:200]
        answer = client.get("/api/query", params={"position": "start"}).json()
        assert answer["certified"] is False and answer["epsilon"] == pytest.approx(EPSILON)
        items = [a for a in SMALL if a != "--set"]
        compared = client.get("/api/compare", params=[(side, item) for side in "ab" for item in items]).json()
        assert compared["a"]["certified"] is False and compared["b"]["epsilon"] == pytest.approx(EPSILON)
        assert compared["a"]["states_over_bound"] == 2
        html = client.get("/compare", params=[(side, item) for side in "ab" for item in items]).text
        assert 'id="certificate-a"' in html and 'id="certificate-b"' in html
    finally:
        client.app.state.rule_sets.solves.stop()


@pytest.mark.slow
def test_a_real_everett_game_is_solved_uncertified_and_said_so(tmp_path):
    """Spark dealing 2 on the smallest board: a side has no stationary optimal strategy there, so
    no solve can certify it to 1e-9 (about two minutes)."""
    rules = ["--set", "board=S*M", "--set", "health=1", "--set", "damage.spark=2", "--cache-dir", str(tmp_path)]
    solved = run("solve", *rules)
    assert solved.exit_code == 3, solved.output
    assert "NOT CERTIFIED" in solved.stdout and "states over the bound" in solved.stdout
    assert list(tmp_path.glob("*.npz"))
    answer = json.loads(run("query", "start", *rules, "--json").stdout)
    assert answer["certified"] is False and answer["epsilon"] > CERTIFICATE_BOUND
