"""The HTML report: every section, numbers that agree with `query --json`,
escaped user text, an atomic write, and a real browser that draws it cleanly."""

from __future__ import annotations

import json
import re
import time
from html import unescape

import pytest
from click.testing import CliRunner

from solver.cli import main

from browser import find_chromium, inked_fraction, screenshot

# A tiny rule set that keeps two bonus cards and a star: every section has
# something to show, and each of its ~30 solves takes about a second.
SMALL = ["--set", "board=S*M", "--set", "health=1", "--set", "battery_tiles=2", "--set", "disc_tiles=2",
         "--set", "bonus_cards=ray,copy"]
HOSTILE_NAME = "<script>alert(1)</script> \"quoted\" 'single'"
SECTIONS = ("findings", "headline", "assumptions", "usage", "strength", "sensitivity", "positions", "skill")


def run(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The report of SMALL, named with markup and quotes; (html, path, cache dir, seconds)."""
    base = tmp_path_factory.mktemp("report")
    out, cache = base / "report.html", base / "tables"
    started = time.perf_counter()
    result = run("report", *SMALL, "--set", f"name={HOSTILE_NAME}", "--out", str(out), "--cache-dir", str(cache))
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
                  "Value of drawing", "Change in P1's value", "knock-out", "expected game length", "P(the simple policy wins)"):
        assert any(title in t for t in charts), title
    assert "Opening: value to P1 after each pair of cards" in html
    assert "--set cost.lightning.battery=3" in html  # the findings box answers "what if Lightning costs 3"


def test_headline_numbers_agree_with_query(report, start_answer):
    html = report[0]
    assert float(cell(html, "value")) == pytest.approx(start_answer["value"], abs=1e-6)
    assert float(cell(html, "p1-win")) == pytest.approx(start_answer["p1_win"], abs=1e-6)
    assert float(cell(html, "p2-win")) == pytest.approx(start_answer["p2_win"], abs=1e-6)
    assert cell(html, "fingerprint") == start_answer["fingerprint"]
    for label, p in start_answer["outcomes"].items():
        assert re.search(rf"<th class=\"text\">{re.escape(label)}</th><td class=\"outcome\">{p:.6f}</td>", html), label


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
    assert "(the rules' table came from the cache)" in html
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
    value = float(re.findall(r"<td>([0-9.]+)</td>", row)[0])
    assert value < 0.5
    assert "Left out" not in html
