"""Positions as immutable values, and their stable integer encoding.

A player's part of a position is what the spec's notation names: face-up
Health, Battery and Disc, pawn progress, the rest-zone card (a Copy there
remembers what it copied) and the bonus cards in hand. The base cards in hand
are implied: all six but the one in the rest zone. The bonus pile is implied:
the rule set's bonus cards that neither player holds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:  # numpy is imported where a batch of codes is read: parsing a position never needs it
    import numpy as np

from .cards import BASE_CARDS, COPYABLE_CARDS, Card
from .config import RuleSet

StateCode: TypeAlias = int
"""A position's integer encoding under one rule set (see `PositionCodec`)."""


@dataclass(frozen=True, order=True)
class RestCard:
    """The card in a rest zone: `card`, and for a Copy the card it acts as (or None)."""

    card: Card
    copied: Card | None = None

    def __post_init__(self) -> None:
        if self.copied is not None and self.card is not Card.COPY:
            raise ValueError("only a Copy in the rest zone holds a copied card")
        if self.copied is Card.COPY:
            raise ValueError("a Copy copies the card a Copy holds, never a Copy itself")

    @property
    def acts_as(self) -> Card | None:
        """What a Copy played next turn acts as (None: no effect)."""
        return self.copied if self.card is Card.COPY else self.card


@dataclass(frozen=True, order=True)
class PlayerState:
    health: int
    battery: int
    disc: int
    progress: int = 0
    rest: RestCard | None = None
    bonus: tuple[Card, ...] = ()
    """Bonus cards in hand, sorted (the one in the rest zone is not here)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "bonus", tuple(sorted(self.bonus)))

    def hand(self) -> tuple[Card, ...]:
        """Every card in hand, base cards first, each bonus card once per copy held."""
        in_rest = self.rest.card if self.rest is not None else None
        base = tuple(card for card in BASE_CARDS if card is not in_rest)
        return base + self.bonus

    def held_bonus(self) -> Counter[Card]:
        """Bonus cards this player owns: in hand plus the one in the rest zone."""
        held = Counter(self.bonus)
        if self.rest is not None and self.rest.card.is_bonus:
            held[self.rest.card] += 1
        return held


@dataclass(frozen=True, order=True)
class Position:
    p1: PlayerState
    p2: PlayerState

    def swapped(self) -> Position:
        """The same position with the seats exchanged."""
        return Position(self.p2, self.p1)

    def player(self, seat: int) -> PlayerState:
        return self.p1 if seat == 0 else self.p2

    def bonus_pile(self, rules: RuleSet) -> Counter[Card]:
        """The bonus cards neither player holds."""
        pile = Counter(rules.bonus_cards)
        pile.subtract(self.p1.held_bonus())
        pile.subtract(self.p2.held_bonus())
        return +pile


def initial_player(rules: RuleSet, seat: int = 0) -> PlayerState:
    """Player `seat + 1` as the rules set it up (its seat's own start keys, if any)."""
    numbers = rules.seat(seat)
    return PlayerState(health=rules.health, battery=numbers.start_battery, disc=numbers.start_disc)


def initial_position(rules: RuleSet) -> Position:
    """The position `start`: both players as the rules set them up."""
    return Position(initial_player(rules, 0), initial_player(rules, 1))


# Rest-zone codes: 0 empty; 1 + c a card c other than Copy (1..9); 10 a Copy
# holding nothing; 11 + c a Copy holding card c (11..19).
REST_EMPTY = 0
REST_PLAIN_COPY = 1 + Card.COPY
REST_CODES = 11 + len(COPYABLE_CARDS)


def rest_code(rest: RestCard | None) -> int:
    if rest is None:
        return REST_EMPTY
    if rest.card is not Card.COPY:
        return 1 + rest.card
    if rest.copied is None:
        return REST_PLAIN_COPY
    return 11 + rest.copied


def rest_from_code(code: int) -> RestCard | None:
    if code == REST_EMPTY:
        return None
    if code == REST_PLAIN_COPY:
        return RestCard(Card.COPY)
    if code < REST_PLAIN_COPY:
        return RestCard(Card(code - 1))
    return RestCard(Card.COPY, Card(code - 11))


class PositionCodec:
    """Mixed-radix integer encoding of positions under one rule set.

    A player's code is, most significant first: health - 1, battery, disc,
    progress, rest code, then one digit per bonus card kind (how many of that
    kind are in hand). A position's code is `p1 * players + p2`, so swapping
    seats is arithmetic.
    """

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        kinds = sorted(set(rules.bonus_cards))
        self.bonus_kinds: tuple[Card, ...] = tuple(kinds)
        counts = Counter(rules.bonus_cards)
        self.bonus_radix: tuple[int, ...] = tuple(counts[k] + 1 for k in kinds)
        bonus_space = 1
        for radix in self.bonus_radix:
            bonus_space *= radix
        self.bonus_space = bonus_space
        # (name, radix) from most to least significant.
        self.radices: tuple[tuple[str, int], ...] = (
            ("health", rules.health),
            ("battery", rules.battery_tiles + 1),
            ("disc", rules.disc_tiles + 1),
            ("progress", rules.moves_to_moon),
            ("rest", REST_CODES),
            ("bonus", bonus_space),
        )
        players = 1
        for _, radix in self.radices:
            players *= radix
        self.players = players

    def encode_bonus(self, bonus: tuple[Card, ...]) -> int:
        held = Counter(bonus)
        code = 0
        for kind, radix in zip(self.bonus_kinds, self.bonus_radix):
            code = code * radix + held[kind]
        return code

    def decode_bonus(self, code: int) -> tuple[Card, ...]:
        counts = []
        for radix in reversed(self.bonus_radix):
            counts.append(code % radix)
            code //= radix
        cards: list[Card] = []
        for kind, count in zip(self.bonus_kinds, reversed(counts)):
            cards.extend([kind] * count)
        return tuple(cards)

    def encode_player(self, player: PlayerState) -> int:
        digits = (
            player.health - 1,
            player.battery,
            player.disc,
            player.progress,
            rest_code(player.rest),
            self.encode_bonus(player.bonus),
        )
        code = 0
        for digit, (name, radix) in zip(digits, self.radices):
            if not 0 <= digit < radix:
                raise ValueError(f"{name} digit {digit} out of range 0..{radix - 1}")
            code = code * radix + digit
        return code

    def decode_player(self, code: int) -> PlayerState:
        digits = []
        for _, radix in reversed(self.radices):
            digits.append(code % radix)
            code //= radix
        health, battery, disc, progress, rest, bonus = reversed(digits)
        return PlayerState(
            health=health + 1,
            battery=battery,
            disc=disc,
            progress=progress,
            rest=rest_from_code(rest),
            bonus=self.decode_bonus(bonus),
        )

    def encode(self, position: Position) -> StateCode:
        return self.encode_player(position.p1) * self.players + self.encode_player(position.p2)

    def decode(self, code: StateCode) -> Position:
        p1, p2 = divmod(int(code), self.players)
        return Position(self.decode_player(p1), self.decode_player(p2))

    def swap(self, code: StateCode) -> StateCode:
        p1, p2 = divmod(int(code), self.players)
        return p2 * self.players + p1


def with_player(position: Position, seat: int, player: PlayerState) -> Position:
    return replace(position, p1=player) if seat == 0 else replace(position, p2=player)


def player_digits(codec: PositionCodec, codes, seat: int) -> dict[str, np.ndarray]:
    """The fields of one player's part of a batch of codes, as arrays: health,
    battery, disc, progress, rest (a rest code, see `rest_code`) and bonus (the
    hand's bonus code). Vectorised digit arithmetic: analyses over millions of
    states need not decode each one."""
    import numpy as np

    codes = np.asarray(codes, dtype=np.int64)
    player = codes // codec.players if seat == 0 else codes % codec.players
    digits = {}
    for name, radix in reversed(codec.radices):
        digits[name] = player % radix
        player = player // radix
    digits["health"] = digits["health"] + 1
    return digits


def held_bonus_counts(codec: PositionCodec, codes) -> np.ndarray:
    """How many of each bonus kind (`codec.bonus_kinds`) each player holds, in
    hand or rest zone, for a batch of codes: shape (len(codes), 2, kinds)."""
    import numpy as np

    codes = np.asarray(codes, dtype=np.int64)
    kinds = len(codec.bonus_kinds)
    out = np.zeros((codes.shape[0], 2, kinds), dtype=np.int64)
    kind_of_rest = np.full(REST_CODES, -1, dtype=np.int64)  # rest code -> bonus kind held there
    for k, card in enumerate(codec.bonus_kinds):
        if card is Card.COPY:
            kind_of_rest[REST_PLAIN_COPY:] = k
        else:
            kind_of_rest[1 + card] = k
    for seat in (0, 1):
        digits = player_digits(codec, codes, seat)
        bonus = digits["bonus"]
        for k in reversed(range(kinds)):
            radix = codec.bonus_radix[k]
            out[:, seat, k] = bonus % radix
            bonus = bonus // radix
        held_in_rest = kind_of_rest[digits["rest"]]
        rows = np.nonzero(held_in_rest >= 0)[0]
        out[rows, seat, held_in_rest[rows]] += 1
    return out
