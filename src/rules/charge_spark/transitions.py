"""Compiled twin of `turn.resolve_turn`, working on encoded positions in batches.

The card-pair interactions are not re-derived here: `turn_tables` tabulates
them from `turn.card_interaction` (the readable reference), so this module only
does the bookkeeping (costs, caps, rest zone, pawn, draws) on integer digits,
each player by its own seat's tables (`[0]` P1's, `[1]` P2's). Tests
check it against `resolve_turn` on every reachable state of small rule sets.
"""

from __future__ import annotations

import numba
import numpy as np

from .turn_tables import TurnTables


@numba.njit(cache=True, inline="always")
def decode_player_digits(code, radix, bonus_radix, digits, counts):
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
def legal_card_ids(digits, counts, rest_card, kind_card, cost, out):
    """Write the player's legal cards (ascending) into out; return how many
    (`cost`: that player's seat's, [card, tile kind])."""
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
def _player_after(
    code, battery, disc, rest, card, acts_as, damage, moved, pay_battery, pay_disc, gain_battery,
    gain_disc, played_kind, returned_kind, stride, kind_stride, battery_tiles, disc_tiles,
):
    """The player's code after the turn, before any bonus draw.

    Works on code differences (digit change times stride) so nothing is
    re-encoded. Costs are paid before tile gains; gains stop at the tile cap.
    Scalars only: array arguments would cost reference counting per call.
    """
    new_battery = min(battery_tiles, battery - pay_battery + gain_battery)
    new_disc = min(disc_tiles, disc - pay_disc + gain_disc)
    # The played card goes to the rest zone (a Copy remembers what it acted as)...
    if card != 9:
        new_rest = 1 + card
    elif acts_as == 10:
        new_rest = 10
    else:
        new_rest = 11 + acts_as
    nxt = (
        code - damage * stride[0] + (new_battery - battery) * stride[1]
        + (new_disc - disc) * stride[2] + moved * stride[3] + (new_rest - rest) * stride[4]
    )
    if played_kind >= 0:
        nxt -= kind_stride[played_kind]
    # ...and the bonus card that was there (a Copy, plainly) returns to hand.
    if returned_kind >= 0:
        nxt += kind_stride[returned_kind]
    return nxt


@numba.njit(cache=True)
def _expand(
    codes, fill, row_count, row_actions, col_count, col_actions, out_count, out_next, out_prob, resolve,
    radix, players, bonus_radix, bonus_total, kind_card, t, u,
):
    """Count (fill=False) or write (fill=True) the expansion of every state in codes.

    When counting, row_count/col_count get the action counts and out_count[i]
    the state's total outcomes; the return value is (actions1, actions2,
    cells, outcomes) totals. Where `resolve` is not empty (one flag per cell,
    row-major per state), only its cells are resolved: the others have no
    outcomes. The cell rules are written out in this one loop (not in a
    called function) so the compiled code touches no reference counts.
    """
    (stride_array, kind_stride, card_kind, cost, gain, rest_card, battery_tiles, disc_tiles) = t
    (damage, cancel, rest_acts, star, moon, coin, _) = u
    stride = (stride_array[0], stride_array[1], stride_array[2], stride_array[3], stride_array[4])
    kinds = bonus_radix.shape[0]
    d1 = np.zeros(5, dtype=np.int64)
    d2 = np.zeros(5, dtype=np.int64)
    c1 = np.zeros(kinds, dtype=np.int64)
    c2 = np.zeros(kinds, dtype=np.int64)
    pile = np.zeros(kinds, dtype=np.int64)
    legal1 = np.zeros(10, dtype=np.int64)
    legal2 = np.zeros(10, dtype=np.int64)
    rows = 0
    cols = 0
    cells = 0
    outs = 0
    for i in range(codes.shape[0]):
        code1 = codes[i] // players
        code2 = codes[i] % players
        decode_player_digits(code1, radix, bonus_radix, d1, c1)
        decode_player_digits(code2, radix, bonus_radix, d2, c2)
        total = 0
        for k in range(kinds):
            pile[k] = bonus_total[k] - c1[k] - c2[k]
        for rest in (d1[4], d2[4]):
            old = rest_card[rest]
            if old >= 0 and card_kind[old] >= 0:
                pile[card_kind[old]] -= 1
        for k in range(kinds):
            total += pile[k]
        returned1 = card_kind[rest_card[d1[4]]] if rest_card[d1[4]] >= 0 else -1
        returned2 = card_kind[rest_card[d2[4]]] if rest_card[d2[4]] >= 0 else -1
        m = legal_card_ids(d1, c1, rest_card, kind_card, cost[0], legal1)
        n = legal_card_ids(d2, c2, rest_card, kind_card, cost[1], legal2)
        o = outs  # next outcome slot
        for a in range(m):
            card1 = legal1[a]
            if fill:
                row_actions[rows + a] = card1
            e1 = card1 if card1 != 9 else rest_acts[d1[4]]
            for b in range(n):
                if resolve.size and not resolve[cells + a * n + b]:
                    if fill:
                        out_count[cells + a * n + b] = 0
                    continue
                card2 = legal2[b]
                e2 = card2 if card2 != 9 else rest_acts[d2[4]]
                first = o
                hurt1 = damage[0, e1, e2]
                hurt2 = damage[1, e2, e1]
                move1 = e1 == 5 and not cancel[0, e1, e2]
                move2 = e2 == 5 and not cancel[1, e2, e1]
                moon1 = move1 and d1[3] + 1 == moon
                moon2 = move2 and d2[3] + 1 == moon
                if moon1 and moon2:  # double goal: both moves cancelled
                    move1 = False
                    move2 = False
                    moon1 = False
                    moon2 = False
                if d2[0] + 1 <= hurt2 or moon1 or d1[0] + 1 <= hurt1 or moon2:
                    if fill:
                        if d2[0] + 1 <= hurt2:
                            out_next[o] = -1  # P1_KNOCKOUT
                        elif moon1:
                            out_next[o] = -2  # P1_MOON
                        elif d1[0] + 1 <= hurt1:
                            out_next[o] = -3  # P2_KNOCKOUT
                        else:
                            out_next[o] = -4  # P2_MOON
                        out_prob[o] = 1.0
                    o += 1
                else:
                    q1 = q2 = 0  # where play goes: only written, so not needed to count the outcomes
                    if fill:
                        q1 = _player_after(
                            code1, d1[1], d1[2], d1[4], card1, e1, hurt1, move1, cost[0, card1, 0],
                            cost[0, card1, 1], gain[0, e1, 0], gain[0, e1, 1], card_kind[card1], returned1,
                            stride, kind_stride, battery_tiles, disc_tiles,
                        )
                        q2 = _player_after(
                            code2, d2[1], d2[2], d2[4], card2, e2, hurt2, move2, cost[1, card2, 0],
                            cost[1, card2, 1], gain[1, e2, 0], gain[1, e2, 1], card_kind[card2], returned2,
                            stride, kind_stride, battery_tiles, disc_tiles,
                        )
                    draw1 = move1 and star[d1[3] + 1] and total > 0
                    draw2 = move2 and star[d2[3] + 1] and total > 0
                    if not (draw1 or draw2) or (draw1 and draw2 and total == 1 and not coin):
                        if fill:
                            out_next[o] = q1 * players + q2
                            out_prob[o] = 1.0
                        o += 1
                    elif draw1 and draw2 and total == 1:  # contested last card: a coin
                        for k in range(kinds):
                            if pile[k] > 0:
                                if fill:
                                    out_next[o] = (q1 + kind_stride[k]) * players + q2
                                    out_next[o + 1] = q1 * players + q2 + kind_stride[k]
                                    out_prob[o] = 0.5
                                    out_prob[o + 1] = 0.5
                                o += 2
                    elif draw1 != draw2:
                        for k in range(kinds):
                            if pile[k] > 0:
                                if fill:
                                    if draw1:
                                        out_next[o] = (q1 + kind_stride[k]) * players + q2
                                    else:
                                        out_next[o] = q1 * players + q2 + kind_stride[k]
                                    out_prob[o] = pile[k] / total
                                o += 1
                    else:  # both draw from two or more: without replacement, P1 first
                        for x in range(kinds):
                            if pile[x] == 0:
                                continue
                            for y in range(kinds):
                                left = pile[y] - (x == y)
                                if left > 0:
                                    if fill:
                                        out_next[o] = (q1 + kind_stride[x]) * players + q2 + kind_stride[y]
                                        out_prob[o] = pile[x] / total * left / (total - 1)
                                    o += 1
                if fill:
                    out_count[cells + a * n + b] = o - first
        if fill:
            for b in range(n):
                col_actions[cols + b] = legal2[b]
        else:
            row_count[i] = m
            col_count[i] = n
            out_count[i] = o - outs
        rows += m
        cols += n
        cells += m * n
        outs = o
    return rows, cols, cells, outs


def table_args(t: TurnTables) -> tuple:
    """The arrays of `t` the compiled turn takes, in its argument order (strides derived from the radices)."""
    kind_stride = np.array(
        [int(np.prod(t.bonus_radix[k + 1 :])) for k in range(t.bonus_radix.size)], dtype=np.int64
    )
    stride = np.array([int(np.prod(t.radix[d + 1 :])) for d in range(6)], dtype=np.int64)
    for_player = (
        stride, kind_stride, t.card_kind, t.cost, t.gain, t.rest_card, t.battery_tiles,
        t.disc_tiles,
    )
    for_cell = (
        t.damage_taken, t.move_cancelled, t.rest_acts_as, t.is_star, t.moves_to_moon,
        t.contested_coin, kind_stride,
    )
    return (t.radix, t.players, t.bonus_radix, t.bonus_total, t.kind_card, for_player, for_cell)


def expand_codes(tables: TurnTables, codes: np.ndarray, cells: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """(row_count, row_actions, col_count, col_actions, out_count, out_next, out_prob);
    with `cells` (a flag per cell, row-major per state), only those cells'
    outcomes: the others have none."""
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    resolve = np.zeros(0, np.bool_) if cells is None else np.ascontiguousarray(cells, np.bool_)
    n = codes.shape[0]
    row_count = np.zeros(n, dtype=np.int64)
    col_count = np.zeros(n, dtype=np.int64)
    state_outs = np.zeros(n, dtype=np.int64)
    empty_i = np.zeros(0, dtype=np.int64)
    empty_f = np.zeros(0, dtype=np.float64)
    args = table_args(tables)
    rows, cols, total_cells, outs = _expand(
        codes, False, row_count, empty_i, col_count, empty_i, state_outs, empty_i, empty_f, resolve, *args
    )
    if cells is not None and resolve.size != total_cells:
        raise ValueError(f"{resolve.size} cell flags for {total_cells} cells")
    # Every item is written by the second pass.
    row_actions = np.empty(rows, dtype=np.int64)
    col_actions = np.empty(cols, dtype=np.int64)
    out_count = np.empty(total_cells, dtype=np.int64)
    out_next = np.empty(outs, dtype=np.int64)
    out_prob = np.empty(outs, dtype=np.float64)
    _expand(
        codes, True, row_count, row_actions, col_count, col_actions, out_count, out_next,
        out_prob, resolve, *args,
    )
    return row_count, row_actions, col_count, col_actions, out_count, out_next, out_prob
