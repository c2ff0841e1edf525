"""Charts as inline SVG: bars, columns and heat maps with a title, labelled
axes and units, in plain shapes and text so they print as drawn.

Every piece of text is escaped here; callers may pass any string."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

from markupsafe import Markup

FONT = "font-family=\"Helvetica, Arial, sans-serif\""
WIDTH = 680
POSITIVE = "#2b6cb0"
NEGATIVE = "#c05621"
AXIS = "#444"
GRID = "#ddd"


def _text(x: float, y: float, text: str, *, anchor: str = "start", size: int = 12, weight: str = "normal",
          rotate: float | None = None, fill: str = "#222") -> str:
    turn = f' transform="rotate({rotate:g} {x:.1f} {y:.1f})"' if rotate is not None else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" font-weight="{weight}"'
            f' fill="{fill}"{turn}>{escape(text)}</text>')


def _svg(title: str, width: float, height: float, body: list[str]) -> Markup:
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width:.0f}" height="{height:.0f}"'
            f' viewBox="0 0 {width:.0f} {height:.0f}" {FONT} class="chart"><title>{escape(title)}</title>')
    return Markup(head + _text(width / 2, 18, title, anchor="middle", size=14, weight="bold") + "".join(body) + "</svg>")


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        high = low + 1.0
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    value = math.floor(low / step) * step
    digits = 3 - math.floor(math.log10(step))  # enough to keep ticks apart however narrow the range
    ticks = []
    while value < high + step * 1e-9:
        ticks.append(round(value, digits))
        value += step
    if ticks[-1] < high - step * 1e-9:
        ticks.append(round(value, digits))
    return ticks


def bar_chart(
    title: str, labels: Sequence[str], values: Sequence[float], axis_label: str,
    fmt: Callable[[float], str] = lambda v: f"{v:.3g}", *, signed: bool = False, cap: float | None = None,
    missing: Sequence[str] | None = None,
) -> Markup:
    """Horizontal bars, one per label; `signed` draws them from a zero line
    (negative to the left, in another colour). `cap`: the scale ends there; a
    bar past it (an outlier) runs to the edge, broken, and says its value and
    that it is off the scale, so the others stay readable. `missing`: per
    label, what to write for a value that is not a number (else "n/a")."""
    finite = [min(v, cap) if cap is not None else v for v in values if math.isfinite(v)] or [0.0]
    low, high = min(0.0, *finite), max(0.0, *finite)
    if low == high == 0.0:
        low, high = (-1e-3, 1e-3) if signed else (0.0, 1.0)
    ticks = nice_ticks(low, high)
    low, high = ticks[0], ticks[-1]
    left, right, top, row = 250, 70, 34, 22
    plot = WIDTH - left - right
    bottom = top + row * len(labels)
    height = bottom + 50
    x = lambda v: left + (v - low) / (high - low) * plot  # noqa: E731
    body = []
    for t in ticks:
        body.append(f'<line x1="{x(t):.1f}" y1="{top}" x2="{x(t):.1f}" y2="{bottom}" stroke="{GRID}"/>')
        body.append(_text(x(t), bottom + 14, fmt(t), anchor="middle", size=11))
    for i, (label, value) in enumerate(zip(labels, values)):
        y = top + i * row
        body.append(_text(left - 6, y + row * 0.68, label, anchor="end", size=11))
        if not math.isfinite(value):
            body.append(_text(x(0.0) + 4, y + row * 0.68, missing[i] if missing else "n/a", size=11))
            continue
        outlier = cap is not None and value > cap
        a, b = sorted((x(0.0), x(min(value, high) if outlier else value)))
        colour = NEGATIVE if value < 0 else POSITIVE
        marked = ' class="outlier"' if outlier else ""
        body.append(f'<rect x="{a:.1f}" y="{y + 3}" width="{max(b - a, 0.8):.1f}" height="{row - 6}" fill="{colour}"'
                    f"{marked}/>")
        label = fmt(value)
        if outlier:  # a break across the bar, and the label says so
            body.append(f'<line x1="{b - 14:.1f}" y1="{y + row - 2}" x2="{b - 8:.1f}" y2="{y + 2}" stroke="#fff"'
                        ' stroke-width="3"/>')
            label = f"{label} (off the scale)"
        width = 6.0 * len(label)  # about, at size 10
        if value >= 0 and b + 4 + width > WIDTH - 2:
            at, anchor, fill = b - 4, "end", "#fff"  # no room past the bar's end: inside it
        elif value < 0 and a - 4 - width < left:
            at, anchor, fill = a + 4, "start", "#fff"
        else:
            at, anchor, fill = (b + 4, "start", AXIS) if value >= 0 else (a - 4, "end", AXIS)
        body.append(_text(at, y + row * 0.68, label, anchor=anchor, size=10, fill=fill))
    body.append(f'<line x1="{x(0.0):.1f}" y1="{top}" x2="{x(0.0):.1f}" y2="{bottom}" stroke="{AXIS}"/>')
    body.append(_text(left + plot / 2, height - 10, axis_label, anchor="middle", size=12))
    return _svg(title, WIDTH, height, body)


def column_chart(
    title: str, xs: Sequence[int], ys: Sequence[float], x_label: str, y_label: str,
    fmt: Callable[[float], str] = lambda v: f"{v:.3g}",
) -> Markup:
    """Vertical columns at integer positions `xs` (e.g. a distribution over turns)."""
    left, right, top, bottom = 70, 20, 34, 50
    plot_w, plot_h = WIDTH - left - right, 220
    height = top + plot_h + bottom
    ticks = nice_ticks(0.0, max([y for y in ys if math.isfinite(y)] or [1.0]) or 1.0)
    y_max = ticks[-1]
    n = max(len(xs), 1)
    step = plot_w / n
    y = lambda v: top + plot_h - v / y_max * plot_h  # noqa: E731
    body = []
    for t in ticks:
        body.append(f'<line x1="{left}" y1="{y(t):.1f}" x2="{left + plot_w}" y2="{y(t):.1f}" stroke="{GRID}"/>')
        body.append(_text(left - 6, y(t) + 4, fmt(t), anchor="end", size=11))
    label_every = max(1, math.ceil(n / 20))
    for i, (xv, yv) in enumerate(zip(xs, ys)):
        bx = left + i * step
        body.append(f'<rect x="{bx + step * 0.1:.1f}" y="{y(yv):.1f}" width="{step * 0.8:.1f}"'
                    f' height="{top + plot_h - y(yv):.1f}" fill="{POSITIVE}"/>')
        if i % label_every == 0:
            body.append(_text(bx + step / 2, top + plot_h + 14, str(xv), anchor="middle", size=10))
    body.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="{AXIS}"/>')
    body.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="{AXIS}"/>')
    body.append(_text(left + plot_w / 2, height - 12, x_label, anchor="middle"))
    body.append(_text(16, top + plot_h / 2, y_label, anchor="middle", rotate=-90))
    return _svg(title, WIDTH, height, body)


def _shade(fraction: float) -> str:
    """White to dark blue."""
    f = min(max(fraction, 0.0), 1.0)
    r, g, b = (int(255 + (c - 255) * f) for c in (33, 82, 150))
    return f"rgb({r},{g},{b})"


def heat_map(
    title: str, row_labels: Sequence[str], col_labels: Sequence[str], matrix: Sequence[Sequence[float]],
    row_axis: str, col_axis: str, scale_label: str, fmt: Callable[[float], str] = lambda v: f"{v:.2f}",
    low: float = 0.0, high: float = 1.0,
) -> Markup:
    """A grid of shaded cells with their values written in; darker is higher."""
    left, top = 130, 62
    cell_w = max(34.0, min(80.0, (WIDTH - left - 20) / max(len(col_labels), 1)))
    cell_h = 24
    legend = f"{fmt(high)}  {scale_label}"
    width = max(WIDTH * 0.6, left + cell_w * len(col_labels) + 20, left + 170 + 6.2 * len(legend))
    height = top + cell_h * len(row_labels) + 64
    span = (high - low) or 1.0
    body = [_text(left + cell_w * len(col_labels) / 2, 38, col_axis, anchor="middle", size=12)]
    for j, label in enumerate(col_labels):
        body.append(_text(left + (j + 0.5) * cell_w, top - 6, label, anchor="middle", size=10))
    for i, (label, row) in enumerate(zip(row_labels, matrix)):
        y = top + i * cell_h
        body.append(_text(left - 6, y + cell_h * 0.66, label, anchor="end", size=11))
        for j, value in enumerate(row):
            fraction = (value - low) / span if math.isfinite(value) else 0.0
            body.append(f'<rect x="{left + j * cell_w:.1f}" y="{y}" width="{cell_w:.1f}" height="{cell_h}"'
                        f' fill="{_shade(fraction)}" stroke="#fff"/>')
            body.append(_text(left + (j + 0.5) * cell_w, y + cell_h * 0.66, fmt(value) if math.isfinite(value) else "-",
                              anchor="middle", size=10, fill="#fff" if fraction > 0.55 else "#111"))
    body.append(_text(14, top + cell_h * len(row_labels) / 2, row_axis, anchor="middle", rotate=-90))
    # The colour scale, so the shading reads without the numbers.
    scale_y = top + cell_h * len(row_labels) + 18
    for k in range(10):
        body.append(f'<rect x="{left + k * 16}" y="{scale_y}" width="16" height="10" fill="{_shade((k + 0.5) / 10)}"/>')
    body.append(_text(left - 6, scale_y + 9, fmt(low), anchor="end", size=10))
    body.append(_text(left + 164, scale_y + 9, legend, size=10))
    return _svg(title, width, height, body)


def curve_chart(
    title: str, xs: Sequence[int], ys: Sequence[float | None], marked: int, x_label: str, y_label: str,
    fmt: Callable[[float], str] = lambda v: f"{v:.3g}", missing: str | Sequence[str] = "n/a",
    y_range: tuple[float, float] | None = None,
) -> Markup:
    """A small line chart of a few points at integer positions `xs`, each point
    drawn as a dot with its value written beside it, the point at `marked` (the
    rules' own) ringed and labelled. A point whose y is None is drawn as no
    number: `missing` (one text, or one a point) is written at its place on the x axis. `y_range`: the
    values the y axis may span at most (a probability's 0 to 1)."""
    width, height = 330, 230
    left, right, top, bottom = 56, 18, 34, 52
    plot_w, plot_h = width - left - right, height - top - bottom
    known = [y for y in ys if y is not None and math.isfinite(y)] or [0.0]
    low, high = min(known), max(known)
    pad = max((high - low) * 0.15, 0.01)
    floor, ceiling = y_range if y_range is not None else (-math.inf, math.inf)
    ticks = [t for t in nice_ticks(max(low - pad, floor), min(high + pad, ceiling), 4)
             if floor - 1e-9 <= t <= ceiling + 1e-9]
    y_low, y_high = ticks[0], ticks[-1]
    x_low, x_high = min(xs), max(xs)
    inset = 22  # the first and last points clear of the axes and their labels
    x = lambda v: left + inset + (0.5 if x_high == x_low else (v - x_low) / (x_high - x_low)) * (  # noqa: E731
        plot_w - 2 * inset)
    y = lambda v: top + plot_h - (v - y_low) / (y_high - y_low) * plot_h  # noqa: E731
    body = []
    for t in ticks:
        body.append(f'<line x1="{left}" y1="{y(t):.1f}" x2="{left + plot_w}" y2="{y(t):.1f}" stroke="{GRID}"/>')
        body.append(_text(left - 5, y(t) + 4, fmt(t), anchor="end", size=10))
    drawn = [(xv, yv) for xv, yv in zip(xs, ys) if yv is not None and math.isfinite(yv)]
    if len(drawn) > 1:
        path = " ".join(f"{x(xv):.1f},{y(yv):.1f}" for xv, yv in drawn)
        body.append(f'<polyline points="{path}" fill="none" stroke="{POSITIVE}" stroke-width="2"/>')
    missing_texts = [missing] * len(xs) if isinstance(missing, str) else list(missing)
    for xv, yv, why in zip(xs, ys, missing_texts):
        body.append(_text(x(xv), top + plot_h + 14, str(xv), anchor="middle", size=11,
                          weight="bold" if xv == marked else "normal"))
        if yv is None or not math.isfinite(yv):
            body.append(_text(x(xv), top + plot_h - 6, why, anchor="middle", size=9, fill=NEGATIVE))
            continue
        if xv == marked:
            body.append(f'<circle cx="{x(xv):.1f}" cy="{y(yv):.1f}" r="7" fill="none" stroke="{NEGATIVE}"'
                        ' stroke-width="2"/>')
        body.append(f'<circle cx="{x(xv):.1f}" cy="{y(yv):.1f}" r="4" fill="{POSITIVE}"/>')
        rise = 13 if xv == marked else 10  # clear of the ring
        above = y(yv) - rise > top + 4
        body.append(_text(x(xv), y(yv) - rise if above else y(yv) + rise + 8, fmt(yv), anchor="middle", size=10,
                          fill=AXIS))
    body.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="{AXIS}"/>')
    body.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="{AXIS}"/>')
    body.append(_text(left + plot_w / 2, height - 22, x_label, anchor="middle", size=11))
    body.append(_text(left + plot_w / 2, height - 8, f"ringed: the rules' own ({marked})", anchor="middle", size=10,
                      fill=NEGATIVE))
    body.append(_text(14, top + plot_h / 2, y_label, anchor="middle", size=11, rotate=-90))
    return _svg(title, width, height, body)
