"""A self-contained HTML page of a sweep: value and game length against each varied key.

Inline SVG, no scripts, nothing fetched; every user string (keys, values,
errors) is escaped. Reads rows only; knows no rules.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

from .sweep import GridAxis, SweepPoint, SweepRow, outcome_labels

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f")
WIDTH, HEIGHT = 420, 240
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 28, 44
METRICS = (
    ("value at the start (to P1)", lambda row: row.value, (0.0, 1.0)),
    ("expected length (turns, given the game ends)", lambda row: row.expected_length, None),
)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _number(x: float) -> str:
    return "" if math.isnan(x) else f"{x:.6g}"


def _series(axis: GridAxis, axes: Sequence[GridAxis], points: Sequence[SweepPoint], rows: Sequence[SweepRow],
            metric) -> dict[str, list[float]]:
    """Per combination of the other keys: the metric at each of `axis`'s values (nan where missing)."""
    position = {value: i for i, value in enumerate(axis.values)}
    series: dict[str, list[float]] = {}
    for row in rows:
        settings = dict(points[row.index].settings)
        others = ", ".join(f"{a.key}={settings[a.key]}" for a in axes if a.key != axis.key) or "all"
        ys = series.setdefault(others, [math.nan] * len(axis.values))
        ys[position[settings[axis.key]]] = metric(row) if row.ok else math.nan
    return series


def line_chart(title: str, x_name: str, x_values: Sequence[str], series: dict[str, list[float]],
               y_range: tuple[float, float] | None = None) -> str:
    """An SVG chart: one line per series over the categorical `x_values`, with a legend."""
    finite = [y for ys in series.values() for y in ys if not math.isnan(y)]
    low, high = y_range if y_range else (0.0, max(finite, default=1.0) * 1.1 or 1.0)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x_at(i: int) -> float:
        return LEFT + (plot_w * (i + 0.5) / len(x_values))

    def y_at(y: float) -> float:
        return TOP + plot_h * (1 - (y - low) / (high - low))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" role="img">',
        f"<title>{_e(title)} against {_e(x_name)}</title>",
        f'<text x="{LEFT}" y="16" font-size="12">{_e(title)}</text>',
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>',
    ]
    for k in range(5):
        y = low + (high - low) * k / 4
        parts.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y_at(y):.1f}" y2="{y_at(y):.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{LEFT - 4}" y="{y_at(y) + 4:.1f}" font-size="10" text-anchor="end">{y:.3g}</text>')
    for i, x in enumerate(x_values):
        parts.append(f'<text x="{x_at(i):.1f}" y="{TOP + plot_h + 14}" font-size="10" text-anchor="middle">{_e(x)}</text>')
    parts.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 8}" font-size="11" text-anchor="middle">{_e(x_name)}</text>')
    for n, (name, ys) in enumerate(series.items()):
        colour = PALETTE[n % len(PALETTE)]
        points = [(x_at(i), y_at(y), y) for i, y in enumerate(ys) if not math.isnan(y)]
        if len(points) > 1:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py, _ in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        for px, py, y in points:
            parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour}"><title>{_e(name)}: {_number(y)}</title></circle>')
    parts.append("</svg>")
    legend = "".join(
        f'<li><span style="color:{PALETTE[n % len(PALETTE)]}">&#9632;</span> {_e(name)}</li>'
        for n, name in enumerate(series)
    )
    return "\n".join(parts) + f'\n<ul class="legend">{legend}</ul>'


def sweep_page(title: str, axes: Sequence[GridAxis], points: Sequence[SweepPoint], rows: Sequence[SweepRow],
               note: str = "") -> str:
    """The page: a chart of each metric against each varied key, then every row."""
    charts = []
    for axis in axes:
        figures = "".join(
            f"<figure>{line_chart(name, axis.key, axis.values, _series(axis, axes, points, rows, metric), y_range)}</figure>"
            for name, metric, y_range in METRICS
        )
        charts.append(f"<section><h2>{_e(axis.key)}</h2>{figures}</section>")
    labels = outcome_labels()
    head = ["#", *(a.key for a in axes), "fingerprint", "value", *labels, "expected length", "states", "solve s", "certificate",
            "error"]
    body = []
    for row in sorted(rows, key=lambda r: r.index):
        settings = dict(points[row.index].settings)
        cells = [
            row.index + 1, *(settings[a.key] for a in axes), row.fingerprint,
            _number(row.value) + (" (not certified)" if row.ok and not row.certificate.certified else ""),
            *(_number(row.outcomes.get(label, math.nan)) for label in labels),
            _number(row.expected_length), f"{row.states:,}", _number(round(row.solve_seconds, 2)),
            row.certificate.mark if row.ok else "", row.error or "",
        ]
        body.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title>",
        "<style>body{font-family:sans-serif;margin:2em}figure{display:inline-block;margin:0 1em 1em 0}"
        "ul.legend{list-style:none;padding:0;font-size:12px;max-width:420px}"
        "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}</style>",
        "</head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p>{_e(note)}</p>" if note else "",
        "<p>Each line joins the rule sets that agree on every other varied key. The outcome split and the"
        " length are those of the strategies in each table; other optimal strategies may differ.</p>",
        *charts,
        "<h2>Every rule set</h2>",
        "<table><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr></thead>",
        "<tbody>" + "\n".join(body) + "</tbody></table>",
        "</body></html>",
        "",
    ])
