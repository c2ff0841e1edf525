"""The rule set: every variant key of the spec with its default.

A cost, damage, effect or start key may also be set for one seat only
(`p1.cost.spark.battery = 0`, `[p2.damage]`): `RuleSet.seat` gives the numbers
each player plays by. A `RuleSet` is validated whenever it is built (directly, by `dataclasses.replace`,
from a TOML file, from a mapping or from `--set` overrides), so code that holds
one can rely on it. Errors are `RulesError`s with one-line messages naming the
key (and, for a file, the file and line) and why.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import re
import reprlib
import stat
import sys
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

import tomli_w

from .cards import ATTACK_CARDS, BONUS_CARDS, DEFAULT_COSTS, DEFAULT_DAMAGE, Card

MAX_BONUS_CARDS = 8
"""Largest bonus pile a rule set may have (keeps the state space bounded)."""
MAX_AMOUNT = 1000
"""Largest Health, tile count, cost or damage: far past any game that fits in
memory, and small enough that no count or product of counts overflows."""

TILE_KINDS: tuple[str, ...] = ("battery", "disc")
ATTACK_ORDER: tuple[Card, ...] = tuple(card for card in Card if card in ATTACK_CARDS)
FREE_CORE: tuple[Card, ...] = (Card.CHARGE, Card.BARRIER, Card.MOVE)
"""Two of these must be free: at most one is in the rest zone, so one is always playable."""

CHOICES: dict[str, tuple[str, ...]] = {
    "recovery": ("battery+disc", "battery"),
    "clash": ("stronger", "difference"),
    "double_goal": ("cancel",),
    "contested_draw": ("coin", "nobody"),
}

SEATS: tuple[str, ...] = ("p1", "p2")
"""The tables that hold one seat's own keys (`p1.KEY`, `p2.KEY`)."""
SEAT_KEYS: tuple[str, ...] = (
    "start_battery", "start_disc", "recovery", "counter_reflect", "barrier_reduce", "cost", "damage",
)
"""The keys a seat may have of its own: what a player starts with, what its
cards cost, deal and do. The rest (the board, Health and the tiles, which fix
the state encoding, the bonus pile and the shared rulings) are both players'."""
SEAT_SCALARS: tuple[str, ...] = SEAT_KEYS[:5]
START_KEYS: tuple[str, ...] = ("start_battery", "start_disc")
"""The per-seat keys that only set up the start: they change no turn."""

# Top-level keys of a rule file / canonical mapping, in output order.
KEYS: tuple[str, ...] = (
    "name", "board", "health", "battery_tiles", "start_battery", "disc_tiles",
    "start_disc", "bonus_cards", "recovery", "clash", "double_goal",
    "contested_draw", "counter_reflect", "barrier_reduce", "cost", "damage", *SEATS,
)
GAME_KEYS: tuple[str, ...] = tuple(key for key in KEYS if key != "name")
"""The keys that define the game (`name` is only a title)."""
STRING_KEYS: frozenset[str] = frozenset({"name", "board", *CHOICES})
LIST_KEYS: frozenset[str] = frozenset({"bonus_cards"})


class RulesError(ValueError):
    """A bad rule set: `key` (dotted, or None) is wrong because of `reason`.

    `source` (a file name or `--set ARG`) and `line` locate it; `related` are
    other keys whose values take part (used to find a line or a `--set`).
    """

    def __init__(
        self,
        reason: str,
        *,
        key: str | None = None,
        source: str | None = None,
        line: int | None = None,
        related: tuple[str, ...] = (),
    ) -> None:
        self.reason = reason
        self.key = key
        self.source = source
        self.line = line
        self.related = related
        super().__init__(self.message)

    @property
    def message(self) -> str:
        parts = []
        if self.source is not None:
            parts.append(self.source if self.line is None else f"{self.source} line {self.line}")
        if self.key is not None:
            parts.append(self.key)
        parts.append(self.reason)
        return ": ".join(parts)

    def __str__(self) -> str:
        return self.message

    def located(self, source: str | None, line: int | None = None) -> RulesError:
        """The same error, said to come from `source` (and `line`)."""
        return RulesError(self.reason, key=self.key, source=source, line=line, related=self.related)


def _default_costs() -> tuple[tuple[int, int], ...]:
    return tuple(DEFAULT_COSTS.get(card, (0, 0)) for card in Card)


def _default_damage() -> tuple[int, ...]:
    return tuple(DEFAULT_DAMAGE.get(card, 0) for card in Card)


@dataclass(frozen=True)
class SeatRules:
    """The numbers one seat plays by: the shared keys, with that seat's own over them."""

    start_battery: int
    start_disc: int
    recovery: str
    counter_reflect: int
    """Damage an attacker takes when its attack meets this seat's Counter."""
    barrier_reduce: int
    """How much less an attack deals against this seat's Barrier."""
    costs: tuple[tuple[int, int], ...]
    damage: tuple[int, ...]

    def cost(self, card: Card) -> tuple[int, int]:
        """(battery, disc) this seat pays to play `card`."""
        return self.costs[card]

    def damage_of(self, card: Card) -> int:
        """What `card` deals when this seat plays it (0 for a card that is no attack)."""
        return self.damage[card]


SEAT_ATOMS: tuple[str, ...] = (
    *SEAT_SCALARS, *(f"cost.{card.label}" for card in Card), *(f"damage.{card.label}" for card in ATTACK_ORDER),
)
"""What one seat's override can replace, one entry each: a scalar key, a
card's whole cost (a (battery, disc) pair) or an attack card's damage."""


def _seat_atoms(numbers: RuleSet | SeatRules) -> dict[str, Any]:
    """Every `SEAT_ATOMS` entry's value in `numbers` (the shared keys of a
    RuleSet, or one seat's)."""
    atoms: dict[str, Any] = {key: getattr(numbers, key) for key in SEAT_SCALARS}
    atoms.update({f"cost.{card.label}": numbers.costs[card] for card in Card})
    atoms.update({f"damage.{card.label}": numbers.damage[card] for card in ATTACK_ORDER})
    return atoms


@dataclass(frozen=True)
class RuleSet:
    """One rule set. Costs and damages are indexed by `Card` code.

    `costs`, `damage`, `start_battery` ... are the shared keys; `p1` and `p2`
    hold a seat's own numbers where they differ (see `SEAT_ATOMS`), as sorted
    (entry, value) pairs, e.g. `p1=(("cost.spark", (0, 0)),)` (a mapping of
    the same is accepted). The rules engine reads `seat(0)` and `seat(1)`.
    """

    name: str = ""
    board: str = "S.*.*M"
    health: int = 4
    battery_tiles: int = 4
    start_battery: int = 2
    disc_tiles: int = 4
    start_disc: int = 0
    bonus_cards: tuple[Card, ...] = BONUS_CARDS
    recovery: str = "battery+disc"
    clash: str = "stronger"
    double_goal: str = "cancel"
    contested_draw: str = "coin"
    counter_reflect: int = 2
    barrier_reduce: int = 1
    costs: tuple[tuple[int, int], ...] = field(default_factory=_default_costs)
    damage: tuple[int, ...] = field(default_factory=_default_damage)
    p1: tuple[tuple[str, Any], ...] = ()
    p2: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        _validate(self)

    def cost(self, card: Card) -> tuple[int, int]:
        """(battery, disc) paid to play `card` by the shared key (a seat's own: `seat(s).cost`)."""
        return self.costs[card]

    def damage_of(self, card: Card) -> int:
        """What `card` deals by the shared key (a seat's own: `seat(s).damage_of`)."""
        return self.damage[card]

    def seat(self, seat: int) -> SeatRules:
        """The numbers player `seat + 1` plays by (0: P1, 1: P2)."""
        return self._seat_rules[seat]  # type: ignore[attr-defined]  # set by _validate

    @property
    def is_seat_symmetric(self) -> bool:
        """Whether both players play by the same numbers (no one-seat key), so
        that swapping the seats maps the game onto itself."""
        return not self.p1 and not self.p2

    @property
    def seats_play_alike(self) -> bool:
        """Whether both players' cards cost, deal and do the same, whatever each
        starts with: a turn is then the same seen from either seat (the turn
        rules are symmetric), though the start need not be its own twin."""
        return all(atom in START_KEYS for atom, _ in (*self.p1, *self.p2))

    def seats_swapped(self) -> RuleSet:
        """The mirror rule set: each seat's own numbers given to the other seat."""
        return replace(self, p1=self.p2, p2=self.p1)

    @property
    def moves_to_moon(self) -> int:
        """Moves from the start space to the moon (pawn progress runs 0 .. this - 1)."""
        return len(self.board) - 1

    def is_star(self, progress: int) -> bool:
        """Whether the space reached after `progress` moves bears a star."""
        return 0 < progress < self.moves_to_moon and self.board[progress] == "*"


# ---------------------------------------------------------------- validation


def _is_int(value: object) -> bool:
    # bool is an int subclass, but `health = true` is a mistake, not 1.
    return isinstance(value, int) and not isinstance(value, bool)


_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 60
_SHOWN.maxlevel = 3


def _shown(value: object) -> str:
    """`value` as an error message quotes it: short, and never failing (a
    5,000-digit integer has no repr, a table nested thousands deep overflows one)."""
    if _is_int(value) and value.bit_length() > 128:
        return f"a number of {math.floor(value.bit_length() * math.log10(2)) + 1:,} or so digits"
    return _SHOWN.repr(value)


def _check_int(key: str, value: object, low: int, high: int | None = None,
               high_name: str | None = None, related: tuple[str, ...] = ()) -> None:
    """`value` must be an integer from `low` to `high` (named `high_name`), and
    never past `MAX_AMOUNT`: the solver's counters are machine integers."""
    if high is None:
        want = f"an integer from {low} to {MAX_AMOUNT}"
    else:
        want = f"an integer from {low} to {high_name} ({high})" if high_name else f"an integer from {low} to {high}"
    high = MAX_AMOUNT if high is None else min(high, MAX_AMOUNT)
    if not _is_int(value) or not low <= value <= high:
        raise RulesError(f"must be {want}, got {_shown(value)}", key=key, related=related)


def _check_board(board: object) -> None:
    shape = "S (start), then '.' plain or '*' star spaces, then M (moon), e.g. 'S.*.*M'"
    if not isinstance(board, str):
        raise RulesError(f"must be a string: {shape}; got {_shown(board)}", key="board")
    if not board:
        raise RulesError(f"must be {shape}; got ''", key="board")
    if board[0] != "S":
        raise RulesError(f"character 1 {board[0]!r} must be 'S'; a board is {shape}", key="board")
    if len(board) < 2:
        raise RulesError(f"{_shown(board)} has no moon (needs at least one move); a board is {shape}", key="board")
    for i, char in enumerate(board[1:-1], start=2):
        if char not in ".*":
            raise RulesError(f"character {i} {char!r} must be '.' or '*'; a board is {shape}", key="board")
    if board[-1] != "M":
        raise RulesError(f"last character {len(board)} {board[-1]!r} must be 'M'; a board is {shape}", key="board")


def _validate(rules: RuleSet) -> None:
    """Check every field of `rules` and normalise its containers (it is frozen)."""
    if not isinstance(rules.name, str):
        raise RulesError(f"must be a string, got {_shown(rules.name)}", key="name")
    if not rules.name.isprintable() or len(rules.name) > 200:
        # A title is echoed to terminals and reports: no escape sequences, no novels.
        raise RulesError(f"must be printable text of at most 200 characters, got {_shown(rules.name)}", key="name")
    _check_board(rules.board)
    _check_int("health", rules.health, 1)
    _check_int("battery_tiles", rules.battery_tiles, 0)
    _check_int("start_battery", rules.start_battery, 0, rules.battery_tiles, "battery_tiles",
               related=("battery_tiles",))
    _check_int("disc_tiles", rules.disc_tiles, 0)
    _check_int("start_disc", rules.start_disc, 0, rules.disc_tiles, "disc_tiles",
               related=("disc_tiles",))
    _check_int("counter_reflect", rules.counter_reflect, 0)
    _check_int("barrier_reduce", rules.barrier_reduce, 0)
    for key, allowed in CHOICES.items():
        value = getattr(rules, key)
        if value not in allowed or not isinstance(value, str):
            options = ", ".join(repr(a) for a in allowed)
            raise RulesError(f"must be one of {options}, got {_shown(value)}", key=key)

    object.__setattr__(rules, "bonus_cards", _checked_bonus(rules.bonus_cards))
    object.__setattr__(rules, "costs", _checked_costs(rules.costs))
    object.__setattr__(rules, "damage", _checked_damage(rules.damage))

    _check_free_core(rules.costs, "cost", lambda card: f"cost.{card.label}")
    _normalise_seats(rules)


def _check_free_core(costs: tuple[tuple[int, int], ...], key: str, card_key: Any) -> None:
    """Two of Charge, Barrier and Move free under `costs` (`card_key(card)` names a card's cost key)."""
    not_free = [card for card in FREE_CORE if costs[card] != (0, 0)]
    if len(not_free) > 1:
        detail = ", ".join(f"{card.label} costs {_cost_text(costs[card])}" for card in not_free)
        raise RulesError(
            "at least two of charge, barrier and move must be free so that a player always has "
            f"a legal card (at most one of them is in the rest zone); {detail}",
            key=key, related=tuple(card_key(card) for card in not_free),
        )


def _normalise_seats(rules: RuleSet) -> None:
    """Check `p1` and `p2` and bring them to one form: an entry equal to the
    shared key is dropped, and an entry both seats give the same value becomes
    the shared key. So a rule set says each thing one way, and one that gives
    both seats the same numbers is the shared-key rule set (same fingerprint)."""
    seats = [_checked_seat(rules, name, getattr(rules, name)) for name in SEATS]
    for atom in SEAT_ATOMS:
        if atom in seats[0] and atom in seats[1] and seats[0][atom] == seats[1][atom]:
            value = seats[0].pop(atom)
            del seats[1][atom]
            table, _, label = atom.partition(".")
            if table == "cost":
                costs = list(rules.costs)
                costs[Card[label.upper()]] = value
                object.__setattr__(rules, "costs", tuple(costs))
            elif table == "damage":
                damage = list(rules.damage)
                damage[Card[label.upper()]] = value
                object.__setattr__(rules, "damage", tuple(damage))
            else:
                object.__setattr__(rules, atom, value)
    shared = _seat_atoms(rules)
    numbers = []
    for name, own in zip(SEATS, seats):
        own = {atom: value for atom, value in own.items() if value != shared[atom]}
        object.__setattr__(rules, name, tuple((atom, own[atom]) for atom in SEAT_ATOMS if atom in own))
        seat = SeatRules(**{key: own.get(key, shared[key]) for key in SEAT_SCALARS},
                         costs=tuple(own.get(f"cost.{card.label}", rules.costs[card]) for card in Card),
                         damage=tuple(own.get(f"damage.{card.label}", rules.damage[card]) for card in Card))
        # Each seat's costs (the shared ones too: a cost both seats were given is now shared).
        own_core = any(f"cost.{card.label}" in own for card in FREE_CORE)
        _check_free_core(seat.costs, f"{name}.cost" if own_core else "cost",
                         lambda card, name=name, own=own: f"{name}.cost.{card.label}"
                         if f"cost.{card.label}" in own else f"cost.{card.label}")
        numbers.append(seat)
    object.__setattr__(rules, "_seat_rules", tuple(numbers))


def _checked_seat(rules: RuleSet, name: str, value: object) -> dict[str, Any]:
    """A seat's entries (a mapping or (entry, value) pairs) as a dict, each checked."""
    if isinstance(value, Mapping):
        pairs = list(value.items())
    else:
        try:
            pairs = [tuple(pair) for pair in value]  # type: ignore[union-attr]
        except TypeError:
            pairs = [()]
        if any(len(pair) != 2 for pair in pairs):
            raise RulesError(f"must be (entry, value) pairs or a table of per-seat keys, got {_shown(value)}",
                             key=name)
    return {str(atom): _checked_seat_value(rules, name, atom, amount) for atom, amount in pairs}


def _checked_seat_value(rules: RuleSet, name: str, atom: object, value: object) -> Any:
    key = f"{name}.{atom}"
    if atom not in SEAT_ATOMS:
        raise _not_per_seat(key)
    if atom in ("start_battery", "start_disc"):
        tiles = "battery_tiles" if atom == "start_battery" else "disc_tiles"
        _check_int(key, value, 0, getattr(rules, tiles), tiles, related=(tiles,))
    elif atom in ("counter_reflect", "barrier_reduce"):
        _check_int(key, value, 0)
    elif atom == "recovery":
        if value not in CHOICES["recovery"] or not isinstance(value, str):
            options = ", ".join(repr(a) for a in CHOICES["recovery"])
            raise RulesError(f"must be one of {options}, got {_shown(value)}", key=key)
    elif str(atom).startswith("cost."):
        try:
            pair = tuple(value)  # type: ignore[arg-type]
        except TypeError:
            pair = ()
        if len(pair) != len(TILE_KINDS):
            raise RulesError(f"must be a (battery, disc) pair, got {_shown(value)}", key=key)
        for kind, amount in zip(TILE_KINDS, pair):
            _check_int(f"{key}.{kind}", amount, 0)
        return (pair[0], pair[1])
    else:
        _check_int(key, value, 0)
    return value


def _not_per_seat(key: str) -> RulesError:
    """The error for `pN.KEY` where KEY is no per-seat key."""
    top = key.partition(".")[2].split(".")[0]
    if top in SEAT_KEYS:
        return RulesError(f"unknown per-seat entry (entries: {', '.join(SEAT_ATOMS)})", key=key)
    if top in KEYS and top not in SEATS:
        return RulesError(f"not a per-seat key: {top} is the same for both players "
                          f"(per-seat keys: {', '.join(SEAT_KEYS)})", key=key)
    return RulesError(f"unknown per-seat key (per-seat keys: {', '.join(SEAT_KEYS)})", key=key)


def _unknown_key(key: str) -> RulesError:
    """The error for a top-level key that is none of `KEYS` (a seat other than p1, p2 said so)."""
    if re.fullmatch(r"[pP][0-9]+", key):
        return RulesError(f"unknown seat (seats: {', '.join(SEATS)})", key=key)
    return _unknown(key, KEYS)


def _cost_text(cost: tuple[int, int]) -> str:
    return " + ".join(f"{n} {kind}" for n, kind in zip(cost, TILE_KINDS) if n)


def _checked_bonus(value: object) -> tuple[Card, ...]:
    bonus_names = ", ".join(card.label for card in BONUS_CARDS)
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise RulesError(f"must be a list of bonus cards ({bonus_names}), got {_shown(value)}", key="bonus_cards")
    cards = tuple(value)
    for card in cards:
        if not isinstance(card, Card):
            raise RulesError(f"must be a list of bonus cards ({bonus_names}), got {_shown(card)}", key="bonus_cards")
        if not card.is_bonus:
            raise RulesError(f"{card.label} is a base card; bonus cards are {bonus_names}", key="bonus_cards")
    if len(cards) > MAX_BONUS_CARDS:
        raise RulesError(f"at most {MAX_BONUS_CARDS} cards, got {len(cards)}", key="bonus_cards")
    # A multiset: the canonical form is sorted, so order never matters.
    return tuple(sorted(cards))


def _checked_costs(value: object) -> tuple[tuple[int, int], ...]:
    try:
        pairs = [tuple(pair) for pair in value]  # type: ignore[union-attr]
    except TypeError:
        raise RulesError(f"must be one (battery, disc) pair per card, got {_shown(value)}", key="cost") from None
    if len(pairs) != len(Card):
        raise RulesError(f"must have one (battery, disc) pair per card ({len(Card)}), got {len(pairs)}", key="cost")
    for card, pair in zip(Card, pairs):
        if len(pair) != len(TILE_KINDS):
            raise RulesError(f"must be a (battery, disc) pair, got {_shown(pair)}", key=f"cost.{card.label}")
        for kind, amount in zip(TILE_KINDS, pair):
            _check_int(f"cost.{card.label}.{kind}", amount, 0)
    return tuple((pair[0], pair[1]) for pair in pairs)


def _checked_damage(value: object) -> tuple[int, ...]:
    try:
        amounts = tuple(value)  # type: ignore[arg-type]
    except TypeError:
        raise RulesError(f"must be one amount per card, got {_shown(value)}", key="damage") from None
    if len(amounts) != len(Card):
        raise RulesError(f"must have one amount per card ({len(Card)}), got {len(amounts)}", key="damage")
    attacks = ", ".join(card.label for card in ATTACK_ORDER)
    for card, amount in zip(Card, amounts):
        key = f"damage.{card.label}"
        if card.is_attack:
            _check_int(key, amount, 0)
        elif amount != 0 or not _is_int(amount):
            raise RulesError(f"only attack cards ({attacks}) deal damage, got {_shown(amount)}", key=key)
    return amounts


# ------------------------------------------------------------ mappings / TOML


def _unknown(key: str, known: Iterable[str], what: str = "key") -> RulesError:
    return RulesError(f"unknown {what} (known: {', '.join(known)})", key=key)


def _card_key(key: str, name: object, allowed: Iterable[Card], what: str) -> Card:
    # Keys are lower case as in the spec; values (bonus_cards) go through Card.parse.
    for card in allowed:
        if name == card.label:
            return card
    raise _unknown(key, [card.label for card in allowed], what)


def _fields_from_mapping(mapping: Mapping[str, Any], base: RuleSet) -> dict[str, Any]:
    """RuleSet constructor arguments: `base`'s values with `mapping`'s keys applied."""
    if not isinstance(mapping, Mapping):
        raise RulesError(f"a rule set must be a table, got {_shown(mapping)}")
    values: dict[str, Any] = {f.name: getattr(base, f.name) for f in fields(RuleSet)}
    costs = list(base.costs)
    damage = list(base.damage)
    for key, value in mapping.items():
        if key not in KEYS:
            raise _unknown_key(str(key))
        if key in SEATS:
            values[key] = _seat_from_table(key, value, dict(getattr(base, key)))
        elif key == "cost":
            if not isinstance(value, Mapping):
                raise RulesError(f"must be a table of cards, e.g. lightning = {{ battery = 3 }}, got {_shown(value)}",
                                 key="cost")
            for name, table in value.items():
                card = _card_key(f"cost.{name}", name, Card, "card")
                costs[card] = _cost_from_table(f"cost.{name}", table)
        elif key == "damage":
            if not isinstance(value, Mapping):
                raise RulesError(f"must be a table of attack cards, e.g. lightning = 2, got {_shown(value)}",
                                 key="damage")
            for name, amount in value.items():
                card = _card_key(f"damage.{name}", name, ATTACK_ORDER, "attack card")
                damage[card] = amount
        elif key == "bonus_cards":
            values[key] = _bonus_from_list(value)
        else:
            values[key] = value
    values["costs"] = tuple(costs)
    values["damage"] = tuple(damage)
    return values


def _seat_from_table(seat: str, table: object, atoms: dict[str, Any]) -> dict[str, Any]:
    """`atoms` (a seat's entries) with the rule file's `[p1]` / `[p2]` table applied:
    the same keys as the shared ones, and the same meaning (a card's cost table
    replaces that seat's cost of the card; a tile kind left out costs 0)."""
    if not isinstance(table, Mapping):
        raise RulesError(f"must be a table of per-seat keys ({', '.join(SEAT_KEYS)}), "
                         f"e.g. cost.spark = {{ battery = 0 }}, got {_shown(table)}", key=seat)
    atoms = dict(atoms)
    for key, value in table.items():
        if key not in SEAT_KEYS:
            raise _not_per_seat(f"{seat}.{key}")
        if key in ("cost", "damage"):
            if not isinstance(value, Mapping):
                raise RulesError(f"must be a table of cards, got {_shown(value)}", key=f"{seat}.{key}")
            for name, item in value.items():
                if key == "cost":
                    card = _card_key(f"{seat}.cost.{name}", name, Card, "card")
                    atoms[f"cost.{card.label}"] = _cost_from_table(f"{seat}.cost.{name}", item)
                else:
                    card = _card_key(f"{seat}.damage.{name}", name, ATTACK_ORDER, "attack card")
                    atoms[f"damage.{card.label}"] = item
        else:
            atoms[key] = value
    return atoms


def _seat_table(atoms: Mapping[str, Any]) -> dict[str, Any]:
    """A seat's entries as its rule-file table (TOML-shaped, keys in `SEAT_KEYS` order)."""
    table: dict[str, Any] = {key: atoms[key] for key in SEAT_SCALARS if key in atoms}
    for kind in ("cost", "damage"):
        cards = {atom.partition(".")[2]: value for atom, value in atoms.items() if atom.startswith(kind + ".")}
        if cards:
            table[kind] = {label: dict(zip(TILE_KINDS, value)) if kind == "cost" else value
                           for label, value in sorted(cards.items(), key=lambda item: Card[item[0].upper()])}
    return table


def _cost_from_table(key: str, table: object) -> tuple[Any, Any]:
    """A card's cost table replaces that card's cost; a tile kind left out costs 0."""
    if not isinstance(table, Mapping):
        raise RulesError(f"must be a table like {{ battery = 1, disc = 0 }}, got {_shown(table)}", key=key)
    for kind in table:
        if kind not in TILE_KINDS:
            raise _unknown(f"{key}.{kind}", TILE_KINDS, "tile kind")
    return (table.get("battery", 0), table.get("disc", 0))


def _bonus_from_list(value: object) -> tuple[Card, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise RulesError(f"must be a list of card names, e.g. [\"ray\", \"trap\"], got {_shown(value)}",
                         key="bonus_cards")
    cards = []
    for name in value:
        if not isinstance(name, str):
            raise RulesError(f"must be a list of card names, got {_shown(name)}", key="bonus_cards")
        try:
            cards.append(Card.parse(name))
        except ValueError as exc:
            raise RulesError(str(exc), key="bonus_cards") from None
    return tuple(cards)


def rules_from_mapping(mapping: Mapping[str, Any], source: str = "rules") -> RuleSet:
    """A rule set from TOML-shaped data; keys left out take their defaults.

    `source` names where the data came from in error messages.
    """
    try:
        return RuleSet(**_fields_from_mapping(mapping, RuleSet()))
    except RulesError as exc:
        raise exc.located(source) from None


def canonical_mapping(rules: RuleSet) -> dict[str, Any]:
    """Every key and value, JSON-serialisable (for `--json` and fingerprints)."""
    return {
        "name": rules.name,
        "board": rules.board,
        "health": rules.health,
        "battery_tiles": rules.battery_tiles,
        "start_battery": rules.start_battery,
        "disc_tiles": rules.disc_tiles,
        "start_disc": rules.start_disc,
        "bonus_cards": [card.label for card in rules.bonus_cards],
        "recovery": rules.recovery,
        "clash": rules.clash,
        "double_goal": rules.double_goal,
        "contested_draw": rules.contested_draw,
        "counter_reflect": rules.counter_reflect,
        "barrier_reduce": rules.barrier_reduce,
        "cost": {card.label: dict(zip(TILE_KINDS, rules.cost(card))) for card in Card},
        "damage": {card.label: rules.damage_of(card) for card in ATTACK_ORDER},
        # A seat's own keys only where it has some: an ordinary rule set's mapping (and fingerprint) is unchanged.
        **{seat: _seat_table(dict(getattr(rules, seat))) for seat in SEATS if getattr(rules, seat)},
    }


def _flat(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in mapping.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def differences_from_default(rules: RuleSet) -> list[str]:
    """Each game key that differs from the printed rules, as KEY=VALUE (dotted
    keys); a seat's own keys (`p1.cost.spark.battery=0`) where they differ from
    the shared ones."""
    default = _flat(canonical_mapping(RuleSet()))
    flat = _flat(canonical_mapping(rules))

    def differs(key: str, value: object) -> bool:
        seat, _, shared_key = key.partition(".")
        if seat in SEATS:  # a tile kind a seat's cost keeps from the shared cost is no difference
            return flat.get(shared_key) != value
        return key != "name" and default.get(key) != value

    return [
        f"{key}={','.join(map(str, value)) if isinstance(value, list) else value}"
        for key, value in flat.items() if differs(key, value)
    ]


def _game_mapping(rules: RuleSet) -> dict[str, Any]:
    """The game-defining part of `canonical_mapping`, in one form per game: where
    the seats' numbers differ, the shared value (which neither seat then plays
    by) is null and each seat's table holds its own, so `p1.damage.spark=0`
    and `damage.spark=0, p2.damage.spark=1` are one game."""
    game = {key: value for key, value in canonical_mapping(rules).items() if key in GAME_KEYS and key not in SEATS}
    if rules.is_seat_symmetric:
        return game
    own = [_seat_atoms(rules.seat(0)), _seat_atoms(rules.seat(1))]
    differing = [atom for atom in SEAT_ATOMS if own[0][atom] != own[1][atom]]
    for atom in differing:
        table, _, label = atom.partition(".")
        if label:
            game[table][label] = None
        else:
            game[atom] = None
    for seat, atoms in zip(SEATS, own):
        game[seat] = _seat_table({atom: atoms[atom] for atom in differing})
    return game


def fingerprint(rules: RuleSet) -> str:
    """12 hex digits identifying the game the rules define (the name is ignored)."""
    game = _game_mapping(rules)
    text = json.dumps(game, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


# ------------------------------------------------------------------- files


_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


MAX_RULES_FILE_BYTES = 1 << 20
"""A rules file is a few dozen lines; past this it is no rules file."""


def _regular_file_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the regular file at `path`; OSError for anything else. Opened
    without blocking and checked before it is read: a FIFO or a device would
    wait for a writer, or never end."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(descriptor, "rb") as handle:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if info.st_size > MAX_RULES_FILE_BYTES:
            raise OSError(errno.EFBIG, f"{info.st_size:,} bytes, more than a rules file's {MAX_RULES_FILE_BYTES:,}")
        return handle.read(MAX_RULES_FILE_BYTES + 1)


def load_rules(path: str | os.PathLike[str]) -> RuleSet:
    """The rule set in the TOML file at `path`; RulesError naming the file (and line)."""
    source = os.fspath(path)
    try:
        data = _regular_file_bytes(path)
    except OSError as exc:
        raise RulesError(f"cannot read rules file: {exc.strerror or exc}", source=source) from None
    try:
        text = data.decode("utf-8-sig")  # a byte order mark, as some editors write, is no part of the TOML
    except UnicodeDecodeError as exc:
        raise RulesError(f"not UTF-8 text: {exc.reason} at byte {exc.start}", source=source) from None
    return rules_from_toml(text, source)


def parsed_toml(text: str) -> dict[str, Any]:
    """`tomllib.loads(text)`; a RulesError for what tomllib lets out besides
    TOMLDecodeError: a number too long to convert, or nesting too deep to parse."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise RulesError("invalid TOML: tables or arrays nested too deeply") from None
    except ValueError as exc:
        if isinstance(exc, tomllib.TOMLDecodeError):
            raise
        raise RulesError(f"invalid TOML: a number too long (at most {sys.get_int_max_str_digits()} digits)") from None


def rules_from_toml(text: str, source: str = "rules") -> RuleSet:
    """The rule set in TOML `text`; errors name `source` and the line."""
    try:
        mapping = parsed_toml(text)
    except RulesError as exc:
        raise exc.located(source) from None
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = _TOML_POSITION.search(message)
        if match is None:
            # "(at end of document)": the last line is where the text ran out.
            message = message.replace(" (at end of document)", " at end of file")
            raise RulesError(f"invalid TOML: {message}", source=source,
                             line=max(1, len(text.splitlines()))) from None
        reason = f"invalid TOML: {message[:match.start()]} (column {match.group(2)})"
        raise RulesError(reason, source=source, line=int(match.group(1))) from None
    try:
        return RuleSet(**_fields_from_mapping(mapping, RuleSet()))
    except RulesError as exc:
        line = None
        # Most specific key first: `cost.move` locates a line better than `cost`.
        keys = sorted((k for k in (exc.key, *exc.related) if k is not None), key=lambda k: -k.count("."))
        for key in keys:
            line = _find_line(text, key)
            if line is not None:
                break
        raise exc.located(source, line) from None


def _split_key(text: str) -> list[str]:
    """A TOML dotted key as its parts (quotes removed); good enough for locating lines."""
    parts = re.findall(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'|[^.]+', text)
    return [part.strip().strip("\"'").strip() for part in parts if part.strip()]


def _find_line(text: str, key: str) -> int | None:
    """The 1-based line that sets `key` (or the table holding it), by scanning `text`.

    The best match is the line whose full dotted key is longest among those
    equal to `key`, a prefix of it (an inline table holding it) or extending it.
    """
    target = key.split(".")
    table: list[str] = []
    best: tuple[int, int] | None = None  # (score, line)
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            header = line.strip("[]").split("]")[0] if "]" in line else line.strip("[")
            table = _split_key(header.strip("[]"))
            path = table
        elif "=" in line:
            path = table + _split_key(line.split("=", 1)[0])
        else:
            continue
        common = 0
        while common < min(len(path), len(target)) and path[common] == target[common]:
            common += 1
        if common == 0 or (common < len(path) and common < len(target)):
            continue  # diverges from the key: unrelated
        score = 2 * common + (1 if len(path) <= len(target) else 0)
        if best is None or score > best[0]:
            best = (score, number)
    return None if best is None else best[1]


def rules_to_toml(rules: RuleSet) -> str:
    """The rule set as a commented TOML file; `load_rules` of it gives `rules` back."""
    def value(key: str, item: object) -> str:
        # tomli_w escapes strings correctly (control characters, quotes, DEL).
        return tomli_w.dumps({key: item}).strip()

    bonus = ", ".join(f'"{card.label}"' for card in rules.bonus_cards)
    lines = [
        f"# Charge & Spark rule set (fingerprint {fingerprint(rules)}).",
        "# Every key is optional: a key left out takes its default.",
        "",
        "# A title only; it does not change the game or the fingerprint.",
        value("name", rules.name),
        "# The track from a player's start to the moon: S start, . plain space,",
        "# * star (landing draws a bonus card), M moon. The default is an assumption.",
        value("board", rules.board),
        "# Face-up Health at the start; reaching 0 loses.",
        value("health", rules.health),
        "# Battery tiles (cap on face-up Battery) and how many start face up.",
        value("battery_tiles", rules.battery_tiles),
        value("start_battery", rules.start_battery),
        "# Disc tiles (cap on face-up Disc) and how many start face up.",
        value("disc_tiles", rules.disc_tiles),
        value("start_disc", rules.start_disc),
        f"# The shared bonus pile, a multiset of ray, recovery, trap, copy (at most {MAX_BONUS_CARDS}).",
        f"bonus_cards = [{bonus}]",
        '# Recovery gives "battery+disc" (English rulebook) or "battery" only (French page).',
        value("recovery", rules.recovery),
        '# Two attacks meet: the weaker side takes the "stronger" card\'s damage, or the "difference".',
        value("clash", rules.clash),
        '# Both pawns reach the moon in one turn: "cancel" both moves.',
        value("double_goal", rules.double_goal),
        '# Both pawns land on a star with one bonus card left: "coin" decides, or "nobody" draws.',
        value("contested_draw", rules.contested_draw),
        "# Damage an attacker takes when its attack meets Counter.",
        value("counter_reflect", rules.counter_reflect),
        "# How much less an attack deals against Barrier.",
        value("barrier_reduce", rules.barrier_reduce),
        "",
        "# Face-up tiles paid to play each card. A card's table replaces its cost;",
        "# a tile kind left out costs 0. At least two of charge, barrier, move must be free.",
        "[cost]",
    ]
    for card in Card:
        battery, disc = rules.cost(card)
        lines.append(f"{card.label} = {{ battery = {battery}, disc = {disc} }}")
    lines += ["", "# Damage dealt by each attack card.", "[damage]"]
    for card in ATTACK_ORDER:
        lines.append(f"{card.label} = {rules.damage_of(card)}")
    lines += [
        "",
        "# One player only: any of start_battery, start_disc, recovery, counter_reflect,",
        "# barrier_reduce, cost and damage in a [p1] or [p2] table (e.g. [p1.cost] with",
        "# spark = { battery = 0 }) is that player's own, over the shared key above.",
    ]
    for seat in SEATS:
        table = _seat_table(dict(getattr(rules, seat)))
        if not table:
            continue
        lines.append("")
        if any(key in table for key in SEAT_SCALARS):
            lines.append(f"[{seat}]")
            lines += [value(key, table[key]) for key in SEAT_SCALARS if key in table]
        if "cost" in table:
            lines.append(f"[{seat}.cost]")
            lines += [f"{label} = {{ battery = {c['battery']}, disc = {c['disc']} }}" for label, c in table["cost"].items()]
        if "damage" in table:
            lines.append(f"[{seat}.damage]")
            lines += [f"{label} = {amount}" for label, amount in table["damage"].items()]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- overrides


def _override_value(key: str, text: str, sub_key: str | None = None) -> Any:
    """VALUE of `--set KEY=VALUE`: a TOML value where it parses as one, else a bare string."""
    text = text.strip()
    try:
        value: Any = parsed_toml(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        value = text
    except RulesError as exc:
        raise RulesError(exc.reason.replace("invalid TOML: ", ""), key=key) from None
    if key in SEATS:  # `p1.recovery=battery`: the key after the seat says what VALUE is
        key = sub_key or key
    if key in STRING_KEYS and not isinstance(value, str):
        value = text  # `--set name=2024` means the title "2024", not an integer
    if key in LIST_KEYS and isinstance(value, str):
        value = [item.strip() for item in value.split(",")] if value.strip() else []
    return value


def _set_path(mapping: dict[str, Any], parts: list[str], value: Any, seat: str | None = None,
              partial: set[tuple[str, str]] | None = None) -> None:
    """Set dotted key `parts` in the full canonical `mapping`, rejecting unknown
    keys; with `seat`, `mapping` is that seat's table and `parts` a per-seat key.
    A seat's card cost begun by one tile kind goes into `partial` as (seat, card)."""
    top = parts[0]
    if seat is None and top in SEATS:
        if len(parts) == 1:
            # A whole table merges key by key over the seat's own, as a rule file's does.
            mapping[top] = {**mapping.get(top, {}), **value} if isinstance(value, Mapping) else value
            return
        if not isinstance(mapping.get(top, {}), Mapping):  # an earlier `--set p1=3` replaced the table
            raise RulesError(f"must be a table of per-seat keys, got {_shown(mapping[top])}", key=top)
        if parts[1] not in SEAT_KEYS:
            raise _not_per_seat(".".join(parts))
        own = mapping.setdefault(top, {})
        if parts[1] in ("cost", "damage"):
            own.setdefault(parts[1], {})
        _set_path(own, parts[1:], value, seat=top, partial=partial)
        return
    if top not in KEYS:
        raise _unknown_key(top)
    name = top if seat is None else f"{seat}.{top}"
    if top in ("cost", "damage"):
        allowed = tuple(Card) if top == "cost" else ATTACK_ORDER
        if len(parts) == 1:
            # A whole table merges card by card, as a rule file does over the defaults.
            mapping[top] = {**mapping[top], **value} if isinstance(value, Mapping) else value
            return
        if not isinstance(mapping[top], Mapping):  # an earlier `--set cost=3` replaced the table
            raise RulesError(f"must be a table of cards, got {_shown(mapping[top])}", key=name)
        what = "card" if top == "cost" else "attack card"
        card = _card_key(f"{name}.{parts[1]}", parts[1], allowed, what)
        if len(parts) == 2:
            mapping[top][card.label] = value
            return
        if top == "cost" and len(parts) == 3:
            if parts[2] not in TILE_KINDS:
                raise _unknown(f"{name}.{parts[1]}.{parts[2]}", TILE_KINDS, "tile kind")
            # One tile kind: the card's other tile kind keeps its current value (for a
            # seat with no cost of its own for the card, the shared one's, filled in by
            # `apply_overrides` once every override is in).
            current = mapping["cost"].get(card.label)
            if current is None and seat is not None and partial is not None:
                partial.add((seat, card.label))
            mapping["cost"][card.label] = {**(current if isinstance(current, Mapping) else {}), parts[2]: value}
            return
        raise RulesError("unknown key (too many parts)", key=f"{name}.{'.'.join(parts[1:])}")
    if len(parts) > 1:
        raise RulesError(f"unknown key ({name} has no sub-keys)", key=f"{name}.{'.'.join(parts[1:])}")
    mapping[top] = value


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _set_source(argument: str) -> str:
    """Where an override error comes from, short enough for one line."""
    return f"--set {argument if len(argument) <= 200 else argument[:60] + '...'}"


def apply_overrides(rules: RuleSet, overrides: Iterable[str]) -> RuleSet:
    """`rules` with `--set KEY=VALUE` overrides applied (dotted keys, e.g. cost.lightning.battery=3).

    All overrides are applied before validating, so their order does not
    matter (`battery_tiles=1` then `start_battery=1` works from the defaults).
    """
    overrides = list(overrides)
    if not overrides:
        return rules
    mapping = canonical_mapping(rules)
    applied: list[tuple[str, str]] = []  # (argument, dotted key)
    partial: set[tuple[str, str]] = set()  # (seat, card): a seat's cost begun by one tile kind
    for argument in overrides:
        source = _set_source(argument)
        if "=" not in argument:
            raise RulesError("expected KEY=VALUE (no '=')", source=source)
        key_text, value_text = argument.split("=", 1)
        parts = [part.strip() for part in key_text.split(".")]
        if not key_text.strip() or any(not part for part in parts):
            raise RulesError("empty key; expected KEY=VALUE, e.g. health=5", source=source)
        key = ".".join(parts)
        try:
            _set_path(mapping, parts, _override_value(parts[0], value_text, parts[1] if len(parts) > 1 else None),
                      partial=partial)
        except RulesError as exc:
            raise exc.located(source) from None
        applied.append((argument, key))
    for seat, label in partial:  # ...keeps the shared cost's other tile kind, as it is once all are in
        costs = mapping[seat].get("cost") if isinstance(mapping.get(seat), Mapping) else None
        shared = mapping["cost"].get(label) if isinstance(mapping["cost"], Mapping) else None
        if isinstance(costs, Mapping) and isinstance(costs.get(label), Mapping) and isinstance(shared, Mapping):
            costs[label] = {**{kind: shared[kind] for kind in TILE_KINDS if kind in shared}, **costs[label]}
    try:
        return RuleSet(**_fields_from_mapping(mapping, rules))
    except RulesError as exc:
        # Name the override that set the failing key, else every override.
        for argument, key in reversed(applied):
            if any(k is not None and _related(k, key) for k in (exc.key, *exc.related)):
                raise exc.located(_set_source(argument)) from None
        raise exc.located(_set_source(" ".join(overrides))) from None


# ---------------------------------------------------------------- one --set per key


def one_set_per_key_hint(argument: str) -> str | None:
    """For one `--set` argument that holds several KEY=VALUE pairs split by
    spaces ("board=S*M health=1"), the line that says how to give them
    ("one --set per key: --set 'board=S*M' --set health=1"); else None."""
    import shlex

    words = argument.split()
    starts = [i for i, word in enumerate(words)
              if (match := re.match(r"([A-Za-z_]\w*)(\.[\w+-]+)*=", word)) and match.group(1) in KEYS]
    if len(starts) < 2 or starts[0] != 0:
        return None
    pairs = [" ".join(words[start:end]) for start, end in zip(starts, [*starts[1:], len(words)])]
    return "one --set per key: " + " ".join(f"--set {shlex.quote(pair)}" for pair in pairs)


def with_one_set_per_key_hint(error: RulesError, overrides: Iterable[str]) -> RulesError:
    """`error` (from `apply_overrides`) with `one_set_per_key_hint` added to its
    line where it names one override that holds several KEY=VALUE pairs."""
    for argument in overrides:
        hint = one_set_per_key_hint(argument)
        if hint is not None and error.source == _set_source(argument):
            return RulesError(f"{error.reason}; {hint}", key=error.key, source=error.source, line=error.line,
                              related=error.related)
    return error
