"""The position as a picture (inline SVG): the track with its stars, the moon
and both pawns, then each player's Health, Battery and Disc tiles, hand and
rest zone. Plain shapes and text; every piece of text escaped here."""

from __future__ import annotations

import math
from html import escape

from markupsafe import Markup

from rules.charge_spark.cards import Card
from rules.charge_spark.config import RuleSet
from rules.charge_spark.state import PlayerState, Position
from rules.charge_spark.turn import legal_cards

FONT = 'font-family="Helvetica, Arial, sans-serif"'
WIDTH = 720
SEAT_COLOURS = ("#2b6cb0", "#c05621")  # P1 blue, P2 orange: as the report's positive and negative bars
TILE_COLOURS = {"Health": "#c53030", "Battery": "#d69e2e", "Disc": "#319795"}
CARD_COLOURS = {  # by what a card does
    Card.CHARGE: "#fefcbf", Card.SPARK: "#fed7d7", Card.BARRIER: "#bee3f8", Card.LIGHTNING: "#feb2b2",
    Card.COUNTER: "#c3dafe", Card.MOVE: "#c6f6d5", Card.RAY: "#fbd38d", Card.RECOVERY: "#fefcbf",
    Card.TRAP: "#e9d8fd", Card.COPY: "#e2e8f0",
}


def _text(x: float, y: float, text: str, *, anchor: str = "middle", size: int = 12, weight: str = "normal",
          fill: str = "#222") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" font-weight="{weight}"'
            f' fill="{fill}">{escape(text)}</text>')


def _star(cx: float, cy: float, r: float, fill: str) -> str:
    points = []
    for k in range(10):
        radius = r if k % 2 == 0 else r * 0.45
        angle = -math.pi / 2 + k * math.pi / 5
        points.append(f"{cx + radius * math.cos(angle):.1f},{cy + radius * math.sin(angle):.1f}")
    return f'<polygon points="{" ".join(points)}" fill="{fill}" stroke="#975a16" stroke-width="1"/>'


def track(rules: RuleSet, position: Position, top: float) -> tuple[list[str], float]:
    """The shared track: P1's start on the left, P2's on the right, the moon between."""
    moves = rules.moves_to_moon
    spaces = 2 * moves + 1
    step = min(70.0, (WIDTH - 80) / (spaces - 1))
    left = (WIDTH - step * (spaces - 1)) / 2
    y = top + 40
    body = [f'<line x1="{left:.1f}" y1="{y}" x2="{left + step * (spaces - 1):.1f}" y2="{y}" stroke="#a0aec0"'
            ' stroke-width="6" stroke-linecap="round"/>']
    for i in range(spaces):
        x = left + i * step
        k = i if i <= moves else spaces - 1 - i  # moves from that side's start
        if i == moves:
            body.append(f'<circle cx="{x:.1f}" cy="{y}" r="17" fill="#faf089" stroke="#975a16"/>'
                        f'<circle cx="{x + 7:.1f}" cy="{y - 5}" r="14" fill="#fff"/>')
            body.append(_text(x, y + 36, "moon", size=11))
        elif rules.is_star(k):
            body.append(_star(x, y, 13, "#f6e05e"))
        else:
            body.append(f'<circle cx="{x:.1f}" cy="{y}" r="8" fill="#fff" stroke="#718096" stroke-width="2"/>')
        if k == 0:
            body.append(_text(x, y + 36, "P1 start" if i == 0 else "P2 start", size=11))
    for seat, player in enumerate((position.p1, position.p2)):
        i = player.progress if seat == 0 else spaces - 1 - player.progress
        x = left + i * step
        body.append(f'<g class="pawn"><circle cx="{x:.1f}" cy="{y - 24}" r="11" fill="{SEAT_COLOURS[seat]}"'
                    f' stroke="#fff" stroke-width="2"/>{_text(x, y - 20, f"P{seat + 1}", size=10, weight="bold", fill="#fff")}'
                    f'<title>P{seat + 1}: {player.progress} of {moves} moves made</title></g>')
    return body, top + 90


def _tiles(x: float, y: float, label: str, up: int, total: int) -> list[str]:
    colour = TILE_COLOURS[label]
    body = [_text(x, y + 13, f"{label} {up}/{total}", anchor="start", size=12)]
    pitch = min(20.0, 250.0 / max(total, 1))  # many tiles (a variant's) narrow rather than overflow
    for t in range(total):
        fill = colour if t < up else "#fff"
        body.append(f'<rect x="{x + 92 + t * pitch:.1f}" y="{y}" width="{pitch * 0.8:.1f}" height="16" rx="3"'
                    f' fill="{fill}" stroke="{colour}" stroke-width="1.5"/>')
    return body


def _card(x: float, y: float, card: Card, label: str, playable: bool, cost: tuple[int, int]) -> str:
    battery, disc = cost
    price = " ".join(filter(None, (f"{battery}B" if battery else "", f"{disc}D" if disc else "")))
    fill = CARD_COLOURS[card] if playable else "#f7f7f7"
    ink = "#222" if playable else "#a0aec0"
    dash = "" if not card.is_bonus else ' stroke-dasharray="4 2"'
    tip = f"{label}{' (bonus)' if card.is_bonus else ''}; cost {price or 'none'}; {'playable' if playable else 'cannot be paid'}"
    return (f'<g class="card"><rect x="{x:.1f}" y="{y}" width="76" height="34" rx="5" fill="{fill}"'
            f' stroke="{ink}"{dash}/>{_text(x + 38, y + 15, label, size=11, weight="bold", fill=ink)}'
            f'{_text(x + 38, y + 28, price or "free", size=9, fill=ink)}<title>{escape(tip)}</title></g>')


def player_panel(rules: RuleSet, player: PlayerState, seat: int, left: float, top: float) -> tuple[list[str], float]:
    """One player's tiles, hand and rest zone, in a column of the board."""
    colour = SEAT_COLOURS[seat]
    body = [_text(left, top + 14, f"Player {seat + 1}", anchor="start", size=14, weight="bold", fill=colour)]
    y = top + 24
    for label, up, total in (("Health", player.health, rules.health), ("Battery", player.battery, rules.battery_tiles),
                             ("Disc", player.disc, rules.disc_tiles)):
        body += _tiles(left, y, label, up, total)
        y += 22
    legal = set(legal_cards(rules, player, seat))
    own = rules.seat(seat)  # a one-seat rule set prices each player's cards by its own numbers
    body.append(_text(left, y + 14, "hand", anchor="start", size=12, weight="bold"))
    y += 20
    hand = player.hand()
    for k, card in enumerate(hand):
        body.append(_card(left + (k % 4) * 82, y + (k // 4) * 40, card, card.label, card in legal, own.cost(card)))
    y += 40 * math.ceil(max(len(hand), 1) / 4)
    body.append(_text(left, y + 14, "rest zone", anchor="start", size=12, weight="bold"))
    rest = player.rest
    if rest is None:
        body.append(f'<rect x="{left + 70}" y="{y}" width="76" height="34" rx="5" fill="none" stroke="#a0aec0"'
                    f' stroke-dasharray="3 3"/>{_text(left + 108, y + 21, "empty", size=11, fill="#718096")}')
    else:
        label = rest.card.label if rest.copied is None else f"copy>{rest.copied.label}"
        body.append(_card(left + 70, y, rest.card, label, True, own.cost(rest.card)))
    return body, y + 40


def board_svg(rules: RuleSet, position: Position) -> Markup:
    """The whole board: track, then both players side by side."""
    body, y = track(rules, position, 8)
    panels = [player_panel(rules, player, seat, 16 + seat * (WIDTH / 2), y)
              for seat, player in enumerate((position.p1, position.p2))]
    height = max(bottom for _, bottom in panels) + 8
    for part, _ in panels:
        body += part
    body.append(f'<line x1="{WIDTH / 2}" y1="{y}" x2="{WIDTH / 2}" y2="{height - 8}" stroke="#e2e8f0"/>')
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{WIDTH}" height="{height:.0f}"'
            f' viewBox="0 0 {WIDTH} {height:.0f}" {FONT} class="board" id="board">'
            '<title>The board: track, tiles, hands and rest zones</title>')
    return Markup(head + "".join(body) + "</svg>")
