"""The ten Charge & Spark cards and the fixed facts about them.

Costs and damages are rule-set values (see `config.RuleSet`); what stays fixed
is each card's identity, whether it is a base or bonus card, and which cards
are attacks.
"""

from __future__ import annotations

from enum import IntEnum


class UnknownCardError(ValueError):
    """A card name that is not one of the ten cards."""


class Card(IntEnum):
    """A card; the integer value is its stable code (used in encodings)."""

    CHARGE = 0
    """Battery +1."""
    SPARK = 1
    """Attack: deals `damage.spark` (1)."""
    BARRIER = 2
    """Disc +1; an attack against you this turn deals `barrier_reduce` less."""
    LIGHTNING = 3
    """Attack: deals `damage.lightning` (2)."""
    COUNTER = 4
    """An opposing attack this turn deals you nothing; its player takes `counter_reflect`."""
    MOVE = 5
    """Pawn +1 toward the moon unless attacked or trapped; a star draws a bonus card."""
    RAY = 6
    """Bonus attack: deals `damage.ray` (1)."""
    RECOVERY = 7
    """Bonus: Battery +1 and (by default) Disc +1."""
    TRAP = 8
    """Bonus: Disc +1; the opponent's Move this turn is cancelled."""
    COPY = 9
    """Bonus: acts as the card in its player's rest zone."""

    @property
    def label(self) -> str:
        """The lower-case name used in rule files, notation and output."""
        return self.name.lower()

    @property
    def is_bonus(self) -> bool:
        return self in BONUS_CARDS

    @property
    def is_attack(self) -> bool:
        return self in ATTACK_CARDS

    @classmethod
    def parse(cls, name: str) -> Card:
        """The card called `name` (case-insensitive), or UnknownCardError."""
        try:
            return cls[name.strip().upper()]
        except KeyError:
            known = " ".join(card.label for card in cls)
            raise UnknownCardError(f"unknown card {name.strip()!r} (known: {known})") from None


BASE_CARDS: tuple[Card, ...] = (
    Card.CHARGE, Card.SPARK, Card.BARRIER, Card.LIGHTNING, Card.COUNTER, Card.MOVE,
)
BONUS_CARDS: tuple[Card, ...] = (Card.RAY, Card.RECOVERY, Card.TRAP, Card.COPY)
ATTACK_CARDS: frozenset[Card] = frozenset({Card.SPARK, Card.LIGHTNING, Card.RAY})
COPYABLE_CARDS: tuple[Card, ...] = tuple(card for card in Card if card is not Card.COPY)
"""What a Copy in the rest zone can hold: a Copy copying a Copy takes its copied card."""

# Defaults from the spec's card table: (battery, disc) paid to play the card.
DEFAULT_COSTS: dict[Card, tuple[int, int]] = {
    Card.SPARK: (1, 0),
    Card.LIGHTNING: (2, 0),
    Card.COUNTER: (0, 2),
    Card.RAY: (0, 1),
    Card.COPY: (1, 0),
}
DEFAULT_DAMAGE: dict[Card, int] = {Card.SPARK: 1, Card.LIGHTNING: 2, Card.RAY: 1}
