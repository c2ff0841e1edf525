"""The HTML report: every section, numbers that agree with `query --json`,
escaped user text, an atomic write, and a real browser that draws it cleanly."""

from __future__ import annotations

import json
import re
import time
from html import unescape

import pytest
from click.testing import CliRunner

from browser import find_chromium, inked_fraction, screenshot
from rules.charge_spark.config import RuleSet, apply_overrides, fingerprint
from solver.cli import main
from solver.report.build import PART_LABELS, WILD_PART

# A tiny rule set that keeps two bonus cards and a star: every section has
# something to show, and each of its ~30 solves takes about a second.
SMALL = ["--set", "board=S*M", "--set", "health=1", "--set", "battery_tiles=2", "--set", "disc_tiles=2",
         "--set", "bonus_cards=ray,copy"]
HOSTILE_NAME = "<script>alert(1)</script> \"quoted\" 'single'"
SECTIONS = ("findings", "headline", "assumptions", "usage", "strength", "price", "cost-curves", "sensitivity", "positions",
            "skill", "hidden")


def run(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The report of SMALL, named with markup and quotes; (html, path, cache dir, seconds). Its figures as
    JSON (`--json`) are beside it, in report.json."""
    base = tmp_path_factory.mktemp("report")
    out, cache = base / "report.html", base / "tables"
    started = time.perf_counter()
    result = run("report", *SMALL, "--set", f"name={HOSTILE_NAME}", "--out", str(out), "--cache-dir", str(cache),
                 "--json", str(base / "report.json"))
    assert result.exit_code == 0, result.output
    return out.read_text(encoding="utf-8"), out, cache, time.perf_counter() - started


@pytest.fixture(scope="module")
def start_answer(report):
    _, _, cache, _ = report
    result = run("query", "start", *SMALL, "--json", "--cache-dir", str(cache))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def cell(html: str, element_id: str) -> str:
    return unescape(re.search(rf'id="{element_id}">([^<]*)<', html).group(1))


def test_every_section_is_there_with_charts(report):
    html = report[0]
    for section in SECTIONS:
        assert f'id="{section}"' in html, section
    charts = [unescape(t) for t in re.findall(r"<svg [^>]*class=\"chart\"><title>([^<]+)</title>", html)]
    assert len(charts) >= 10
    for title in ("How long games last", "Share of P1's plays", "card choice by turn", "may not play",
                  "Value of drawing", "Change in P1's value", "knock-out", "Expected game length", "never ends",
                  "How much play moves", "P(the simple policy wins)"):
        assert any(title in t for t in charts), title
    assert "Opening: value to P1 after each pair of cards" in html
    assert "--set cost.lightning.battery=3" in html  # the findings box answers "what if Lightning costs 3"


def test_the_findings_box_names_every_card_tied_for_strongest(report):
    html = report[0]
    table = re.search(r'id="restricted-table">(.*?)</table>', html, re.S).group(1)
    values = {card: float(v) for card, v in re.findall(r'<td class="text">([a-z]+)</td><td>([0-9.]+)</td>', table)}
    lowest = sorted(card for card, v in values.items() if v == min(values.values()))
    assert len(lowest) > 1  # in SMALL, P1 loses for sure without charge, barrier or lightning
    line = unescape(re.search(r'<li id="strongest">(.*?)</li>', html, re.S).group(1))
    assert "Most indispensable cards</strong> (tied)" in line
    named = re.search(r"\(tied\): (.*?) —", line).group(1).replace(" and ", ", ").split(", ")
    assert sorted(named) == lowest


def test_the_findings_box_gives_the_lightning_variants_median_length_as_its_own_report_does(report, tmp_path):
    from rules.charge_spark.config import RuleSet, apply_overrides, fingerprint
    from solver.analysis.results_cache import ResultsCache
    from solver.analysis.sensitivity import sensitivity_variants, variant_key
    from solver.report.build import findings_variant

    html, _, cache, _ = report
    line = unescape(re.search(r"<li><strong>If lightning costs 3 battery</strong>(.*?)</li>", html, re.S).group(1))
    median, beyond = re.search(
        r"half of all games are over by turn (\d+) \(now \d+\)\s+and ([0-9.]+%) go past", line).groups()
    alone = run("report", *SMALL, "--set", "cost.lightning.battery=3", "--sections", "headline",
                "--out", str(tmp_path / "l3.html"), "--cache-dir", str(cache))
    assert alone.exit_code == 0, alone.output
    headline = (tmp_path / "l3.html").read_text()
    assert re.search(rf"half of all games are over by turn</th><td>{median}</td>", headline)
    assert re.search(rf"P\(still going after 200 turns\)</th><td>{re.escape(beyond)}</td>", headline)
    # Every variant of the rules (not another start) has its length distribution and card usage, for its row's
    # median and shifts; the box's among them.
    rules = apply_overrides(RuleSet(), [SMALL[i + 1] for i in range(0, len(SMALL), 2)] + [f"name={HOSTILE_NAME}"])
    variants = sensitivity_variants(rules)[0]
    results = ResultsCache(cache, fingerprint(rules))
    with_length = [v for v in variants if results.get(variant_key(v))["length_pmf"]]
    assert findings_variant(variants) in with_length
    assert with_length == [v for v in variants if v.same_game_as is None]
    assert all(results.get(variant_key(v))["play"] is not None for v in with_length)


def test_findings_split_ties_from_values_that_differ():
    from types import SimpleNamespace

    from solver.analysis.restricted import RestrictedValue
    from solver.report.render import findings

    def box(*values):
        restricted = [RestrictedValue(f"c{i}", v, max_exploitability=0.0) for i, v in enumerate(values)]
        summary = SimpleNamespace(by=lambda kind: 0.0)
        return findings(SimpleNamespace(restricted=restricted, variants=[], usage=None, summary=summary))

    found = box(0.3, 0.1, 0.1 + 1e-12, 0.45, 0.45)
    assert (found["strongest_cards"], found["least_cards"]) == ("c1 and c2", "c3 and c4")
    found = box(0.2, 0.2 + 1e-6, 0.4)
    assert (found["strongest_cards"], found["least_cards"]) == ("c0", "c2")
    found = box(0.5, 0.5, 0.5)
    assert (found["strongest_cards"], found["least"]) == ("c0, c1 and c2", [])


def test_headline_numbers_agree_with_query(report, start_answer):
    html = report[0]
    assert float(cell(html, "value")) == pytest.approx(start_answer["value"], abs=1e-6)
    assert float(cell(html, "p1-win")) == pytest.approx(start_answer["p1_win"], abs=1e-6)
    assert float(cell(html, "p2-win")) == pytest.approx(start_answer["p2_win"], abs=1e-6)
    assert cell(html, "fingerprint") == start_answer["fingerprint"]
    for label, p in start_answer["outcomes"].items():
        assert re.search(rf"<th class=\"text\">{re.escape(label)}</th><td class=\"outcome\">{p:.6f}</td>", html), label


def test_the_headline_stalls_agree_with_query(report, start_answer):
    html = report[0]
    shown = re.search(r'id="stalls-table">(.*?)</table>', html, re.S)
    assert (shown is not None) == bool(start_answer["stalls"]) == ('id="stalls-finding"' in html)
    if shown:
        rows = re.findall(r'<tr><td class="text"><code>([^<]*)</code></td><td>([^<]*)</td>', shown.group(1))
        assert [unescape(text) for text, _ in rows] == [s["position"] for s in start_answer["stalls"]]
        assert [share for _, share in rows] == [f"{100 * s['share']:.1f}%" for s in start_answer["stalls"]]
    assert cell(html, "mean-length") == f"{start_answer['length']['mean']:,.1f}"


def test_the_headline_shows_where_games_stall_as_a_finding(running_report):
    from dataclasses import replace

    from solver.analysis.stalls import Stall
    from solver.report.render import render_report

    _, finished, _ = running_report
    stalled = [
        ("h1 b1 d0 p0 rest=charge / h1 b1 d0 p0 rest=charge", Stall(11, 0.425, 0.25, 2e-5, "epsilon-optimal", 12)),
        ("h1 b0 d0 p0 rest=barrier / h1 b0 d0 p0 rest=barrier", Stall(12, 1.0, 0.0, 0.5, "standoff", 1)),
    ]
    html = render_report(replace(finished, stalls=stalled))
    finding = unescape(re.search(r'<li id="stalls-finding">(.*?)</li>', html, re.S).group(1))
    assert "Games can stall</strong> at <code>h1 b1 d0 p0 rest=charge / h1 b1 d0 p0 rest=charge</code>" in finding
    assert "42.5% of the expected game length" in finding and "0.250 a turn" in finding
    assert "a turn (epsilon-optimal); 1 more loop in section 1" in finding
    table = re.search(r'id="stalls-table">(.*?)</table>', html, re.S).group(1)
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr><td.*?</tr>", table, re.S)]
    assert [cells[1:] for cells in rows] == [["42.5%", "0.2500", "2.0e-05", "epsilon-optimal", "12"],
                                             ["never ends", "0.0000", "0.5000", "standoff", "1"]]
    plain = render_report(replace(finished, stalls=[]))
    assert 'id="stalls-table"' not in plain and 'id="stalls-finding"' not in plain


def test_the_headline_gives_no_finite_mean_where_games_may_never_end(running_report):
    from dataclasses import replace

    from solver.report.render import render_report
    from solver.summary import StartSummary

    _, finished, _ = running_report
    ends = finished.summary
    assert cell(render_report(finished), "mean-length") == f"{ends.expected_length:,.1f}"
    outcomes = {label: 0.9 * p for label, p in ends.outcomes.items()} | {"unending": 0.1}
    html = render_report(replace(finished, summary=StartSummary(ends.value, outcomes, ends.expected_length,
                                                                0.9 * ends.length_pmf, ends.terminal_outcomes)))
    assert cell(html, "mean-length") == "no finite mean (some games never end)"
    assert cell(html, "expected-length") == f"{ends.expected_length:,.1f}"  # of the games that end
    assert re.search(r"P\(still going after 200 turns\)</th><td>10\.00%</td>", html)


def test_the_headline_with_its_stalls_is_kept_in_the_results_cache(running_report):
    from solver.analysis.results_cache import ResultsCache
    from solver.report.entries import stalls_from

    _, finished, cache = running_report
    kept = ResultsCache(cache, finished.fingerprint).get("report:headline")["data"]
    assert stalls_from(kept["stalls"]) == finished.stalls


def test_opening_strategies_agree_with_query(report, start_answer):
    html = report[0]
    table = re.search(r'id="opening">(.*?)</table>', html, re.S).group(1)
    cards = re.findall(r"<th>([a-z]+)</th>", table)
    assert cards == list(start_answer["p1_strategy"])
    for player, key in (("P1", "p1_strategy"), ("P2", "p2_strategy")):
        row = re.search(rf'<td class="text">{player}</td>(.*?)</tr>', table).group(1)
        shown = [float(x) / 100 for x in re.findall(r"<td>([0-9.]+)%</td>", row)]
        assert shown == pytest.approx(list(start_answer[key].values()), abs=5e-4)


def test_user_text_is_escaped_and_never_executed(report):
    html = report[0]
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &#34;quoted&#34; &#39;single&#39;" in html
    assert HOSTILE_NAME not in html


def test_second_report_reuses_the_cache(report, tmp_path):
    _, _, cache, first = report
    started = time.perf_counter()
    result = run("report", *SMALL, "--out", str(tmp_path / "again.html"), "--cache-dir", str(cache))
    assert result.exit_code == 0, result.output
    html = (tmp_path / "again.html").read_text()
    assert _made_rows(html) and all(row[3] != "computed" for row in _made_rows(html))
    assert "(cached)" in html
    assert time.perf_counter() - started < max(10.0, first / 2)


def test_interrupted_report_leaves_no_file(tmp_path, monkeypatch):
    import solver.report.build as build
    import solver.report.render as render

    def interrupted(report):
        raise KeyboardInterrupt

    monkeypatch.setattr(build, "build_report", lambda *args, **kwargs: None)
    monkeypatch.setattr(render, "render_report", interrupted)
    out = tmp_path / "report.html"
    result = run("report", *SMALL, "--out", str(out))
    assert result.exit_code == 130
    assert "interrupted; nothing partial was saved" in result.stderr
    assert list(tmp_path.iterdir()) == []


chromium = find_chromium()
needs_chromium = pytest.mark.skipif(
    chromium is None, reason="Chromium is not installed and could not be (make test installs Debian's chromium when run as root)"
)


@needs_chromium
def test_chromium_draws_the_report_without_console_errors(report, tmp_path):
    _, path, _, _ = report
    png = tmp_path / "report.png"
    run_ = screenshot(chromium, path, png)
    assert run_.finished, "Chromium did not finish: the page blocked (a dialog?)"
    assert run_.console == [], run_.console
    assert png.exists() and inked_fraction(png) > 0.01, "blank page"


@needs_chromium
def test_chromium_check_sees_console_errors(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text("<html><body><p>text</p><script>console.error('boom')</script></body></html>")
    run_ = screenshot(chromium, page, tmp_path / "bad.png", height=400)
    assert any("boom" in line for line in run_.console)


@needs_chromium
def test_chromium_check_sees_a_blank_page(tmp_path):
    page = tmp_path / "blank.html"
    page.write_text("<html><body></body></html>")
    png = tmp_path / "blank.png"
    screenshot(chromium, page, png, height=400)
    assert inked_fraction(png) < 0.01


@pytest.mark.slow
def test_report_with_the_handicap_row(tmp_path):
    # Health 2, so P1 can start one Health down: the sensitivity table's last row is a start position.
    rules = ["--set", "board=S*M", "--set", "health=2", "--set", "battery_tiles=2", "--set", "disc_tiles=2",
             "--set", "bonus_cards=ray,copy"]
    out = tmp_path / "report.html"
    result = run("report", *rules, "--out", str(out), "--cache-dir", str(tmp_path / "tables"))
    assert result.exit_code == 0, result.output
    html = out.read_text()
    row = re.search(r"<td class=\"text\">P1 starts with Health 1 \(2\)</td>.*?</tr>", html, re.S).group(0)
    value = float(re.findall(r"<td class=\"value\">([0-9.]+)", row)[0])
    assert value < 0.5
    assert "Left out" not in html


def _body(html: str) -> str:
    """The page without what changes from run to run (when it was made, the seconds taken, what came from the cache)."""
    html = re.sub(r"generated [^<]*</p>", "", html)
    html = re.sub(r"<td>[0-9.]+( \(cached\))?</td></tr>", "<td></td></tr>", html)  # a variant's solve time
    return re.sub(r'<footer id="how-made">.*</footer>', "", html, flags=re.S)


def test_second_report_has_the_same_content(report, tmp_path):
    html, _, cache, _ = report
    result = run("report", *SMALL, "--set", f"name={HOSTILE_NAME}", "--out", str(tmp_path / "again.html"),
                 "--cache-dir", str(cache))
    assert result.exit_code == 0, result.output
    assert _body((tmp_path / "again.html").read_text()) == _body(html)


def test_a_parts_file_carries_a_report_to_another_cache(report, tmp_path):
    """--parts: the first report's parts, carried in one file to an empty cache,
    give the same page with nothing solved; the file keeps its parts."""
    html, _, cache, _ = report
    key = fingerprint_of(SMALL + ["--set", f"name={HOSTILE_NAME}"])
    parts = tmp_path / "parts.json"
    parts.write_bytes((cache / "analysis" / f"{key}.json").read_bytes())
    empty = tmp_path / "empty-cache"
    result = run("report", *SMALL, "--set", f"name={HOSTILE_NAME}", "--out", str(tmp_path / "again.html"),
                 "--cache-dir", str(empty), "--parts", str(parts))
    assert result.exit_code == 0, result.output
    again = (tmp_path / "again.html").read_text()
    assert _failed_solves(report[1].parent / "report.json") == []
    assert _body(again) == _body(html)
    assert all(row[3] != "computed" for row in _made_rows(again))
    assert not empty.exists() or not any(empty.rglob("*.table*"))  # no table solved, none stored
    assert json.loads(parts.read_text())["fingerprint"] == key


def test_a_parts_file_of_other_rules_or_damaged_is_refused_and_left_alone(report, tmp_path):
    _, _, cache, _ = report
    key = fingerprint_of(SMALL + ["--set", f"name={HOSTILE_NAME}"])
    parts = tmp_path / "parts.json"
    kept = (cache / "analysis" / f"{key}.json").read_bytes()
    other = fingerprint_of(SMALL + ["--set", "bonus_cards=ray,trap"])
    for text, says in ((kept, "holds the parts of other rules"), (b'{"format": "charge-spark', "damaged"),
                       (kept.replace(key.encode(), other.encode()).replace(b'"written_by": "', b'"written_by": "0.0.1-'),
                        "not reused")):
        parts.write_bytes(text)
        out = tmp_path / "other.html"
        result = run("report", *SMALL, "--set", "bonus_cards=ray,trap", "--out", str(out), "--cache-dir",
                     str(tmp_path / "c"), "--parts", str(parts))
        assert result.exit_code == 2, result.output
        assert says in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert "Traceback" not in result.output
        assert parts.read_bytes() == text and not out.exists()


def _rules_of(args: list[str]):
    from solver.cli import rules_in_force

    return rules_in_force(None, tuple(args[i + 1] for i in range(0, len(args), 2)))


def fingerprint_of(args: list[str]) -> str:
    from rules.charge_spark.config import fingerprint

    return fingerprint(_rules_of(args))


def test_sections_left_out_are_named_and_absent(tmp_path):
    out = tmp_path / "report.html"
    result = run("report", *SMALL, "--sections", "usage,positions", "--out", str(out), "--cache-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    html = out.read_text()
    for shown in ("headline", "usage", "positions"):
        assert f'id="{shown}"' in html, shown
    for left in ("strength", "price", "cost-curves", "sensitivity", "skill", "hidden"):
        assert f'id="{left}"' not in html, left
    assert re.search(r'id="left-out">.*strength, price, cost-curves, sensitivity, skill, hidden\.', html)
    assert "further solves" not in result.stderr  # no restricted game or variant was solved


def test_an_unknown_section_is_one_line_and_exit_2(tmp_path):
    result = run("report", *SMALL, "--sections", "usage,nonsense", "--out", str(tmp_path / "r.html"))
    assert result.exit_code == 2
    assert "'nonsense'" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r.html").exists()


def test_an_output_that_cannot_be_written_is_refused_before_anything_is_solved(tmp_path):
    cache = tmp_path / "cache"
    for out, why in ((tmp_path / "no" / "such" / "r.html", "no such directory"), (tmp_path, "is a directory")):
        result = run("report", *SMALL, "--out", str(out), "--cache-dir", str(cache))
        assert result.exit_code == 2
        assert why in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert "report:" not in result.stderr  # no part was started
    assert not cache.exists() or not any(cache.iterdir())


def test_rules_too_large_even_rank_by_rank_are_refused_in_one_line(tmp_path):
    result = run("report", "--set", "health=40", "--out", str(tmp_path / "r.html"), "--cache-dir", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr.startswith("charge-spark: error: the report solves the rules in force rank by rank")
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_an_interrupted_report_resumes_where_it_left_off(tmp_path, monkeypatch):
    import solver.report.solves as solves

    cache = tmp_path / "tables"
    solved = []
    real = solves.value_without

    def interrupted_at_the_third(job):
        if len(solved) == 2:
            raise KeyboardInterrupt
        solved.append(job.card)
        return real(job)

    monkeypatch.setattr(solves, "value_without", interrupted_at_the_third)
    # One solve at a time: in this process, each on every core, one by one.
    args = ("report", *SMALL, "--sections", "strength", "--workers", "1", "--cache-dir", str(cache))
    result = run(*args, "--out", str(tmp_path / "first.html"))
    assert result.exit_code == 130 and "run the report again to resume" in result.stderr
    assert "solve 1 of " in result.stderr and "solve 3 of " in result.stderr
    total = int(re.search(r"solve 1 of (\d+)", result.stderr).group(1))

    # What was known when it stopped is on the partial page, beside where the report would have gone.
    assert f"the report so far is in {tmp_path / 'first.partial.html'}" in result.stderr
    assert 'id="partial"' in (tmp_path / "first.partial.html").read_text()
    assert not (tmp_path / "first.html").exists()

    monkeypatch.setattr(solves, "value_without", real)
    result = run(*args, "--out", str(tmp_path / "second.html"))
    assert result.exit_code == 0, result.output
    assert f"solve 1 of {total - 2} " in result.stderr  # the two finished before are not solved again
    html = (tmp_path / "second.html").read_text()
    for card in solved:
        assert re.search(rf'<td class="text">{card}</td><td>[0-9.]+</td>', html), card


STRENGTH_ONLY = ("headline", "strength")


@pytest.fixture(scope="module")
def running_report(tmp_path_factory):
    """SMALL's headline and card strength built on an empty cache, with every
    partial report handed on while it ran; (partials, finished report, cache)."""
    from rules.charge_spark.config import RuleSet, apply_overrides
    from solver.report.build import build_report

    rules = apply_overrides(RuleSet(), [SMALL[i + 1] for i in range(0, len(SMALL), 2)])
    cache = tmp_path_factory.mktemp("running")
    partials = []
    finished = build_report(rules, cache, sections=STRENGTH_ONLY, workers=1, on_partial=partials.append)
    return partials, finished, cache


def _solved_so_far(report) -> int:
    return int(re.match(r"(\d+) of", report.pending["strength"]).group(1))


def test_a_running_report_is_handed_on_after_each_part_with_what_is_still_to_come(running_report):
    from solver.report.render import render_report

    partials, finished, _ = running_report
    first = partials[0]
    assert first.pending == {"strength": "still to come", "draws": "still to come"}  # only the headline is known
    counted = [r for r in partials if re.match(r"\d+ of", r.pending.get("strength", ""))]
    cards = len(finished.restricted)
    assert [_solved_so_far(r) for r in counted] == list(range(cards + 1))  # one page per restricted game, in turn
    for r in counted:
        assert len(r.restricted) == _solved_so_far(r) and "draws" not in r.pending
        assert f"{_solved_so_far(r)} of {cards} restricted games solved so far" in render_report(r)
    assert [(x.card, x.value) for x in counted[-1].restricted] == [(x.card, x.value) for x in finished.restricted]
    paced = ["; all further solves: about " in r.pending["strength"] for r in counted]
    assert paced == [0 < _solved_so_far(r) < cards for r in counted]  # once one is done, while some are left
    assert all('id="partial"' in render_report(r) for r in partials)
    assert finished.pending == {}
    page = render_report(finished)
    assert 'id="partial"' not in page and 'class="pending"' not in page


def test_a_report_read_whole_from_the_cache_hands_on_no_partial_report(running_report):
    from solver.report.build import build_report

    partials, finished, cache = running_report
    again = []
    report = build_report(finished.rules, cache, sections=STRENGTH_ONLY, workers=1, on_partial=again.append)
    assert again == [] and [x.value for x in report.restricted] == [x.value for x in finished.restricted]


def _before_anything_but_the_headline(report):
    from dataclasses import replace

    from solver.report.build import SECTIONS

    pending = {name: "still to come" for name in ("usage", "strength", "draws", "price", "cost-curves", "sensitivity",
                                                  "positions", "skill", "hidden")}
    return replace(report, sections=SECTIONS, usage=None, restricted=[], draws=[], variants=[], positions=[], skill=[],
                   hidden=None, pending=pending)


def test_the_page_of_a_running_report_says_what_each_unfinished_section_waits_for(running_report):
    from solver.report.render import PENDING_TITLES, render_report

    _, finished, _ = running_report
    html = render_report(_before_anything_but_the_headline(finished))
    banner = unescape(re.search(r'id="partial">(.*?)</div>', html, re.S).group(1))
    assert all(title in banner for title in PENDING_TITLES.values())
    for section in ("usage", "strength", "price", "cost-curves", "sensitivity", "positions", "skill", "hidden"):
        body = re.search(rf'<section id="{section}">(.*?)</section>', html, re.S).group(1)
        assert re.search(r'class="pending"[^>]*>Still (to come|being computed)', body), section
    findings = re.search(r'id="findings">(.*?)</div>', html, re.S).group(1)
    # What a change does to play, indispensable card, a point's worth, dead cards, the Lightning cost
    assert findings.count("not known yet") == 5
    assert 'id="value"' in html  # the headline is there in full


@needs_chromium
def test_chromium_draws_the_page_of_a_running_report_without_console_errors(running_report, tmp_path):
    from solver.report.render import render_report

    _, finished, _ = running_report
    page, png = tmp_path / "partial.html", tmp_path / "partial.png"
    page.write_text(render_report(_before_anything_but_the_headline(finished)), encoding="utf-8")
    run_ = screenshot(chromium, page, png, height=1200)
    assert run_.finished and run_.console == [], run_.console
    assert inked_fraction(png) > 0.01, "blank page"


def test_the_partial_page_goes_beside_the_report_and_never_over_an_earlier_one(tmp_path, monkeypatch):
    from solver.report.partial import PartialReport

    out, partial = tmp_path / "r.html", tmp_path / "r.partial.html"
    out.write_text("an earlier finished report")
    seen_then = []
    real_write = PartialReport.write

    def write(self, html):
        real_write(self, html)
        seen_then.append((out.read_text(), 'id="partial"' in partial.read_text()))

    monkeypatch.setattr(PartialReport, "write", write)
    result = run("report", *SMALL, "--sections", "strength", "--out", str(out), "--cache-dir", str(tmp_path / "c"))
    assert result.exit_code == 0, result.output
    assert f"the report so far: {partial}" in result.stderr
    assert seen_then and all(then == ("an earlier finished report", True) for then in seen_then)
    assert 'id="strength"' in out.read_text() and not partial.exists()


def test_the_variant_the_findings_box_reads_is_solved_before_the_other_variants(tmp_path):
    from rules.charge_spark.config import RuleSet, apply_overrides
    from solver.analysis.results_cache import ResultsCache
    from solver.analysis.sensitivity import sensitivity_variants
    from solver.report.build import FINDINGS_CARD, findings_variant
    from solver.report.solves import plan_solves

    rules = apply_overrides(RuleSet(), [SMALL[i + 1] for i in range(0, len(SMALL), 2)])
    variants, _ = sensitivity_variants(rules)
    first = findings_variant(variants)
    assert first.key.startswith(f"cost.{FINDINGS_CARD}.") and first.step == 1 and first is not variants[0]
    plan = plan_solves(rules, ["spark"], variants, ResultsCache(tmp_path, "rules"), 2, first=first)
    assert plan.variants == [first] + [v for v in variants if v != first]
    assert plan.cards == ["spark"]  # the restricted games still go first


def test_a_dead_solve_process_leaves_the_rest_of_the_queue_to_run_one_at_a_time(tmp_path, monkeypatch):
    import solver.report.solves as solves
    from rules.charge_spark.config import RuleSet, apply_overrides
    from solver.analysis.results_cache import ResultsCache
    from solver.analysis.sensitivity import VariantSummary, sensitivity_variants, variant_key
    from solver.core.jobs import WorkersLostError

    rules = apply_overrides(RuleSet(), [SMALL[i + 1] for i in range(0, len(SMALL), 2)])
    variants = sensitivity_variants(rules)[0][:2]
    results = ResultsCache(tmp_path, "rules")
    plan = solves.SolvePlan(["spark", "charge"], list(variants), at_once=2)

    def first_answer_then_a_dead_process(work, jobs, *, workers, on_answer, client=None, **options):
        assert workers == 2 and client is None
        assert [type(job).__name__ for job in jobs] == ["RestrictedJob"] * 2 + ["VariantJob"] * 2
        on_answer(0, work(jobs[0]))
        raise WorkersLostError("a worker process died", [1, 2, 3])

    monkeypatch.setattr(solves, "run_jobs", first_answer_then_a_dead_process)
    said, kept = [], []
    restricted, answers, points = solves.further_solves(
        rules, ["spark", "charge"], variants, tmp_path, plan, results, show_progress=False, log=said.append,
        on_kept=lambda: kept.append(1),
    )
    assert [r.card for r in restricted] == ["spark", "charge"] and all(r.error is None for r in restricted)
    assert points == []
    assert all(isinstance(a, VariantSummary) for a in answers) and len(kept) == 4
    assert any("died" in line for line in said)
    assert [line for line in said if line.startswith("solve ")] == [  # the three left, one at a time
        f"solve {k} of 4 ({4 - k} more after it): {label}"
        for k, label in zip((2, 3, 4), ["P1 may not play charge"] + [v.label for v in variants])]
    assert all(results.get(variant_key(v)) is not None for v in variants)
    assert results.get(solves.restricted_key("charge"))["seconds"] > 0
    finished = [line for line in said if line.startswith("solved ")]
    assert [line.split(":")[0].split(" in ")[0] for line in finished] == [f"solved {k} of 4" for k in (1, 2, 3, 4)]
    assert all(f"; {4 - k} to go, about " in line for k, line in zip((1, 2, 3), finished))
    assert " to go" not in finished[-1]


def test_the_time_left_is_the_pace_so_far_times_the_solves_left():
    from solver.report.solves import time_left

    assert time_left(600.0, 2, 1) == "about 5 min left at this pace"
    assert time_left(3600.0, 1, 3) == "about 3 h 00 min left at this pace"
    assert time_left(1560.0, 4, 10) == "about 1 h 05 min left at this pace"
    assert time_left(1.0, 10, 1) == "about 1 min left at this pace"  # never "0 min"


def _failed_solves(report_json) -> list[str]:
    """Every further solve that report.json says could not be had, with why (none should be)."""
    data = json.loads(report_json.read_text())
    failed = [f"P1 may not play {x['card']}: {x['error']}" for x in data["indispensable"] if x["error"]]
    failed += [f"{c['key']}={p['amount']}: {p['certificate']}" for c in data["cost_curves"] for p in c["points"]
               if str(p.get("certificate", "")).startswith("could not be solved")]
    return failed


def test_every_further_solve_of_the_report_was_had(report):
    """No restricted game nor price point failed (a failure is shown on the page, and its
    row in "How this report was made" has no time): the tests below read their figures."""
    assert _failed_solves(report[1].parent / "report.json") == []


def _made_rows(html: str) -> list[tuple[str, str, str, str]]:
    """(part, wall time, states, computed or cached) of each row of "How this report was made"."""
    table = re.search(r'<table id="made-table">(.*?)</table>', html, re.S).group(1)
    rows = []
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)[1:]:
        cells = [unescape(re.sub(r"<[^>]+>", "", c)).replace("\u2003", "").strip()
                 for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        rows.append(tuple(cells))
    return rows


def test_how_the_report_was_made_lists_every_part_with_its_cost(report, tmp_path):
    """The first run computes every part (the table with its states); a second
    run reads every part from the cache, with the times the first run took."""
    html, _, cache, _ = report
    first = _made_rows(html)
    parts = {row[0]: row for row in first}
    states = re.search(r"([0-9,]+) positions solved", html).group(1)
    table = next(row for row in first if row[0].startswith("the rules' table"))
    assert table[2] == states and table[3] == "computed"
    assert all(row[3] == "computed" for row in first), first
    restricted = [row for row in first if row[0].startswith("P1 may not play ")]
    assert len(restricted) >= 5 and all(row[1] != "-" and row[2] != "-" for row in restricted), (
        restricted, _failed_solves(report[1].parent / "report.json"))
    assert "further solves" in parts and "skill gap" in parts and "card usage" in parts
    assert int(parts[PART_LABELS["play"]][2].replace(",", "")) <= int(states.replace(",", ""))

    again = run("report", *SMALL, "--set", f"name={HOSTILE_NAME}", "--out", str(tmp_path / "again.html"),
                "--cache-dir", str(cache))
    assert again.exit_code == 0, again.output
    second = _made_rows((tmp_path / "again.html").read_text(encoding="utf-8"))
    prerequisites = (PART_LABELS["play"], PART_LABELS["visits"])
    assert [row[0] for row in second] == [row[0] for row in first if row[0] not in prerequisites]
    for row in second:
        assert row[3] in ("read from the cache", "solved, its table read from the cache"), row
        if row[0] in parts and not row[0].startswith("the rules' table") and row[0] != "further solves":
            assert row[1] == parts[row[0]][1], (row, parts[row[0]])


def test_a_table_and_a_wild_table_read_from_the_cache_show_what_their_solves_took(report, tmp_path):
    """A run that opens the stored tables (to compute some part again) lists each
    with the time its solve took, as every part read from the cache, not its
    reading; and a wild table solved ahead of play counts within the hidden part."""
    from solver.analysis.results_cache import ResultsCache
    from solver.report.build import _Parts
    from solver.report.made import CACHED, TABLE_CACHED

    html, _, cache, _ = report
    first = {row[0]: row for row in _made_rows(html)}
    wild_label = WILD_PART.split(": ", 1)[1]
    hidden_time, wild_time = first[PART_LABELS["hidden"]][1], first[wild_label][1]
    assert _seconds(hidden_time) >= _seconds(wild_time)  # the wild table is inside the hidden part's time
    rules = apply_overrides(RuleSet(), [*SMALL[1::2], f"name={HOSTILE_NAME}"])
    results = ResultsCache(cache, fingerprint(rules))
    parts = _Parts(rules, cache, results, False, lambda message: None)
    parts.wild()
    table, wild = parts.made["table"], parts.made[WILD_PART]
    assert (table.source, wild.source) == (CACHED, TABLE_CACHED)
    assert table.seconds == results.get("report:table")["seconds"]
    assert wild.seconds == results.get(f"report:{WILD_PART}")["seconds"]


def _seconds(shown: str) -> float:
    """A wall time as `made.duration` shows it, in seconds."""
    numbers = [float(n) for n in re.findall(r"[\d.]+", shown)]
    units = re.findall(r"h|min|s", shown)
    return sum(n * {"h": 3600, "min": 60, "s": 1}[u] for n, u in zip(numbers, units))


def test_the_hidden_card_section_lists_the_phases_with_the_largest_gains(report):
    html = report[0]
    section = re.search(r'<section id="hidden">(.*?)</section>', html, re.S).group(1)
    summary = unescape(re.sub(r"<[^>]+>", "", re.search(r'id="hidden-summary">(.*?)</p>', section, re.S).group(1)))
    solved = int(re.search(r"Phases solved: ([\d,]+) \(all\)", summary).group(1).replace(",", ""))
    exact = int(re.search(r"exact: ([\d,]+)", summary).group(1).replace(",", ""))
    assert solved > 0 and exact == solved  # the small rule set's phases are all settled exactly
    rows = re.findall(r"<tr><td class=\"text\"><code>", section)
    assert len(rows) == min(12, solved)
    gains = [float(g) for g in re.findall(r"<td>([+-][\d.]+) pp</td><td>[+-][\d.]+ pp</td><td>[+-][\d.]+ pp</td>", section)]
    assert gains == sorted(gains, reverse=True) and gains[0] > 0
    assert "section 9 measures what hiding them changes" in unescape(html)


def test_the_hidden_section_leads_with_what_a_secret_card_is_worth_to_its_holder(report):
    """The lead is the holder's gain, bracketed; the method and the whole game's symmetric bracket
    are in a details block after it."""
    html = report[0]
    section = unescape(re.search(r'<section id="hidden">(.*?)</section>', html, re.S).group(1))
    lead = " ".join(re.sub(r"<[^>]+>", "", re.search(r'id="hidden-worth">(.*?)</p>', section, re.S).group(1)).split())
    found = re.search(r"worth its holder ([+-][\d.]+) pp(?: to ([+-][\d.]+) pp)? of winning chance", lead)
    low, high = float(found.group(1)), float(found.group(2) or found.group(1))
    assert 0.0 <= low <= high  # the report's phases are exact: one number, not a bracket
    assert found.group(2) is None
    assert ". Where a phase is given as bounds" in lead  # no phase left out here; sentences not run together
    assert section.index('id="hidden-worth"') < section.index('<details id="hidden-method">') < section.index('id="hidden-game"')
    assert "wild games" in section.split('<details id="hidden-method">')[1]


def test_a_holders_worth_is_its_gain_bracketed_from_its_own_side():
    from types import SimpleNamespace

    from solver.hidden.analysis import StartResult, summarise
    from solver.report.figures import hidden_worth

    def phase(holder: str, lower: float, upper: float, certified: bool = True) -> StartResult:
        return StartResult(position="p", played="move / move", holder=holder, cards={"ray": 1.0}, open_average=0.5,
                           lower=lower, upper=upper, horizon=3, nodes=10, exact=lower == upper, gain=0.0,
                           holder_open_loss=0.0, naive_exploitability=0.0, seconds=0.0, certified=certified)

    results = [phase("P1", 0.52, 0.56), phase("P2", 0.44, 0.47), phase("P1", 0.9, 0.1, certified=False)]
    hidden = SimpleNamespace(results=results, frequency=[0.3, 0.1, 0.5])
    worth = hidden_worth(SimpleNamespace(hidden=hidden))
    # P1 holds: [0.52 - 0.5, 0.56 - 0.5]; P2 holds (values are P1's): [0.5 - 0.47, 0.5 - 0.44]; the crossed phase is left out.
    assert worth["left_out"] == 1 and worth["weighted"]
    assert worth["mean_at_least_pp"] == pytest.approx(100 * (0.3 * 0.02 + 0.1 * 0.03) / 0.4)
    assert worth["mean_at_most_pp"] == pytest.approx(100 * (0.3 * 0.06 + 0.1 * 0.06) / 0.4)
    assert worth["largest"]["holder"] == "P2" and worth["largest"]["at_least_pp"] == pytest.approx(3.0)
    assert summarise(results[:2], 0.0).starts == 2


def _one_phase_given_as_bounds(rules):
    """A hidden section of one phase bracketed by a capped tree, with no wild table (as the printed rules' was)."""
    from solver.hidden.analysis import StartResult, summarise
    from solver.hidden.run import HiddenAnalysis

    bounded = StartResult(
        position="h2 b2 d1 p1 rest=charge / h2 b2 d2 rest=charge", played="move / barrier", holder="P1",
        cards={"ray": 0.5, "trap": 0.5}, open_average=0.5247, lower=0.5425, upper=1.0, horizon=3, nodes=23936,
        exact=False, gain=0.0178, holder_open_loss=0.0086, naive_exploitability=0.0, seconds=17.5,
    )
    analysis = HiddenAnalysis(rules, 1000, "the 1 most frequent in play from the start", [bounded], [0.0347],
                              summarise([bounded], 17.5), 40, 200_000)
    return analysis


def test_a_phase_not_solved_exactly_is_shown_as_labelled_bounds(running_report):
    from dataclasses import replace

    from solver.report.render import render_report

    _, finished, _ = running_report
    analysis = _one_phase_given_as_bounds(finished.rules)
    html = unescape(render_report(replace(finished, sections=(*STRENGTH_ONLY, "hidden"), hidden=analysis)))
    section = re.search(r'<section id="hidden">(.*?)</section>', html, re.S).group(1)
    assert "bounds 0.5425 to 1.0000 (H = 3)" in section
    assert "exact: 0" in re.sub(r"\s+", " ", section) and "given as bounds: 1" in section
    assert "the phases play meets most often" in section


def test_a_card_p1_never_plays_is_shown_with_the_rules_value_and_not_solved(tmp_path, monkeypatch):
    """Where P1's play never uses a card (none of SMALL's: the shortcut is stood in for here), its
    restricted game is not solved; the page says so, and a second report reads it from the cache."""
    import solver.report.build as build
    from rules.charge_spark.config import RuleSet, apply_overrides
    from solver.analysis.restricted import RestrictedValue
    from solver.report.render import render_report

    rules = apply_overrides(RuleSet(), [SMALL[i + 1] for i in range(0, len(SMALL), 2)])
    monkeypatch.setattr(build, "unplayed_values",
                        lambda game, result, start, cards: [RestrictedValue("move", 0.25, unplayed=True)])
    said: list[str] = []
    first = build.build_report(rules, tmp_path, sections=STRENGTH_ONLY, workers=1, log=said.append)
    assert "P1 may not play move" not in "\n".join(said) and "P1 may not play spark" in "\n".join(said)
    assert [x.card for x in first.restricted if x.unplayed] == ["move"]
    assert "P1 may not play move" not in [part.part for part in first.made]
    html = render_report(first)
    assert re.search(r"<td class=.text.>move</td><td>0\.2500</td><td>[^<]*</td>\s*<td>not solved: P1's optimal"
                     r" play never uses it</td>", html)
    again = build.build_report(rules, tmp_path, sections=STRENGTH_ONLY, workers=1)
    assert [(x.card, x.value, x.unplayed) for x in again.restricted] == [
        (x.card, x.value, x.unplayed) for x in first.restricted]


def test_play_is_propagated_over_its_chain_with_no_graph_built(tmp_path, monkeypatch):
    """The chain holds all the propagation reads: play's graph beside it was a
    second copy of the chain's edges at the propagation's peak."""
    import solver.report.build as build
    from graph_lifetime import watch_play_graphs

    built, propagated = watch_play_graphs(monkeypatch, build, "turn_by_turn")
    result = run("report", *SMALL, "--sections", "headline", "--out", str(tmp_path / "r.html"),
                 "--cache-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert propagated == [1] and built == []


def test_the_hidden_section_brackets_the_whole_game_and_each_phase_by_the_wild_games(report):
    """The wild table is solved as a part of the hidden section (with its cost in
    "How this report was made"); the whole game's bracket holds the open start's
    value 1/2 (a symmetric start), and each exact phase value lies within its wild bounds."""
    html = report[0]
    section = unescape(re.search(r'<section id="hidden">(.*?)</section>', html, re.S).group(1))
    lower, upper = map(float, re.search(r'id="hidden-game">.*?between\s+<strong>([\d.]+)</strong> and <strong>([\d.]+)</strong>',
                                        section, re.S).groups())
    assert lower <= 0.5 <= upper and lower == pytest.approx(1 - upper, abs=1e-4)
    rows = re.findall(r"<td>([\d.]+)</td>\n<td>([\d.]+) to ([\d.]+)</td>", section)  # hidden (exact), wild bounds
    assert rows
    for hidden, below, above in rows:
        assert float(below) - 1e-4 <= float(hidden) <= float(above) + 1e-4
    wild = next(row for row in _made_rows(html) if row[0] == WILD_PART.split(": ", 1)[1])
    states = int(re.search(r"([0-9,]+) positions solved", html).group(1).replace(",", ""))
    assert wild[3] == "computed" and int(wild[2].replace(",", "")) > states  # each hand split into seen and unseen


def test_a_hidden_section_kept_before_the_wild_bounds_is_made_again_with_them():
    from solver.report.build import _hidden_from

    rules = RuleSet()
    kept = {"states": 1, "selection": "all", "starts": [], "max_horizon": 1, "max_nodes": 1,
            "summary": {"starts": 0, "exact": 0, "exact_horizon": None, "max_gain": 0.0, "max_gain_position": None,
                        "mean_gain": 0.0, "seconds": 0.0}}
    with pytest.raises(KeyError):
        _hidden_from(rules)(kept)  # kept by an earlier version: the cache's reader computes it again
    assert _hidden_from(rules)({**kept, "game_lower": 0.4, "game_upper": 0.6}).game_upper == 0.6
    assert _hidden_from(rules)({**kept, "wild_refused": True}).game_lower is None  # refused for memory: kept as it is


def test_a_hidden_section_without_the_wild_bounds_says_so(running_report):
    from dataclasses import replace

    from solver.report.render import render_report

    _, finished, _ = running_report
    analysis = _one_phase_given_as_bounds(finished.rules)  # no wild table: no game bounds
    html = unescape(render_report(replace(finished, sections=(*STRENGTH_ONLY, "hidden"), hidden=analysis)))
    section = re.search(r'<section id="hidden">(.*?)</section>', html, re.S).group(1)
    assert "Without the wild games' bounds" in section and 'id="hidden-game"' not in section
    assert "wild bounds" not in section
    assert "the widest bracket 0.4575 wide" in re.sub(r"\s+", " ", section)


def test_the_price_and_cost_curve_sections_show_the_figures_report_json_writes(report):
    """`report --json`: the price rows and the cost curves are the page's, figure for figure, and the
    other sections' figures are there under their keys."""
    html, path, _, _ = report
    data = json.loads((path.parent / "report.json").read_text())
    for key in ("findings", "headline", "usage", "indispensable", "draws", "price", "cost_curves", "sensitivity",
                "positions", "skill", "hidden", "made"):
        assert key in data, key
    assert data["headline"]["value"] == pytest.approx(float(cell(html, "value")), abs=1e-6)
    box = unescape(re.sub(r"<[^>]+>", "", re.search(r'<li id="price-finding">(.*?)</li>', html, re.S).group(1)))
    for top in data["findings"]["most_valuable_point"]:
        assert f"{top['price_pp']:+.1f} pp to its owner" in box and top["card"] in box
    for candidate in data["findings"]["too_strong"]:
        assert f"{candidate['card']}'s {candidate['number']}: a one-point nerf costs P1 {candidate['nerf_pp']:.1f} pp" in box
    table = re.search(r'id="price-table">(.*?)</table>', html, re.S).group(1)
    rows = re.findall(r'<tr class="price-row">(.*?)</tr>', table, re.S)
    assert len(rows) == len(data["price"]) > 0
    for row, figures in zip(rows, data["price"]):
        cells = [unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        assert cells[:3] == [figures["card"], figures["number"], str(figures["printed"])]
        for side, value_cell, change_cell in (("better", cells[3], cells[4]), ("worse", cells[5], cells[6])):
            point = figures[side]
            assert point["certified"]  # SMALL's solves are all certified
            assert value_cell == f"{point['value']:.4f} ({point['amount']})"
            assert change_cell == f"{round(point['change_pp'], 1) + 0.0:+,.1f} pp"
        assert figures["price_pp"] == figures["better"]["change_pp"]
        assert figures["nerf_pp"] == -figures["worse"]["change_pp"]
        assert (figures["label"] or "") == cells[-1]
    section = re.search(r'<section id="cost-curves">(.*?)</section>', html, re.S).group(1)
    drawn = re.findall(r'<figure[^>]*class="cost-curve">(.*?)</figure>', section, re.S)
    assert len(drawn) == len(data["cost_curves"]) > 0
    for svg, curve in zip(drawn, data["cost_curves"]):
        assert unescape(re.search(r"<title>([^<]+)</title>", svg).group(1)).startswith(f"{curve['card']}: ")
        assert [p["amount"] for p in curve["points"]] == sorted(p["amount"] for p in curve["points"])
        assert sum(p["printed"] for p in curve["points"]) == 1
        # Every point is drawn as a dot of its own (radius 4) with its value written beside it.
        assert len(re.findall(r'<circle [^>]*r="4"', svg)) == len(curve["points"])
        texts = re.findall(r"<text [^>]*>([^<]*)</text>", svg)
        for p in curve["points"]:
            assert f"{p['value']:.3f}" in texts
    assert [r["variant"] for r in data["sensitivity"]] == [
        unescape(v) for v in re.findall(r"<tr><td class=\"text\">([^<]+)</td><td class=\"text\"><code>",
                                        re.search(r'id="sensitivity-table">(.*?)</table>', html, re.S).group(1))]
