"""The report's figures as plain data: what a point of cost is worth (the price
rows), the cost curves, and every other figure the page shows, as the JSON
that `report --json FILE` writes. The page's price table and cost-curve charts
are drawn from these same rows, so the file and the page cannot disagree.

A figure read from a solve that is not certified is never a number here
either: its value is null, with `"certified": false` and the certificate's
text beside it."""

from __future__ import annotations

import math
from dataclasses import asdict
from enum import Enum

import numpy as np

from rules.charge_spark.turn import KNOCK_OUT, MOON

from ..analysis.price import DAMAGE, PointValue, PricePoint
from ..analysis.stalls import mean_length, median_length
from ..certificate import CertificateStatus
from ..core.outcome import Seat
from .build import Report

TOO_STRONG = "too strong?"
"""The label of the price rows whose one-point nerf costs P1 least per share of its plays."""
MIN_PLAY_SHARE = 0.01
"""A card played less than this share of P1's plays is no candidate for "too strong"."""


def _number(x: float | None) -> float | None:
    """A finite float, or None (JSON has no nan or infinity)."""
    return None if x is None or not math.isfinite(x) else float(x)


def _point(amount: int, setting: str | None, value: float, status: CertificateStatus, error: str | None,
           baseline: float, printed: bool) -> dict:
    """One point of a curve: its value and change in pp from the rules', or null with why."""
    shown = error is None and status.certified
    return {
        "amount": amount, "printed": printed, "setting": setting,
        "value": _number(value) if shown else None,
        "change_pp": _number(100 * (value - baseline)) if shown else None,
        "certified": shown,
        "certificate": f"could not be solved: {error}" if error else status.text,
    }


def _numbers(points: list[tuple[PricePoint, PointValue]]) -> dict[tuple[str, str], list]:
    """The points grouped by number (card, kind), in the order they come."""
    grouped: dict[tuple[str, str], list] = {}
    for point, value in points:
        grouped.setdefault((point.card, point.kind), []).append((point, value))
    return grouped


def cost_curves(r: Report) -> list[dict]:
    """Per number (each cost a card has, each attack's damage), P1's value at
    the start against P1's own amount, the rules' own among them (marked
    `printed`): the points had so far, in order of amount."""
    baseline, table = r.summary.value, r.certificate
    out = []
    for (card, kind), had in _numbers(r.points).items():
        printed = had[0][0].printed
        points = [_point(p.amount, p.setting, v.value, v.certificate, v.error, baseline, False) for p, v in had]
        points.append(_point(printed, None, baseline, table, None, baseline, True))
        points.sort(key=lambda point: point["amount"])
        out.append({"card": card, "number": kind, "key": had[0][0].key, "printed": printed, "points": points})
    return out


def price_rows(r: Report) -> list[dict]:
    """Per number, what one step of it is worth to P1, its owner:

    - `price_pp`: P1's value one step better (a cost one down, a damage one
      up) minus the rules' value, in percentage points;
    - `nerf_pp`: the rules' value minus P1's value one step worse: what a
      one-point nerf costs its owner;
    - `p1_play_share`: the card's share of P1's plays under optimal play
      (section 2), and `nerf_pp_per_play_pct`: the nerf's cost per percent of
      those plays. The rows with the smallest (a card played much that a nerf
      barely hurts) carry the label `TOO_STRONG`."""
    shares = dict(zip(r.usage.cards, r.usage.overall[0].tolist())) if r.usage is not None else {}
    rows = []
    for curve in cost_curves(r):
        by_amount = {point["amount"]: point for point in curve["points"]}
        printed, damage = curve["printed"], curve["number"] == DAMAGE
        better = by_amount.get(printed + 1 if damage else printed - 1)
        worse = by_amount.get(printed - 1 if damage else printed + 1)
        share = shares.get(curve["card"])
        nerf = None if worse is None or worse["change_pp"] is None else -worse["change_pp"]
        per_play = nerf / (100 * share) if nerf is not None and share is not None and share >= MIN_PLAY_SHARE else None
        rows.append({
            "card": curve["card"], "number": curve["number"], "key": curve["key"], "printed": printed,
            "better": better, "worse": worse,
            "price_pp": None if better is None else better["change_pp"], "nerf_pp": nerf,
            "p1_play_share": share, "nerf_pp_per_play_pct": per_play, "label": None,
        })
    candidates = [row["nerf_pp_per_play_pct"] for row in rows if row["nerf_pp_per_play_pct"] is not None]
    if len(candidates) > 1:
        least = min(candidates)
        for row in rows:
            if row["nerf_pp_per_play_pct"] is not None and row["nerf_pp_per_play_pct"] <= least + 1e-9:
                row["label"] = TOO_STRONG
    return rows


def most_valuable(rows: list[dict]) -> list[dict]:
    """The price rows tied for the largest worth of one point (none where no point is certified)."""
    valued = [row for row in rows if row["price_pp"] is not None]
    top = max((row["price_pp"] for row in valued), default=None)
    return [row for row in valued if row["price_pp"] >= top - 1e-7]


def price_sentence(row: dict) -> str | None:
    """"one battery off spark is worth +12.3 pp to its owner" (None where that point has no certified value)."""
    if row["price_pp"] is None:
        return None
    step = f"one more damage from {row['card']}" if row["number"] == DAMAGE else (
        f"one {row['number']} off {row['card']}")
    return f"{step} is worth {round(row['price_pp'], 1) + 0.0:+.1f} pp to its owner"


def report_figures(r: Report) -> dict:
    """Every figure the page shows, by section (those of the sections shown), as JSON-ready data."""
    summary = r.summary
    median = median_length(summary.length_pmf) if len(summary.length_pmf) else None
    out: dict = {
        "rules": {"name": r.rules.name, "fingerprint": r.fingerprint, "differences": list(r.changed)},
        "states": r.states, "certificate": {**r.certificate.as_json(), "text": r.certificate.text},
        "sections": list(r.sections), "pending": dict(r.pending),
        "headline": {
            "value": summary.value, "outcomes": dict(summary.outcomes),
            "p1_wins": summary.wins(Seat.P1), "p2_wins": summary.wins(Seat.P2),
            "mean_length": _number(mean_length(summary.expected_length, summary.outcomes["unending"])),
            "expected_length_given_end": _number(summary.expected_length),
            "median_length": median, "length_beyond": summary.length_beyond,
            "length_turns": len(summary.length_pmf), "length_pmf": [float(p) for p in summary.length_pmf],
            "stalls": [{"position": text, **asdict(s)} for text, s in r.stalls],
        },
    }
    out["findings"] = _findings(r)
    if r.usage is not None and "usage" in r.sections:
        u = r.usage
        out["usage"] = {
            "opening": {"p1": dict(r.start.row_strategy), "p2": dict(r.start.col_strategy)},
            "cards": [{"card": card, "p1_share": float(u.overall[0][i]), "p2_share": float(u.overall[1][i]),
                       "status": u.status[card].value} for i, card in enumerate(u.cards)],
            "by_turn_p1": u.by_turn[0].tolist(),
        }
    if "strength" in r.sections:
        out["indispensable"] = [{
            "card": x.card, "certified": x.error is None and x.certificate.certified,
            "value": _number(x.value) if x.error is None and x.certificate.certified else None,
            "change_pp": _number(100 * (x.value - summary.value)) if x.error is None and x.certificate.certified
            else None, "unplayed": x.unplayed, "error": x.error, "certificate": x.certificate.text,
            "seconds": x.seconds} for x in r.restricted]
        out["draws"] = [{"card": d.card, "gain_pp": 100 * d.gain, "draws_per_game": d.draws_per_game} for d in r.draws]
    if "price" in r.sections:
        out["price"] = price_rows(r)
        out["price_skipped"] = [asdict(x) for x in r.price_skipped]
    if "cost-curves" in r.sections:
        out["cost_curves"] = cost_curves(r)
    if "sensitivity" in r.sections:
        out["sensitivity"] = sensitivity_rows(r)
        out["sensitivity_skipped"] = [asdict(x) for x in r.skipped]
    if "positions" in r.sections:
        out["positions"] = [{"position": text, "title": a.title, "frequency": a.frequency, "value": a.answer.value,
                             "p1": dict(a.answer.row_strategy), "p2": dict(a.answer.col_strategy),
                             "rows": list(a.answer.rows), "cols": list(a.answer.cols),
                             "matrix": [list(row) for row in a.answer.matrix]} for text, a in r.positions]
    if "skill" in r.sections:
        out["skill"] = [asdict(p) for p in r.skill]
    if "hidden" in r.sections and r.hidden is not None:
        out["hidden"] = r.hidden.as_json()
        out["hidden_worth"] = hidden_worth(r)
    out["made"] = [asdict(part) for part in r.made]
    return json_ready(out)


def json_ready(data):
    """`data` with every float that JSON cannot hold (nan, infinity) as None, numpy numbers as Python's,
    tuples as lists."""
    if isinstance(data, dict):
        return {str(key): json_ready(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [json_ready(value) for value in data]
    if isinstance(data, bool) or data is None or isinstance(data, str):
        return data
    if isinstance(data, (int, np.integer)):
        return int(data)
    if isinstance(data, (float, np.floating)):
        return _number(float(data))
    if isinstance(data, np.ndarray):
        return json_ready(data.tolist())
    if isinstance(data, Enum):
        return data.value
    return str(data)


def _findings(r: Report) -> dict:
    """The box at the top ("In short"): the figures each of its lines gives."""
    from .render import findings  # the page's own reading: render imports this module

    box = findings(r)
    out: dict = {
        "most_indispensable": [{"card": x.card, "value": x.value} for x in box["strongest"]],
        "least_missed": [{"card": x.card, "value": x.value} for x in box["least"]],
        "not_certified_cards": [x.card for x in r.restricted if x.error is None and not x.certificate.certified],
        "dead": list(box["dead"]) if box["dead"] is not None else None,
    }
    if "price" in r.sections:
        rows = price_rows(r)
        out["most_valuable_point"] = [{"card": row["card"], "number": row["number"], "price_pp": row["price_pp"]}
                                      for row in most_valuable(rows)]
        out["too_strong"] = [{"card": row["card"], "number": row["number"], "nerf_pp": row["nerf_pp"],
                              "p1_play_share": row["p1_play_share"]} for row in rows if row["label"] == TOO_STRONG]
    if "sensitivity" in r.sections:
        nature = nature_findings(sensitivity_rows(r))
        out["endless"] = [{"variant": row["variant"], "setting": row["setting"], "unending": row["unending"]}
                          for row in nature["endless"]]
        out["twice_as_long"] = [{"variant": row["variant"], "setting": row["setting"],
                                 "length_ratio": row["length_ratio"], "median_length": row["median_length"],
                                 "length_given_end": row["length_given_end"]} for row in nature["longer"]]
        out["becomes_dead"] = [{"variant": row["variant"], "card": card} for row, card in nature["dead"]]
        out["becomes_dominant"] = [{"variant": row["variant"], "card": card,
                                    "p1_share": next(x["variant"] for x in row["shares"] if x["card"] == card)}
                                   for row, card in nature["dominant"]]
    if box["cost_up"] is not None:
        v, s = box["cost_up"]
        out["cost_up"] = {"variant": v.label, "setting": v.setting, **_variant_row(v, s, r),
                          "median_length": median_length(s.length_pmf) if len(s.length_pmf) else None,
                          "length_beyond": s.length_beyond if len(s.length_pmf) else None}
    return out


SHIFTS_NAMED = 3
"""The card shares each sensitivity row names, the largest shifts first."""
DOMINANT_SHARE = 0.5
"""A card is *dominant* where it takes at least this share of P1's plays."""
ENDLESS_SHARE = 0.01
"""A variant whose P(unending) rises to at least this (from below it) makes games endless, for "In short"."""
LONGER = 2.0
"""A variant whose games last at least this many times as long (median, given that they end) is named in "In short"."""


def sensitivity_rows(r: Report) -> list[dict]:
    """Per variant of the sensitivity section, what it does to play, the rows where play changes most first:

    - `shares`: each card's share of P1's plays under the rules and under the variant (whole games, as in
      section 2), and the shift in pp; `top_shifts` the `SHIFTS_NAMED` largest, as text ("charge 32.3% → 3.3%");
    - `unending` (P(the game never ends)), `length_given_end` (the expected length of the games that end),
      `median_length` (the turn by which half of all games are over; null past the turns counted), `mean_length`
      (the mean over all games: null where some never end);
    - the win-type mix: `knock_out`, `moon` (either player), `unending`, each with its change in pp;
    - `became_dead`, `became_dominant`: cards dead (in no optimal strategy) or dominant (at least
      `DOMINANT_SHARE` of P1's plays) under the variant and not under the rules;
    - `play_change_pp`: how much play moved, the larger of the card mix's movement (half the sum of the
      shifts' sizes) and the win-type mix's (the same over knock-out, moon and unending): the rows' order.

    A variant that is not certified gives none of these (null, `certified` false, the certificate's text);
    a figure a part kept by an earlier version does not hold is null ("not known")."""
    rows = [_variant_row(v, s, r) for v, s in r.variants]
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["play_change_pp"] is None,
                                                      -(rows[i]["play_change_pp"] or 0.0), i))
    return [rows[i] for i in order]


def _rules_play(r: Report) -> dict | None:
    """The rules' own figures the variants are compared with."""
    summary = r.summary
    return {
        "knock_out": summary.by(KNOCK_OUT), "moon": summary.by(MOON), "unending": summary.outcomes["unending"],
        "length_given_end": _number(summary.expected_length),
        "median_length": median_length(summary.length_pmf) if len(summary.length_pmf) else None,
        "shares": dict(zip(r.usage.cards, r.usage.overall[0].tolist())) if r.usage is not None else None,
        "dead": set(r.usage.dead) if r.usage is not None else None,
    }


def nature_findings(rows: list[dict]) -> dict:
    """What "In short" leads with, from the certified sensitivity rows (`sensitivity_rows`) alone:

    - `endless`: variants under which at least `ENDLESS_SHARE` of games never end, where under the rules
      fewer do; the most endless first;
    - `longer`: variants whose games (those that end) last at least `LONGER` times as long: by the median
      where both medians are known, else by the expected length given that the game ends; the longest first;
    - `dead`, `dominant`: (variant, card) where a card becomes dead or dominant."""
    shown = [row for row in rows if row["certified"]]
    endless = sorted((row for row in shown if row["unending"] >= ENDLESS_SHARE
                      and row["unending"] - row["unending_change_pp"] / 100 < ENDLESS_SHARE),
                     key=lambda row: -row["unending"])
    longer = []
    for row in shown:
        ratio = _length_ratio(row)
        if ratio is not None and ratio >= LONGER:
            longer.append({**row, "length_ratio": ratio})
    longer.sort(key=lambda row: -row["length_ratio"])
    return {
        "endless": endless, "longer": longer,
        "dead": [(row, card) for row in shown for card in row["became_dead"] or []],
        "dominant": [(row, card) for row in shown for card in row["became_dominant"] or []],
    }


def _length_ratio(row: dict) -> float | None:
    """The variant's length (given that games end) over the rules': by the medians where both are known."""
    if row["median_length"] is not None and row["rules_median_length"]:
        return row["median_length"] / row["rules_median_length"]
    if row["length_given_end"] is not None and row["rules_length_given_end"]:
        return row["length_given_end"] / row["rules_length_given_end"]
    return None


def share_shift_text(card: str, before: float, after: float) -> str:
    """"charge 32.3% → 3.3%"."""
    return f"{card} {100 * before:.1f}% \u2192 {100 * after:.1f}%"


def _variant_row(v, s, r: Report) -> dict:
    baseline = r.summary.value
    rules = _rules_play(r)
    shown = s.certificate.certified
    row = {
        "variant": v.label, "setting": v.setting, "certified": shown, "certificate": s.certificate.text,
        "value": s.value if shown else None, "change_pp": 100 * (s.value - baseline) if shown else None,
        "knock_out": s.by(KNOCK_OUT) if shown else None, "moon": s.by(MOON) if shown else None,
        "unending": s.outcomes["unending"] if shown else None,
        "expected_length": _number(s.expected_length) if shown else None, "seconds": s.seconds, "reused": s.reused,
        "length_given_end": None, "median_length": None, "mean_length": None, "length_beyond": None,
        "rules_median_length": rules["median_length"], "rules_length_given_end": rules["length_given_end"],
        "knock_out_change_pp": None, "moon_change_pp": None, "unending_change_pp": None,
        "shares": None, "top_shifts": None, "became_dead": None, "became_dominant": None, "play_change_pp": None,
    }
    if not shown:
        return row
    unending = s.outcomes["unending"]
    row.update({
        "length_given_end": _number(s.expected_length),
        "median_length": median_length(np.asarray(s.length_pmf)) if len(s.length_pmf) else None,
        "mean_length": _number(mean_length(s.expected_length, unending)),
        "length_beyond": s.length_beyond if len(s.length_pmf) else None,
        "knock_out_change_pp": 100 * (s.by(KNOCK_OUT) - rules["knock_out"]),
        "moon_change_pp": 100 * (s.by(MOON) - rules["moon"]),
        "unending_change_pp": 100 * (unending - rules["unending"]),
    })
    mix = sum(abs(row[k]) for k in ("knock_out_change_pp", "moon_change_pp", "unending_change_pp")) / 2
    row["play_change_pp"] = mix
    if s.play is None or rules["shares"] is None:
        return row
    before = rules["shares"]
    cards = list(before) + [card for card in s.play.cards if card not in before]
    shares = [{"card": card, "rules": before.get(card, 0.0), "variant": s.play.share(card),
               "shift_pp": 100 * (s.play.share(card) - before.get(card, 0.0))} for card in cards]
    largest = sorted(shares, key=lambda x: -abs(x["shift_pp"]))[:SHIFTS_NAMED]
    row.update({
        "shares": shares,
        "top_shifts": [share_shift_text(x["card"], x["rules"], x["variant"]) for x in largest
                       if abs(x["shift_pp"]) >= 0.05],
        "became_dead": [card for card in s.play.dead if card not in rules["dead"]],
        "became_dominant": [x["card"] for x in shares
                            if x["variant"] >= DOMINANT_SHARE and x["rules"] < DOMINANT_SHARE],
        "play_change_pp": max(mix, sum(abs(x["shift_pp"]) for x in shares) / 2),
    })
    return row


def hidden_worth(r: Report) -> dict | None:
    """The hidden section's lead: what a secret card is worth to the one who drew it, bracketed,
    averaged over the phases play meets (weighted by how often it meets each, where known), and
    the phase where it is worth most. Phases whose bounds are not certified are left out and
    counted."""
    h = r.hidden
    if h is None or not h.results:
        return None
    kept = [(x, times) for x, times in zip(h.results, h.frequency) if x.certified]
    weights = [times for _, times in kept if times is not None and times > 0]
    weighted = len(weights) == len(kept) and sum(weights) > 0
    brackets = [x.gain_bracket() for x, _ in kept]
    if not kept:
        return {"phases": len(h.results), "left_out": len(h.results), "weighted": False, "mean_at_least_pp": None,
                "mean_at_most_pp": None, "largest": None}
    w = np.array(weights if weighted else [1.0] * len(kept))
    low = float(np.dot(w, [b[0] for b in brackets]) / w.sum())
    high = float(np.dot(w, [b[1] for b in brackets]) / w.sum())
    top = int(np.argmax([b[0] for b in brackets]))
    x = kept[top][0]
    return {
        "phases": len(h.results), "left_out": len(h.results) - len(kept), "weighted": weighted,
        "mean_at_least_pp": _number(100 * low), "mean_at_most_pp": _number(100 * high),
        "largest": {"position": x.position, "played": x.played, "holder": x.holder,
                    "at_least_pp": _number(100 * brackets[top][0]), "at_most_pp": _number(100 * brackets[top][1])},
    }
