"""The report's "What a change does to play" section (id `sensitivity`) and the "In short" lines it feeds:
each variant's card shares against `query --json`, endless play named in the box, every chart bar visible,
and older parts (kept without card usage) still read."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from click.testing import CliRunner

from solver.cli import main

# The report tests' tiny rule set: one of its variants (Spark dealing 2) makes every game endless.
SMALL = ["--set", "board=S*M", "--set", "health=1", "--set", "battery_tiles=2", "--set", "disc_tiles=2",
         "--set", "bonus_cards=ray,copy"]
ENDLESS = "damage.spark=2"


def run(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def section(tmp_path_factory):
    """The report of SMALL with card usage and the sensitivity section: (html, figures as JSON, cache dir)."""
    base = tmp_path_factory.mktemp("sensitivity")
    out, cache = base / "report.html", base / "tables"
    result = run("report", *SMALL, "--sections", "usage,sensitivity", "--out", str(out), "--cache-dir", str(cache),
                 "--json", str(base / "report.json"))
    assert result.exit_code == 0, result.output
    return out.read_text(encoding="utf-8"), json.loads((base / "report.json").read_text()), cache


def query(cache, *settings: str) -> dict:
    extra = [arg for setting in settings for arg in ("--set", setting)]
    result = run("query", "start", *SMALL, *extra, "--json", "--usage", "--cache-dir", str(cache))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_shifts_are_the_difference_of_two_query_usages(section):
    _, figures, cache = section
    rules = query(cache)["usage"]["p1"]
    rows = {row["setting"]: row for row in figures["sensitivity"]}
    for setting in ("--set cost.lightning.battery=3", "--set damage.spark=0", f"--set {ENDLESS}"):
        row = rows[setting]
        variant = query(cache, setting.removeprefix("--set "))["usage"]["p1"]
        assert row["certified"]
        for share in row["shares"]:
            card = share["card"]
            assert share["rules"] == pytest.approx(rules.get(card, 0.0), abs=1e-9), card
            assert share["variant"] == pytest.approx(variant.get(card, 0.0), abs=1e-9), card
            assert share["shift_pp"] == pytest.approx(100 * (variant.get(card, 0.0) - rules.get(card, 0.0)), abs=1e-7)
        largest = sorted(row["shares"], key=lambda x: -abs(x["shift_pp"]))[:3]
        assert row["top_shifts"] == [f"{x['card']} {100 * x['rules']:.1f}% \u2192 {100 * x['variant']:.1f}%"
                                     for x in largest]


def test_rows_where_play_moves_most_come_first_and_the_page_shows_them(section):
    html, figures, _ = section
    rows = figures["sensitivity"]
    moved = [row["play_change_pp"] for row in rows if row["play_change_pp"] is not None]
    assert moved == sorted(moved, reverse=True) and len(moved) == len(rows)
    table = re.search(r'id="sensitivity-table">(.*?)</table>', html, re.S).group(1)
    shown = re.findall(r'<tr><td class="text">([^<]+)</td>(.*?)</tr>', table, re.S)
    assert [unescape(label) for label, _ in shown] == [row["variant"] for row in rows]
    for (_, cells), row in zip(shown, rows):
        text = unescape(re.sub(r"<[^>]+>", "", cells))
        if row["top_shifts"] is None:  # another start of the rules' game: play goes on in their table
            assert row["setting"].startswith("--set start_battery") and "not known" in text
        for shift in row["top_shifts"] or []:
            assert shift in text
        assert f"{100 * row['unending']:.1f}%" in text


def test_in_short_names_the_variant_that_makes_every_game_endless(section):
    html, figures, cache = section
    assert query(cache, ENDLESS)["unending"] == pytest.approx(1.0, abs=1e-9)
    endless = figures["findings"]["endless"]
    assert endless[0]["setting"] == f"--set {ENDLESS}" and endless[0]["unending"] == pytest.approx(1.0)
    box = unescape(re.sub(r"<[^>]+>", "", re.search(r'<div class="findings".*?</div>', html, re.S).group(0)))
    assert f"if spark deals 2 (--set {ENDLESS}), 100.0% of games never end (now 0.0%)." in box
    # The box leads with what changes the game's nature.
    first = re.search(r"<ul>\s*<li([^>]*)>", html[html.index('id="findings"'):]).group(1)
    assert 'class="nature"' in first
    # Endless play is shown one way in its row: P(never ends) 100%, no length of games that never end.
    row = next(r for r in figures["sensitivity"] if r["setting"] == f"--set {ENDLESS}")
    assert (row["unending"], row["median_length"], row["mean_length"], row["length_given_end"]) == (
        pytest.approx(1.0), None, None, None)


def bars(svg: str) -> list[tuple[float, str]]:
    """Each bar's width and its label."""
    widths = [float(w) for w in re.findall(r'<rect x="[^"]+" y="[^"]+" width="([^"]+)" height="[^"]+" fill', svg)]
    return widths


def test_every_sensitivity_bar_is_visible_and_an_outlier_is_labelled():
    from solver.report import charts

    values = [5.0, 4.9, 6.2, 159_475.5, 0.0, 3.5]
    svg = str(charts.bar_chart("lengths", [f"v{i}" for i in range(len(values))], values, "turns",
                               cap=_cap(values)))
    widths = bars(svg)
    assert len(widths) == len(values)
    for width, value in zip(widths, values):
        if value > 0.01 * max(values):
            assert width >= 1.0
    assert "159475 (off the scale)" in svg or "1.59e+05 (off the scale)" in svg
    assert svg.count("off the scale") == 1
    # The typical bars are not flattened: the shortest non-zero one is more than a few pixels.
    assert min(w for w, v in zip(widths, values) if v > 0) > 20


def _cap(values):
    from solver.report.render import length_cap

    return length_cap(values)


def test_every_chart_of_the_section_has_visible_bars(section):
    html, _, _ = section
    part = re.search(r'<section id="sensitivity">(.*?)</section>', html, re.S).group(1)
    assert len(re.findall(r"<svg .*?</svg>", part, re.S)) >= 4
    # Every bar chart of the page (the sensitivity section's and card usage's): bars 16 pixels high.
    svgs = [svg for svg in re.findall(r"<svg .*?</svg>", html, re.S) if 'height="16" fill=' in svg]
    assert len(svgs) >= 5
    for svg in svgs:
        labels = re.findall(r'<text [^>]*fill="(?:#444|#fff)"[^>]*>([^<]*)</text>', svg)
        widths = bars(svg)
        values = []
        for label in labels:
            number = re.match(r"[+-]?[0-9,.]+", label.replace("\u2212", "-"))
            if number:
                values.append(abs(float(number.group(0).replace(",", ""))))
        assert len(values) == len(widths), unescape(re.search(r"<title>([^<]+)", svg).group(1))
        largest = max(values, default=0.0)
        for width, value in zip(widths, values):
            if value > 0.01 * largest:
                assert width >= 1.0, (svg[:80], value, width)


def test_a_variant_kept_without_card_usage_still_loads_and_shows_not_known(section):
    from dataclasses import replace

    from rules.charge_spark.config import RuleSet, apply_overrides, fingerprint
    from solver.analysis.results_cache import ResultsCache
    from solver.analysis.sensitivity import sensitivity_variants, variant_key
    from solver.report.entries import variant_from
    from solver.report.figures import sensitivity_rows

    _, figures, cache = section
    rules = apply_overrides(RuleSet(), [SMALL[i + 1] for i in range(0, len(SMALL), 2)])
    variant = next(v for v in sensitivity_variants(rules)[0] if v.setting == f"--set {ENDLESS}")
    entry = dict(ResultsCache(cache, fingerprint(rules)).get(variant_key(variant)))
    assert entry["play"] is not None
    del entry["play"]  # as a version before card usage kept it
    old = variant_from(entry)
    assert old.play is None and old.certificate.certified
    kept = next(row for row in figures["sensitivity"] if row["setting"] == f"--set {ENDLESS}")

    class Report:  # the figures a sensitivity row reads
        def __init__(self, summary, usage):
            self.summary, self.usage, self.variants = summary, usage, [(variant, replace(old))]

    from solver.report.entries import summary_from_entry, usage_from

    results = ResultsCache(cache, fingerprint(rules))
    report = Report(summary_from_entry(results.get("report:headline")["data"]["summary"]),
                    usage_from(results.get("report:usage")["data"]))
    row = sensitivity_rows(report)[0]
    assert row["certified"] and row["shares"] is None and row["top_shifts"] is None and row["became_dead"] is None
    assert row["unending"] == pytest.approx(kept["unending"]) and row["median_length"] == kept["median_length"]


def _row(variant: str, **figures) -> dict:
    """A certified sensitivity row whose play did not move, with `figures` over it."""
    row = {"variant": variant, "setting": f"--set {variant}", "certified": True, "unending": 0.0,
           "unending_change_pp": 0.0, "median_length": 5, "rules_median_length": 5, "length_given_end": 5.0,
           "rules_length_given_end": 5.0, "became_dead": [], "became_dominant": [], "shares": [],
           "play_change_pp": 0.0}
    return {**row, **figures}


def test_in_short_reads_endless_longer_dead_and_dominant_from_certified_rows_alone():
    from solver.report.figures import nature_findings

    rows = [
        _row("a", unending=0.4, unending_change_pp=40.0, median_length=None, length_given_end=6.0),
        _row("b", median_length=11),  # 2.2 times as long by the median
        _row("c", median_length=None, rules_median_length=None, length_given_end=9.0),  # 1.8 times: not named
        _row("d", became_dead=["spark"], became_dominant=["move"],
             shares=[{"card": "move", "rules": 0.2, "variant": 0.6, "shift_pp": 40.0}]),
        _row("e", certified=False, unending=1.0, unending_change_pp=100.0, median_length=50,
             became_dead=["barrier"]),  # not certified: never read
        _row("f", unending=0.005, unending_change_pp=0.5),  # under 1% of games: not endless
    ]
    found = nature_findings(rows)
    assert [row["variant"] for row in found["endless"]] == ["a"]
    assert [(row["variant"], row["length_ratio"]) for row in found["longer"]] == [("b", pytest.approx(2.2))]
    assert [(row["variant"], card) for row, card in found["dead"]] == [("d", "spark")]
    assert [(row["variant"], card) for row, card in found["dominant"]] == [("d", "move")]
