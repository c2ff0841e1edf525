"""What each player sees when drawn bonus cards stay hidden (docs/rules.md,
"What the solver assumes").

Public: tiles, pawns, rest zones, both cards played each turn, who drew (so
hand sizes). Private: the bonus cards a player drew and has not played since.
A played card is public from then on, in the rest zone and back in hand.

So a player's bonus hand splits in two: the cards the opponent has seen
(`known`) and the others. A world in a hidden phase is a position plus each
player's known cards; what everybody sees of it is `public_view`.
"""

from __future__ import annotations

from collections import Counter
from typing import TypeAlias

from .cards import Card
from .state import PlayerState, Position

Known: TypeAlias = tuple[tuple[Card, ...], tuple[Card, ...]]
"""Per seat, the bonus cards in hand that the opponent has seen (sorted)."""


def all_known(position: Position) -> Known:
    """Everything in hand is public (a position reached in open play)."""
    return position.p1.bonus, position.p2.bonus


def unseen_cards(player: PlayerState, known: tuple[Card, ...]) -> tuple[Card, ...]:
    """The player's bonus cards in hand that the opponent has not seen."""
    rest = Counter(player.bonus)
    rest.subtract(known)
    if any(count < 0 for count in rest.values()):
        raise ValueError(f"known cards {[c.label for c in known]} are not all in hand {[c.label for c in player.bonus]}")
    return tuple(sorted(rest.elements()))


def known_after_turn(before: Position, known: Known, cards: tuple[Card, Card], after: Position) -> Known:
    """Each seat's seen cards after a turn from `before` to `after` in which the
    seats played `cards`: a played bonus card leaves the hand (a seen copy of
    that kind first: the cards of one kind are alike), the bonus card that
    was resting comes back seen, and a card drawn this turn is unseen."""
    result = []
    for player_before, seen, card in zip((before.p1, before.p2), known, cards):
        still_seen = Counter(seen)
        if card.is_bonus and still_seen[card] > 0:
            still_seen[card] -= 1
        if player_before.rest is not None and player_before.rest.card.is_bonus:
            still_seen[player_before.rest.card] += 1
        result.append(tuple(sorted(still_seen.elements())))
    return result[0], result[1]


def public_view(position: Position, known: Known) -> tuple:
    """What both players see: the position with each unseen bonus card replaced by its count."""
    return tuple(
        (player.health, player.battery, player.disc, player.progress, player.rest, seen, len(player.bonus) - len(seen))
        for player, seen in zip((position.p1, position.p2), known)
    )


def drawn_cards(before: Position, cards: tuple[Card, Card], after: Position) -> tuple[Card | None, Card | None]:
    """The bonus card each seat drew in a turn from `before` to `after` (None: no draw)."""
    drawn: list[Card | None] = []
    for player_before, card, player_after in zip((before.p1, before.p2), cards, (after.p1, after.p2)):
        expected = Counter(player_before.bonus)
        if card.is_bonus:
            expected[card] -= 1
        if player_before.rest is not None and player_before.rest.card.is_bonus:
            expected[player_before.rest.card] += 1
        extra = Counter(player_after.bonus)
        extra.subtract(expected)
        new = [c for c, count in extra.items() if count > 0]
        drawn.append(new[0] if new else None)
    return drawn[0], drawn[1]
