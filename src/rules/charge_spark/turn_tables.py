"""One rule set tabulated for the compiled turn kernel (`transitions`).

The card-pair interactions are not re-derived here: they are read from
`turn.card_interaction` (the readable reference), once per seat: a seat's
costs, and what a pair of cards does to it, are its own (`RuleSet.seat`). Kept apart from the kernel so
that building a game does not import numba: a query answered from a stored
table expands one state with the readable engine and compiles nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .cards import Card
from .config import RuleSet
from .state import REST_CODES, REST_PLAIN_COPY, PositionCodec
from .turn import card_interaction

NO_EFFECT = len(Card)  # effective-card index of a Copy that copies nothing
# out_next of a game's end is -1 - (terminal outcome index), as in `turn.Winner`:
P1_KNOCKOUT, P1_MOON, P2_KNOCKOUT, P2_MOON = -1, -2, -3, -4


@dataclass(frozen=True, eq=False)
class TurnTables:
    """Everything the kernel needs about one rule set, as arrays."""

    radix: np.ndarray  # int64[6]: health, battery, disc, progress, rest, bonus
    players: int
    bonus_radix: np.ndarray  # int64[K]: count + 1 of each bonus kind
    bonus_total: np.ndarray  # int64[K]
    kind_card: np.ndarray  # int64[K]: card code of each kind
    card_kind: np.ndarray  # int64[10]: kind index of a card, -1 if none
    cost: np.ndarray  # int64[2, 10, 2]: [seat, card, tile kind]
    damage_taken: np.ndarray  # int64[2, 11, 11]: [seat, mine, theirs]
    move_cancelled: np.ndarray  # bool[2, 11, 11]: [seat, mine, theirs]
    gain: np.ndarray  # int64[2, 11, 2]: [seat, mine, tile kind]
    rest_acts_as: np.ndarray  # int64[20]: effective card of a Copy played on this rest
    rest_card: np.ndarray  # int64[20]: card in the rest zone, -1 if empty
    is_star: np.ndarray  # bool[moves_to_moon + 1]
    moves_to_moon: int
    battery_tiles: int
    disc_tiles: int
    contested_coin: bool


def turn_tables(rules: RuleSet) -> TurnTables:
    codec = PositionCodec(rules)
    effective = list(Card) + [None]
    damage = np.zeros((2, len(effective), len(effective)), dtype=np.int64)
    cancelled = np.zeros((2, len(effective), len(effective)), dtype=np.bool_)
    gain = np.zeros((2, len(effective), 2), dtype=np.int64)
    for seat in (0, 1):
        for i, mine in enumerate(effective):
            for j, theirs in enumerate(effective):
                effect = card_interaction(rules, mine, theirs, seat)
                damage[seat, i, j] = effect.damage_taken
                cancelled[seat, i, j] = effect.move_cancelled
                gain[seat, i] = (effect.battery_gain, effect.disc_gain)
    rest_acts_as = np.full(REST_CODES, NO_EFFECT, dtype=np.int64)
    rest_card = np.full(REST_CODES, -1, dtype=np.int64)
    for code in range(1, REST_CODES):
        if code < REST_PLAIN_COPY:
            rest_acts_as[code] = rest_card[code] = code - 1
        else:
            rest_card[code] = Card.COPY
            rest_acts_as[code] = NO_EFFECT if code == REST_PLAIN_COPY else code - 11
    card_kind = np.full(len(Card), -1, dtype=np.int64)
    for k, card in enumerate(codec.bonus_kinds):
        card_kind[card] = k
    return TurnTables(
        radix=np.array([r for _, r in codec.radices], dtype=np.int64),
        players=codec.players,
        bonus_radix=np.array(codec.bonus_radix, dtype=np.int64),
        bonus_total=np.array(codec.bonus_radix, dtype=np.int64) - 1,
        kind_card=np.array(codec.bonus_kinds, dtype=np.int64),
        card_kind=card_kind,
        cost=np.array([[rules.seat(seat).cost(card) for card in Card] for seat in (0, 1)], dtype=np.int64),
        damage_taken=damage,
        move_cancelled=cancelled,
        gain=gain,
        rest_acts_as=rest_acts_as,
        rest_card=rest_card,
        is_star=np.array(
            [rules.is_star(p) for p in range(rules.moves_to_moon + 1)], dtype=np.bool_
        ),
        moves_to_moon=rules.moves_to_moon,
        battery_tiles=rules.battery_tiles,
        disc_tiles=rules.disc_tiles,
        contested_coin=rules.contested_draw == "coin",
    )
