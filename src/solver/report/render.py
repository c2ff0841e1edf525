"""The report as one HTML page: the template, its number formats and charts.

Jinja2 with autoescaping on: every string that reaches the page (a rule set's
name, card and position text) is escaped; charts escape their own text."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from rules.charge_spark.turn import KNOCK_OUT, MOON

from ..analysis.sensitivity import VariantSummary
from ..analysis.stalls import EPSILON_PROBABILITY, MIN_SHARE, mean_length, median_length, summary_length_figures
from ..analysis.usage import CardStatus
from ..core.outcome import Seat
from ..summary import StartSummary
from . import charts
from .build import FINDINGS_CARD, GREEDY, STILL_TO_COME, UNIFORM, Report, findings_variant
from .figures import (
    DOMINANT_SHARE,
    TOO_STRONG,
    cost_curves,
    hidden_worth,
    most_valuable,
    nature_findings,
    price_rows,
    price_sentence,
    sensitivity_rows,
)
from .made import duration, made_totals

TEMPLATES = Path(__file__).parent / "templates"
TURNS_SHOWN = 15  # of the usage-by-turn heat map
PENDING_TITLES = {
    "usage": "2. Card usage", "strength": "3. How indispensable each card is",
    "draws": "3. Value of drawing each bonus card", "price": "4. What a point is worth", "cost-curves": "5. Cost curves",
    "sensitivity": "6. What a change does to play", "positions": "7. What is optimal here", "skill": "8. Skill gap",
    "hidden": "9. What hiding bonus cards changes",
}
"""How a report written while it runs names the parts still to come (`Report.pending`)."""


HIDDEN_ROWS = 12
"""Hidden phases the report lists (`charge-spark hidden` lists them all)."""


def hidden_rows(report: Report) -> tuple[list, str]:
    """The hidden phases shown, with how often play meets each, and in what order they are."""
    analysis = report.hidden
    if analysis is None:
        return [], ""
    rows = list(zip(analysis.results, analysis.frequency))
    if analysis.selection == "all":
        rows.sort(key=lambda row: -round(row[0].gain, 9))  # stable: a start before its seat-swapped twin
        return rows[:HIDDEN_ROWS], "the largest gains first"
    return rows[:HIDDEN_ROWS], "the phases play meets most often, most frequent first"


def pct(p: float, digits: int = 1) -> str:
    return "n/a" if p is None or not math.isfinite(p) else f"{100 * p:.{digits}f}%"


def signed(x: float, digits: int = 1) -> str:
    """`x` with its sign, rounding noise shown as +0 rather than -0."""
    return "n/a" if not math.isfinite(x) else f"{round(x, digits) + 0.0:+,.{digits}f}"


def signed_pp(d: float) -> str:
    """A change of probability, in percentage points."""
    return "n/a" if not math.isfinite(d) else f"{signed(100 * d)} pp"


def num(x: float, digits: int = 4) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:,.{digits}f}"


def probability(p: float | None) -> str:
    """A probability that may be far below a percent (a strategy's smallest weight)."""
    return "n/a" if p is None or not math.isfinite(p) else f"{p:.4f}" if p >= 1e-3 else f"{p:.1e}"


def mean_turns(summary: StartSummary | VariantSummary) -> str:
    """The mean length of a summary's games, or that it has none (some games never end)."""
    mean = mean_length(summary.expected_length, summary.outcomes["unending"])
    return "no finite mean (some games never end)" if mean is None else f"{mean:,.1f}"


def turns(x: float) -> str:
    return "never ends" if not math.isfinite(x) else f"{x:,.1f}"


def median_turn(pmf) -> str:
    """The turn by which half of all games have ended ("n/a" without a distribution)."""
    if len(pmf) == 0:
        return "n/a"
    median = median_length(np.asarray(pmf))
    return str(median) if median is not None else f"over {len(pmf)}"


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"], default=True),
        undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    )
    env.filters.update(pct=pct, num=num, turns=turns, signed_pp=signed_pp, probability=probability,
                       mean_turns=mean_turns)
    return env


def render_report(report: Report) -> str:
    """The whole page."""
    return _environment().get_template("report.html.j2").render(
        r=report, charts=report_charts(report), findings=findings(report), median=median_turn,
        length=summary_length_figures(report.summary), min_share=MIN_SHARE, epsilon=EPSILON_PROBABILITY,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), CardStatus=CardStatus,
        UNIFORM=UNIFORM, GREEDY=GREEDY, turns_shown=TURNS_SHOWN, pending_titles=PENDING_TITLES,
        STILL_TO_COME=STILL_TO_COME, duration=duration, made=made_totals(report.made), Seat=Seat,
        KNOCK_OUT=KNOCK_OUT, MOON=MOON, hidden_rows=hidden_rows(report)[0], hidden_order=hidden_rows(report)[1],
        price=price_rows(report), price_sentence=price_sentence, TOO_STRONG=TOO_STRONG,
        most_valuable=most_valuable(price_rows(report)),
        sensitivity=sensitivity_rows(report), nature=nature_findings(sensitivity_rows(report)),
        DOMINANT_SHARE=DOMINANT_SHARE, LONG_TAIL=LONG_TAIL, hidden_worth=hidden_worth(report),
    )


def _length_chart(pmf, title: str):
    pmf = np.asarray(pmf)
    covered = np.nonzero(np.cumsum(pmf) >= pmf.sum() * 0.995)[0]
    last = int(covered[0]) + 1 if covered.size else len(pmf)
    last = max(5, min(last, 60))
    return charts.column_chart(title, list(range(1, last + 1)), list(100 * pmf[:last]), "turn at which the game ends",
                               "probability (%)", fmt=lambda v: f"{v:g}")


def report_charts(r: Report) -> dict:
    """Every chart of the sections shown that has something to draw (a report
    written while it runs may not have every section's numbers yet)."""
    baseline = r.summary
    # A further solve that is not certified shows no number: it is drawn in no chart either.
    restricted = [x for x in r.restricted if x.certificate.certified]
    variants = [(v, s) for v, s in r.variants if s.certificate.certified]
    out = {"length": _length_chart(r.summary.length_pmf, "How long games last under optimal play")}
    if restricted:
        out["restricted"] = charts.bar_chart(
            "Change in P1's value when P1 may not play the card", [x.card for x in restricted],
            [100 * (x.value - baseline.value) for x in restricted],
            "change in value to P1 (percentage points)", fmt=signed, signed=True,
        )
    if variants:
        out.update(sensitivity_charts(r))
    if r.skill:
        out["skill"] = charts.bar_chart(
            "P(the simple policy wins), playing P1", [f"{p.name}: {opp}" for p in r.skill for opp in ("vs optimal", "vs best response")],
            [100 * v for p in r.skill for v in (p.win_vs_optimal, p.win_vs_best_response)],
            "probability of winning (%)", fmt=lambda v: f"{v:.1f}",
        )
    out["positions"] = [
        charts.heat_map(
            f"{a.title}: value to P1 after each pair of cards", a.answer.rows, a.answer.cols, a.answer.matrix,
            "P1's card", "P2's card", "value to P1 (P(P1 wins) + half P(unending))", fmt=lambda v: f"{v:.2f}",
        )
        for _, a in r.positions
    ]
    if r.usage is not None:
        usage = r.usage
        shown = min(TURNS_SHOWN, usage.by_turn.shape[1])
        out["usage"] = charts.bar_chart(
            "Share of P1's plays going to each card (whole games)", usage.cards, list(100 * usage.overall[0]),
            "share of P1's cards played (%)", fmt=lambda v: f"{v:.1f}",
        )
        out["usage_by_turn"] = charts.heat_map(
            "P1's card choice by turn (given the game is still on)", usage.cards, [str(t + 1) for t in range(shown)],
            (100 * usage.by_turn[0, :shown].T).tolist(), "card", "turn", "% of P1's plays", fmt=lambda v: f"{v:.0f}",
            low=0.0, high=100.0,
        )
    out["cost_curves"] = [_curve_chart(curve) for curve in cost_curves(r)]
    if r.draws:
        out["draws"] = charts.bar_chart(
            "Value of drawing each bonus card, against a random draw", [d.card for d in r.draws],
            [100 * d.gain for d in r.draws], "value to the drawer, minus a random draw's (percentage points)",
            fmt=signed, signed=True,
        )
    return out


LONG_TAIL = 10
"""A mean length (given that the game ends) over this many times the median is marked as pulled up by a long tail."""
OUTLIER = 5.0
"""A length more than this many times the median of the lengths charted is an outlier: past the chart's scale."""


def length_cap(values: list[float]) -> float | None:
    """Where a length chart's scale ends: a quarter past the largest length that is no outlier (`OUTLIER`), or
    None where there is no outlier. So a stalling variant's mean of thousands of turns does not flatten the rest."""
    finite = sorted(v for v in values if v is not None and math.isfinite(v) and v > 0)
    if not finite:
        return None
    typical = float(np.median(finite))
    kept = [v for v in finite if v <= OUTLIER * typical]
    return None if len(kept) == len(finite) else 1.25 * max(kept)


def sensitivity_charts(r: Report) -> dict:
    """The sensitivity section's charts, from its rows (`figures.sensitivity_rows`), the certified ones alone,
    in the rows' order (where play moves most first), the rules' own figure first where it has one."""
    rows = [row for row in sensitivity_rows(r) if row["certified"]]
    labels = [row["variant"] for row in rows]
    out = {}
    moved = [row for row in rows if row["play_change_pp"] is not None]
    if moved:
        out["sensitivity_moved"] = charts.bar_chart(
            "How much play moves under each variant", [row["variant"] for row in moved],
            [row["play_change_pp"] for row in moved],
            "percentage points of P1's card mix (or of how games end) that move", fmt=lambda v: f"{v:.1f}",
        )
    out["sensitivity_unending"] = charts.bar_chart(
        "P(the game never ends) under each variant", ["the rules"] + labels,
        [100 * r.summary.outcomes["unending"]] + [100 * row["unending"] for row in rows],
        "probability that the game never ends (%)", fmt=lambda v: f"{v:.1f}",
    )
    medians = [row["median_length"] for row in rows]
    rules_median = rows[0]["rules_median_length"] if rows else None
    if any(m is not None for m in medians):
        values = [float(rules_median) if rules_median is not None else math.nan] + [
            float(m) if m is not None else math.nan for m in medians]
        out["sensitivity_median"] = charts.bar_chart(
            "Median game length under each variant", ["the rules"] + labels, values,
            "turn by which half of all games are over", fmt=lambda v: f"{v:,.0f}", cap=length_cap(values),
            missing=["not known"] + [
                f"over {len(r.summary.length_pmf)}: fewer than half of the games end" if row["length_beyond"] is not None
                else "not known" for row in rows],
        )
    means = [float(r.summary.expected_length)] + [
        row["length_given_end"] if row["length_given_end"] is not None else math.nan for row in rows]
    out["sensitivity_length"] = charts.bar_chart(
        "Expected game length under each variant, given that the game ends", ["the rules"] + labels, means,
        "expected length of the games that end (turns)", fmt=lambda v: f"{v:,.1f}", cap=length_cap(means),
        missing=["n/a"] + ["no game ends" if row["unending"] >= 1 - 1e-9 else "n/a" for row in rows],
    )
    out["sensitivity_knockout"] = charts.bar_chart(
        "Change in the share of games won by knock-out", labels, [row["knock_out_change_pp"] for row in rows],
        "change in P(a player wins by knock-out) (percentage points)", fmt=signed, signed=True,
    )
    return out


def _curve_chart(curve: dict):
    """One cost curve: P1's value against P1's own amount of one card's cost or damage."""
    number = "damage" if curve["number"] == "damage" else f"{curve['number']} cost"
    points = curve["points"]
    return charts.curve_chart(
        f"{curve['card']}: {number}", [p["amount"] for p in points], [p["value"] for p in points], curve["printed"],
        f"P1's {curve['card']} {number} (P2's unchanged)", "P1's value", fmt=lambda v: f"{v:.3f}",
        missing=["not solved" if p["certificate"].startswith("could not") else "not certified" for p in points],
        y_range=(0.0, 1.0),
    )


# Restricted values this close are one value: each solve certifies its own to about 1e-11.
TIED = 1e-9


def findings(r: Report) -> dict:
    """The answers a designer looks for first. The strongest card is every
    card tied for the lowest restricted value, the least missed every card
    tied for the highest (none when all cards tie). A further solve that is
    not certified is no ground for a finding: its card is left out of the
    comparison (and named), its variant answers nothing."""
    had = [x for x in r.restricted if x.error is None]
    solved = [x for x in had if x.certificate.certified]  # in card order, ties too
    low, high = min((x.value for x in solved), default=0.0), max((x.value for x in solved), default=0.0)
    strongest = [x for x in solved if x.value <= low + TIED]
    least = [x for x in solved if x.value >= high - TIED] if len(strongest) < len(solved) else []
    first = findings_variant([v for v, _ in r.variants])
    cost_up = next(((v, s) for v, s in r.variants if v == first), None) if first else None
    uncertified_cost_up = cost_up if cost_up is not None and not cost_up[1].certificate.certified else None
    return {"strongest": strongest, "strongest_cards": _listed([x.card for x in strongest]),
            "least": least, "least_cards": _listed([x.card for x in least]),
            "uncertified_cards": _listed([x.card for x in had if not x.certificate.certified]),
            "dead": r.usage.dead if r.usage else None, "cost_up": None if uncertified_cost_up else cost_up,
            "uncertified_cost_up": uncertified_cost_up,
            "cost_up_card": FINDINGS_CARD, "knockout": r.summary.by(KNOCK_OUT), "moon": r.summary.by(MOON)}


def _listed(names: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return " and ".join(filter(None, [", ".join(names[:-1]), names[-1]])) if names else ""
