"""Compiled twin of `turn.resolve_turn`, working on encoded positions in batches.

The card-pair interactions are not re-derived here: they are tabulated from
`turn.card_interaction` (the readable reference), so this module only does the
bookkeeping (costs, caps, rest zone, pawn, draws) on integer digits. Tests
check it against `resolve_turn` on every reachable state of small rule sets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .cards import Card
from .config import RuleSet
from .state import REST_CODES, REST_PLAIN_COPY, PositionCodec
from .turn import card_interaction

NO_EFFECT = len(Card)  # effective-card index of a Copy that copies nothing
P1_WINS = -1  # out_next of terminal outcome 0
P2_WINS = -2  # out_next of terminal outcome 1
MAX_OUTCOMES = 32  # chance outcomes of one cell: at most 4 x 3 ordered draws


@dataclass(frozen=True, eq=False)
class TurnTables:
    """Everything the kernel needs about one rule set, as arrays."""

    radix: np.ndarray  # int64[6]: health, battery, disc, progress, rest, bonus
    players: int
    bonus_radix: np.ndarray  # int64[K]: count + 1 of each bonus kind
    bonus_total: np.ndarray  # int64[K]
    kind_card: np.ndarray  # int64[K]: card code of each kind
    card_kind: np.ndarray  # int64[10]: kind index of a card, -1 if none
    cost: np.ndarray  # int64[10, 2]
    damage_taken: np.ndarray  # int64[11, 11]: [mine, theirs]
    move_cancelled: np.ndarray  # bool[11, 11]
    gain: np.ndarray  # int64[11, 2]
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
    damage = np.zeros((len(effective), len(effective)), dtype=np.int64)
    cancelled = np.zeros((len(effective), len(effective)), dtype=np.bool_)
    gain = np.zeros((len(effective), 2), dtype=np.int64)
    for i, mine in enumerate(effective):
        for j, theirs in enumerate(effective):
            effect = card_interaction(rules, mine, theirs)
            damage[i, j] = effect.damage_taken
            cancelled[i, j] = effect.move_cancelled
            gain[i] = (effect.battery_gain, effect.disc_gain)
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
        cost=np.array([rules.cost(card) for card in Card], dtype=np.int64),
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


@numba.njit(cache=True, inline="always")
def _decode_player(code, radix, bonus_radix, digits, counts):
    """Fill digits (health - 1, battery, disc, progress, rest) and bonus counts."""
    bonus = code % radix[5]
    code //= radix[5]
    for d in range(4, -1, -1):
        digits[d] = code % radix[d]
        code //= radix[d]
    for k in range(bonus_radix.shape[0] - 1, -1, -1):
        counts[k] = bonus % bonus_radix[k]
        bonus //= bonus_radix[k]


@numba.njit(cache=True, inline="always")
def _encode_player(digits, counts, radix, bonus_radix):
    bonus = 0
    for k in range(bonus_radix.shape[0]):
        bonus = bonus * bonus_radix[k] + counts[k]
    code = 0
    for d in range(5):
        code = code * radix[d] + digits[d]
    return code * radix[5] + bonus


@numba.njit(cache=True, inline="always")
def _legal_cards(digits, counts, rest_card, kind_card, cost, out):
    """Write the player's legal cards (ascending) into out; return how many."""
    n = 0
    for card in range(6):
        if card != rest_card[digits[4]] and digits[1] >= cost[card, 0] and digits[2] >= cost[card, 1]:
            out[n] = card
            n += 1
    for k in range(kind_card.shape[0]):
        card = kind_card[k]
        if counts[k] > 0 and digits[1] >= cost[card, 0] and digits[2] >= cost[card, 1]:
            out[n] = card
            n += 1
    return n


@numba.njit(cache=True, inline="always")
def _to_rest_zone(n, k, d, card, acts_as, card_kind, rest_card):
    """The played card goes to the rest zone; a bonus card there returns to hand."""
    if card_kind[card] >= 0:
        k[card_kind[card]] -= 1
    old = rest_card[d[4]]
    if old >= 0 and card_kind[old] >= 0:
        k[card_kind[old]] += 1
    if card != 9:
        n[4] = 1 + card
    elif acts_as == 10:
        n[4] = 10
    else:
        n[4] = 11 + acts_as


@numba.njit(cache=True, inline="always")
def _resolve_cell(
    d1, c1, d2, c2, card1, card2, pile, t_radix, t_players, t_bonus_radix, t_card_kind,
    t_cost, t_damage, t_cancel, t_gain, t_rest_acts, t_rest_card, t_star, t_moon,
    t_battery, t_disc, t_coin, n1, k1, n2, k2, out_next, out_prob,
):
    """Outcomes of (card1, card2) from the decoded players; returns their number.

    n1, k1, n2, k2 are scratch space for the players' next digits and counts.
    """
    e1 = card1 if card1 != 9 else t_rest_acts[d1[4]]
    e2 = card2 if card2 != 9 else t_rest_acts[d2[4]]
    health1 = d1[0] + 1 - t_damage[e1, e2]
    health2 = d2[0] + 1 - t_damage[e2, e1]
    move1 = e1 == 5 and not t_cancel[e1, e2]
    move2 = e2 == 5 and not t_cancel[e2, e1]
    moon1 = move1 and d1[3] + 1 == t_moon
    moon2 = move2 and d2[3] + 1 == t_moon
    if moon1 and moon2:
        move1 = False
        move2 = False
        moon1 = False
        moon2 = False
    if health2 <= 0 or moon1:
        out_next[0] = -1
        out_prob[0] = 1.0
        return 1
    if health1 <= 0 or moon2:
        out_next[0] = -2
        out_prob[0] = 1.0
        return 1

    n1[:] = d1
    n2[:] = d2
    k1[:] = c1
    k2[:] = c2
    n1[0] = health1 - 1
    n2[0] = health2 - 1
    n1[1] = min(t_battery, d1[1] - t_cost[card1, 0] + t_gain[e1, 0])
    n2[1] = min(t_battery, d2[1] - t_cost[card2, 0] + t_gain[e2, 0])
    n1[2] = min(t_disc, d1[2] - t_cost[card1, 1] + t_gain[e1, 1])
    n2[2] = min(t_disc, d2[2] - t_cost[card2, 1] + t_gain[e2, 1])
    n1[3] = d1[3] + move1
    n2[3] = d2[3] + move2
    _to_rest_zone(n1, k1, d1, card1, e1, t_card_kind, t_rest_card)
    _to_rest_zone(n2, k2, d2, card2, e2, t_card_kind, t_rest_card)
    draw1 = move1 and t_star[n1[3]]
    draw2 = move2 and t_star[n2[3]]
    total = 0
    for k in range(pile.shape[0]):
        total += pile[k]
    p1 = _encode_player(n1, k1, t_radix, t_bonus_radix)
    p2 = _encode_player(n2, k2, t_radix, t_bonus_radix)
    if total == 0 or not (draw1 or draw2):
        out_next[0] = p1 * t_players + p2
        out_prob[0] = 1.0
        return 1
    count = 0
    if draw1 and draw2 and total == 1:
        if not t_coin:
            out_next[0] = p1 * t_players + p2
            out_prob[0] = 1.0
            return 1
        for k in range(pile.shape[0]):
            if pile[k] > 0:
                k1[k] += 1
                out_next[0] = _encode_player(n1, k1, t_radix, t_bonus_radix) * t_players + p2
                k1[k] -= 1
                k2[k] += 1
                out_next[1] = p1 * t_players + _encode_player(n2, k2, t_radix, t_bonus_radix)
                k2[k] -= 1
                out_prob[0] = 0.5
                out_prob[1] = 0.5
                return 2
    if draw1 != draw2:
        for k in range(pile.shape[0]):
            if pile[k] == 0:
                continue
            if draw1:
                k1[k] += 1
                out_next[count] = _encode_player(n1, k1, t_radix, t_bonus_radix) * t_players + p2
                k1[k] -= 1
            else:
                k2[k] += 1
                out_next[count] = p1 * t_players + _encode_player(n2, k2, t_radix, t_bonus_radix)
                k2[k] -= 1
            out_prob[count] = pile[k] / total
            count += 1
        return count
    # Both draw from two or more cards: without replacement, P1's card first.
    for a in range(pile.shape[0]):
        if pile[a] == 0:
            continue
        k1[a] += 1
        q1 = _encode_player(n1, k1, t_radix, t_bonus_radix)
        k1[a] -= 1
        pile[a] -= 1
        for b in range(pile.shape[0]):
            if pile[b] == 0:
                continue
            k2[b] += 1
            out_next[count] = q1 * t_players + _encode_player(n2, k2, t_radix, t_bonus_radix)
            k2[b] -= 1
            out_prob[count] = (pile[a] + 1) / total * pile[b] / (total - 1)
            count += 1
        pile[a] += 1
    return count


@numba.njit(cache=True)
def _expand(
    codes, fill, row_count, row_actions, col_count, col_actions, out_count, out_next, out_prob,
    t_radix, t_players, t_bonus_radix, t_bonus_total, t_kind_card, t_card_kind, t_cost,
    t_damage, t_cancel, t_gain, t_rest_acts, t_rest_card, t_star, t_moon, t_battery, t_disc,
    t_coin,
):
    """Count (fill=False) or write (fill=True) the expansion of every state in codes.

    When counting, row_count/col_count get the action counts and out_count[i]
    the state's total outcomes; the return value is (actions1, actions2,
    cells, outcomes) totals.
    """
    kinds = t_bonus_radix.shape[0]
    d1 = np.zeros(5, dtype=np.int64)
    d2 = np.zeros(5, dtype=np.int64)
    c1 = np.zeros(kinds, dtype=np.int64)
    c2 = np.zeros(kinds, dtype=np.int64)
    pile = np.zeros(kinds, dtype=np.int64)
    legal1 = np.zeros(10, dtype=np.int64)
    legal2 = np.zeros(10, dtype=np.int64)
    n1 = np.zeros(5, dtype=np.int64)
    n2 = np.zeros(5, dtype=np.int64)
    k1 = np.zeros(kinds, dtype=np.int64)
    k2 = np.zeros(kinds, dtype=np.int64)
    scratch_next = np.zeros(MAX_OUTCOMES, dtype=np.int64)
    scratch_prob = np.zeros(MAX_OUTCOMES, dtype=np.float64)
    rows = 0
    cols = 0
    cells = 0
    outs = 0
    for i in range(codes.shape[0]):
        _decode_player(codes[i] // t_players, t_radix, t_bonus_radix, d1, c1)
        _decode_player(codes[i] % t_players, t_radix, t_bonus_radix, d2, c2)
        for k in range(kinds):
            pile[k] = t_bonus_total[k] - c1[k] - c2[k]
            for d in (d1, d2):
                old = t_rest_card[d[4]]
                if old >= 0 and t_card_kind[old] == k:
                    pile[k] -= 1
        m = _legal_cards(d1, c1, t_rest_card, t_kind_card, t_cost, legal1)
        n = _legal_cards(d2, c2, t_rest_card, t_kind_card, t_cost, legal2)
        state_outs = 0
        for a in range(m):
            if fill:
                row_actions[rows + a] = legal1[a]
            for b in range(n):
                got = _resolve_cell(
                    d1, c1, d2, c2, legal1[a], legal2[b], pile, t_radix, t_players,
                    t_bonus_radix, t_card_kind, t_cost, t_damage, t_cancel, t_gain,
                    t_rest_acts, t_rest_card, t_star, t_moon, t_battery, t_disc, t_coin,
                    n1, k1, n2, k2, scratch_next, scratch_prob,
                )
                if fill:
                    out_count[cells + a * n + b] = got
                    for j in range(got):
                        out_next[outs + state_outs + j] = scratch_next[j]
                        out_prob[outs + state_outs + j] = scratch_prob[j]
                state_outs += got
        if fill:
            for b in range(n):
                col_actions[cols + b] = legal2[b]
        else:
            row_count[i] = m
            col_count[i] = n
            out_count[i] = state_outs
        rows += m
        cols += n
        cells += m * n
        outs += state_outs
    return rows, cols, cells, outs


def _table_args(t: TurnTables) -> tuple:
    return (
        t.radix, t.players, t.bonus_radix, t.bonus_total, t.kind_card, t.card_kind, t.cost,
        t.damage_taken, t.move_cancelled, t.gain, t.rest_acts_as, t.rest_card, t.is_star,
        t.moves_to_moon, t.battery_tiles, t.disc_tiles, t.contested_coin,
    )


def expand_codes(tables: TurnTables, codes: np.ndarray) -> tuple[np.ndarray, ...]:
    """(row_count, row_actions, col_count, col_actions, out_count, out_next, out_prob)."""
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    n = codes.shape[0]
    row_count = np.zeros(n, dtype=np.int64)
    col_count = np.zeros(n, dtype=np.int64)
    state_outs = np.zeros(n, dtype=np.int64)
    empty_i = np.zeros(0, dtype=np.int64)
    empty_f = np.zeros(0, dtype=np.float64)
    args = _table_args(tables)
    rows, cols, cells, outs = _expand(
        codes, False, row_count, empty_i, col_count, empty_i, state_outs, empty_i, empty_f, *args
    )
    row_actions = np.zeros(rows, dtype=np.int64)
    col_actions = np.zeros(cols, dtype=np.int64)
    out_count = np.zeros(cells, dtype=np.int64)
    out_next = np.zeros(outs, dtype=np.int64)
    out_prob = np.zeros(outs, dtype=np.float64)
    _expand(
        codes, True, row_count, row_actions, col_count, col_actions, out_count, out_next,
        out_prob, *args,
    )
    return row_count, row_actions, col_count, col_actions, out_count, out_next, out_prob
