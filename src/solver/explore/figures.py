"""The answer's figures as inline SVG, in the report's style (`report.charts`):
the win split, each side's strategy as bars, and the stage matrix as a heat
map whose cells are links. Every piece of text and every link is escaped here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from markupsafe import Markup

from ..core.outcome import Outcome, Seat
from ..core.result import StateAnswer
from ..report.charts import AXIS, FONT, GRID
from .board_svg import SEAT_COLOURS

# Each seat's wins in its own hue, dark to light by kind; unending play grey, between them.
WIN_SHADES = (("#1a4971", "#63a4e0", "#a9cdf0"), ("#8c3a0c", "#f0a868", "#f7d1ae"))
UNENDING = "#a0aec0"


def _text(x: float, y: float, text: str, *, anchor: str = "start", size: int = 12, weight: str = "normal",
          fill: str = "#222") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" font-weight="{weight}"'
            f' fill="{fill}">{escape(text)}</text>')


def _svg(title: str, width: float, height: float, body: list[str], css_class: str, ident: str) -> Markup:
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width:.0f}" height="{height:.0f}"'
            f' viewBox="0 0 {width:.0f} {height:.0f}" {FONT} class="{css_class}" id="{ident}">'
            f'<title>{escape(title)}</title>')
    return Markup(head + "".join(body) + "</svg>")


def shade(fraction: float) -> str:
    """White to dark blue, as the report's heat maps."""
    f = min(max(fraction, 0.0), 1.0)
    r, g, b = (int(255 + (c - 255) * f) for c in (33, 82, 150))
    return f"rgb({r},{g},{b})"


def win_split(answer: StateAnswer, outcomes: Sequence[Outcome], width: int = 720) -> Markup:
    """One bar from P1's wins (left) to P2's (right), unending play between;
    who won each outcome is read from `outcomes`, its label only shown."""
    parts: list[tuple[str, float, str, bool]] = []  # label, share, colour, dark
    for seat in (Seat.P1, Seat.P2):
        won = [o for o in outcomes if o.winner == seat]
        ordered = won if seat == Seat.P1 else won[::-1]  # the seats' kinds mirrored about the middle
        for k, o in enumerate(ordered):
            kind = k if seat == Seat.P1 else len(won) - 1 - k
            parts.append((o.label, answer.terminal_probability.get(o.label, 0.0),
                          WIN_SHADES[seat][min(kind, 2)], kind == 0))
        if seat == Seat.P1:
            parts.append(("unending", answer.unending_probability, UNENDING, False))
    parts += [(o.label, answer.terminal_probability.get(o.label, 0.0), UNENDING, False)
              for o in outcomes if o.winner is None]
    left, bar = 10, width - 20
    body, x = [], float(left)
    for label, share, colour, dark in parts:
        w = bar * max(share, 0.0)
        if w > 0:
            body.append(f'<rect x="{x:.1f}" y="8" width="{w:.1f}" height="26" fill="{colour}">'
                        f'<title>{escape(label)}: {100 * share:.2f}%</title></rect>')
            if w > 46:
                body.append(_text(x + w / 2, 26, f"{100 * share:.1f}%", anchor="middle", size=11,
                                  fill="#fff" if dark else "#111"))
        x += w
    for k, (label, share, colour, _) in enumerate(parts):
        lx = left + (k % 3) * 240
        ly = 50 + (k // 3) * 18
        body.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{colour}"/>')
        body.append(_text(lx + 18, ly, f"{label} {100 * share:.2f}%", size=11))
    height = 50 + 18 * ((len(parts) + 2) // 3) + 4
    return _svg("How the game ends from here, under the strategies shown", width, height, body, "chart", "win-split")


def strategy_bars(title: str, strategy: Mapping[str, float], seat: int, ident: str, width: int = 350) -> Markup:
    """A side's optimal mixed strategy: one bar per legal card, its probability written beside it."""
    left, top, row = 86, 30, 22
    plot = width - left - 56
    height = top + row * len(strategy) + 10
    body = [_text(width / 2, 18, title, anchor="middle", size=13, weight="bold")]
    for k in range(5):
        x = left + plot * k / 4
        body.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{height - 10}" stroke="{GRID}"/>')
    for i, (card, p) in enumerate(strategy.items()):
        y = top + i * row
        body.append(_text(left - 6, y + row * 0.68, card, anchor="end", size=11))
        body.append(f'<rect x="{left}" y="{y + 3}" width="{max(plot * p, 0.8 if p > 0 else 0):.1f}" height="{row - 6}"'
                    f' fill="{SEAT_COLOURS[seat]}"><title>{escape(card)}: {p:.6f}</title></rect>')
        body.append(_text(left + plot * p + 4, y + row * 0.68, f"{p:.4f}", size=10, fill=AXIS))
    body.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - 10}" stroke="{AXIS}"/>')
    return _svg(title, width, height, body, "chart", ident)


def stage_heat_map(
    answer: StateAnswer, links: Mapping[tuple[str, str], str], selected: tuple[str, str] | None = None,
) -> Markup:
    """The stage matrix (value to P1 after each pair of cards), darker higher;
    each cell links to `links[(P1's card, P2's card)]`, `selected` outlined.
    The strategies stand at the margins: P1's right of its rows, P2's below its columns."""
    rows, cols = answer.rows, answer.cols
    left, top, cell_w, cell_h = 96, 58, 66, 30
    width = left + cell_w * len(cols) + 70
    height = top + cell_h * len(rows) + 48
    body = [_text(left + cell_w * len(cols) / 2, 16, "P2's card", anchor="middle", size=12, weight="bold"),
            _text(left + cell_w * len(cols) + 8, top - 8, "P1 plays", size=10)]
    for j, card in enumerate(cols):
        body.append(_text(left + (j + 0.5) * cell_w, top - 8, card, anchor="middle", size=11))
    for i, card in enumerate(rows):
        y = top + i * cell_h
        body.append(_text(left - 6, y + cell_h * 0.62, card, anchor="end", size=11))
        for j, col in enumerate(cols):
            value = answer.matrix[i][j]
            x = left + j * cell_w
            chosen = selected == (card, col)
            outline = ' stroke="#f6ad55" stroke-width="4"' if chosen else ' stroke="#fff"'
            tip = f"P1 {card}, P2 {col}: value to P1 {value:.6f}; click to play this pair"
            body.append(
                f'<a href="{escape(links[(card, col)], quote=True)}" class="cell{" selected" if chosen else ""}"'
                f' data-p1="{escape(card, quote=True)}" data-p2="{escape(col, quote=True)}">'
                f'<rect x="{x:.1f}" y="{y}" width="{cell_w}" height="{cell_h}" fill="{shade(value)}"{outline}/>'
                + _text(x + cell_w / 2, y + cell_h * 0.62, f"{value:.3f}", anchor="middle", size=11,
                        fill="#fff" if value > 0.55 else "#111")
                + f"<title>{escape(tip)}</title></a>"
            )
        body.append(_text(left + cell_w * len(cols) + 8, y + cell_h * 0.62, f"{answer.row_strategy[card]:.3f}",
                          size=11, fill=SEAT_COLOURS[0], weight="bold"))
    bottom = top + cell_h * len(rows)
    body.append(_text(left - 6, bottom + 18, "P2 plays", anchor="end", size=10))
    for j, col in enumerate(cols):
        body.append(_text(left + (j + 0.5) * cell_w, bottom + 18, f"{answer.col_strategy[col]:.3f}", anchor="middle",
                          size=11, fill=SEAT_COLOURS[1], weight="bold"))
    middle = top + cell_h * len(rows) / 2
    body.append(f'<text x="16" y="{middle:.1f}" text-anchor="middle" font-size="12" font-weight="bold" fill="#222"'
                f' transform="rotate(-90 16 {middle:.1f})">P1&#39;s card</text>')
    body.append(_text(left, bottom + 40, "value to P1 after each pair of cards (P(P1 wins) + half P(unending))",
                      size=10, fill=AXIS))
    return _svg("Stage matrix: value to P1 after each pair of cards", width, height, body, "matrix", "matrix")
