"""Compiled twin of `WildGame.moves`, working on wild state codes in batches.

The turns themselves are the open game's compiled expansion (`transitions`),
played from the concrete positions `WildGame._concrete` names; this module
only does the wild game's bookkeeping on integer digits: H's legal cards,
the concrete positions, each outcome read back as a wild state (what
`hidden.known_after_turn` and `hidden.drawn_cards` tell of it, in
`WildGame._after`), the outcomes merged and ordered as `WildGame._turns` does,
and the pending draws' keep-out choices and odds (`WildGame._pending_moves`).
Tests check it against `WildGame.moves` on every reachable state of small
rule sets.

A wild code is ((open code) * (max_unseen + 1) + unseen) * 2 + pending,
where the open code's P1 holds only its seen bonus cards. Nothing is kept
between batches: memory follows the batch.
"""

from __future__ import annotations

import numba
import numpy as np

from .transitions import decode_player_digits, expand_codes, legal_card_ids, table_args
from .turn_tables import TurnTables


@numba.njit(cache=True, inline="always")
def _rest_kind(rest, rest_card, card_kind):
    """The bonus kind resting in a rest zone of this code (a Copy whatever it holds), -1 if none."""
    card = rest_card[rest]
    return card_kind[card] if card >= 0 else -1


@numba.njit(cache=True, inline="always")
def _possible(s, rest1_kind, c2, rest2_kind, bonus_total, out):
    """U: the bonus cards N has not seen (the wild position's pile), per kind."""
    for k in range(bonus_total.shape[0]):
        out[k] = bonus_total[k] - s[k] - c2[k] - (rest1_kind == k) - (rest2_kind == k)


@numba.njit(cache=True)
def _wild_rows(
    codes, row_count, row_cards, row_concrete, radix, players, bonus_radix, bonus_total, kind_card, card_kind,
    cost, rest_card, kind_stride, max_unseen,
):
    """For each state not pending: H's legal cards (`WildGame.h_cards`) and, per card, the
    open code of the concrete position it is played from (`WildGame._concrete`). Pending
    states get no rows here. Returns the rows written."""
    kinds = bonus_radix.shape[0]
    d1 = np.zeros(5, dtype=np.int64)
    d2 = np.zeros(5, dtype=np.int64)
    s = np.zeros(kinds, dtype=np.int64)
    c2 = np.zeros(kinds, dtype=np.int64)
    u = np.zeros(kinds, dtype=np.int64)
    avail = np.zeros(kinds, dtype=np.int64)
    legal = np.zeros(10, dtype=np.int64)
    rows = 0
    for i in range(codes.shape[0]):
        rest_code, pending = codes[i] // 2, codes[i] % 2
        base, unseen = rest_code // (max_unseen + 1), rest_code % (max_unseen + 1)
        if pending:
            row_count[i] = 0
            continue
        decode_player_digits(base // players, radix, bonus_radix, d1, s)
        decode_player_digits(base % players, radix, bonus_radix, d2, c2)
        _possible(s, _rest_kind(d1[4], rest_card, card_kind), c2, _rest_kind(d2[4], rest_card, card_kind), bonus_total, u)
        for k in range(kinds):  # the seen hand, and any kind still possible while a card is unseen
            avail[k] = s[k] if s[k] > 0 else (1 if unseen > 0 and u[k] > 0 else 0)
        m = legal_card_ids(d1, avail, rest_card, kind_card, cost, legal)
        row_count[i] = m
        for a in range(m):
            card = legal[a]
            need = unseen
            held = 0  # the concrete hand's bonus code less the seen hand's
            kind = card_kind[card]
            taken = -1
            if unseen > 0 and kind >= 0 and s[kind] == 0:  # played as an unseen card: H holds it
                held += kind_stride[kind]
                need -= 1
                taken = kind
            for k in range(kinds):  # the other unseen cards: the first possible ones, in card order
                left = u[k] - (k == taken)
                take = min(left, need) if left > 0 else 0
                held += take * kind_stride[k]
                need -= take
            row_cards[rows + a] = card
            row_concrete[rows + a] = base + held * players
        rows += m
    return rows


@numba.njit(cache=True, inline="always")
def _wild_code(q1, q2, unseen, pending, players, max_unseen):
    return ((q1 * players + q2) * (max_unseen + 1) + unseen) * 2 + pending


@numba.njit(cache=True, inline="always")
def _seen_after(s, rest1_kind, card1, card_kind, ps):
    """H's seen cards after playing `card1` (`known_after_turn`), into `ps`: a played kind
    leaves a seen copy first, the bonus card resting comes back seen; the rest of H's hand
    after the turn (its drawn card too) is unseen."""
    for k in range(s.shape[0]):
        ps[k] = s[k]
    k1 = card_kind[card1]
    if k1 >= 0 and ps[k1] > 0:
        ps[k1] -= 1
    if rest1_kind >= 0:
        ps[rest1_kind] += 1


@numba.njit(cache=True, inline="always")
def _read_after(nxt, seen_code, seen_size, kept2_code, draw_waits, bonus_space, bonus_size, players, max_unseen):
    """The wild code of the open outcome `nxt` of a cell (`WildGame._after`). Per row: H's
    seen cards after the turn (`seen_code`, `seen_size` of them). Per cell: the bonus code
    N's hand has after the turn if N draws nothing (`kept2_code`), and whether more than
    one kind would be left possible were N to draw (`draw_waits`)."""
    if nxt < 0:
        return nxt
    a1 = nxt // players
    a2 = nxt - a1 * players
    b1 = a1 % bonus_space
    unseen = bonus_size[b1] - seen_size  # whatever H holds beyond its seen cards
    q1 = a1 - b1 + seen_code
    drawn = a2 % bonus_space - kept2_code  # N's drawn card's stride (`drawn_cards`), 0 if none
    if drawn != 0 and unseen > 0 and draw_waits:
        return _wild_code(q1, a2 - drawn, unseen, 1, players, max_unseen)
    return _wild_code(q1, a2, unseen, 0, players, max_unseen)


@numba.njit(cache=True)
def _wild_expand(
    codes, fill, row_ptr, row_cards, row_open, o_row_at, o_row_actions, o_col_at, o_col_actions, o_cell_at, o_out_at,
    o_out_next, o_out_prob, row_count, row_actions, col_count, col_actions, out_count, out_next, out_prob, radix,
    players, bonus_radix, bonus_total, kind_card, card_kind, cost, rest_card, kind_stride, max_unseen,
    keep_counts, bonus_size, keep_action, draw_action, widest,
):
    """Size (fill=False) or write (fill=True) the expansion of every code, as `WildGame.moves`.

    Not pending: the rows are `_wild_rows`' (`row_ptr`, `row_cards`, and `row_open`, each
    row's concrete position's index in the open expansion `o_*`); each cell's outcomes
    read as wild codes, equal codes merged (chances summed in the order met) and sorted.
    Pending: one row per multiset H may keep out of N's draw (in card order), N's draw
    from the rest of U, in card order. Sizing gives row_count, col_count and out_count[i]
    an upper bound on the state's outcomes; returns (rows, cols, cells, outcomes)."""
    kinds = bonus_radix.shape[0]
    bonus_space = radix[5]
    d1 = np.zeros(5, dtype=np.int64)
    d2 = np.zeros(5, dtype=np.int64)
    s = np.zeros(kinds, dtype=np.int64)
    c2 = np.zeros(kinds, dtype=np.int64)
    u = np.zeros(kinds, dtype=np.int64)
    ps = np.zeros(kinds, dtype=np.int64)
    legal2 = np.zeros(10, dtype=np.int64)
    keys = np.zeros(widest, dtype=np.int64)
    probs = np.zeros(widest, dtype=np.float64)
    rows = 0
    cols = 0
    cells = 0
    outs = 0
    for i in range(codes.shape[0]):
        rest_code, pending = codes[i] // 2, codes[i] % 2
        base, unseen = rest_code // (max_unseen + 1), rest_code % (max_unseen + 1)
        q1 = base // players
        q2 = base % players
        decode_player_digits(q1, radix, bonus_radix, d1, s)
        decode_player_digits(q2, radix, bonus_radix, d2, c2)
        rest1_kind = _rest_kind(d1[4], rest_card, card_kind)
        rest2_kind = _rest_kind(d2[4], rest_card, card_kind)
        c2_code = q2 % bonus_space
        o = outs
        if pending:
            _possible(s, rest1_kind, c2, rest2_kind, bonus_total, u)
            m = 0
            for b in range(bonus_space - 1, -1, -1):  # descending codes: the kept multisets in card order
                if bonus_size[b] != unseen:
                    continue
                fits = True
                for k in range(kinds):
                    if keep_counts[b, k] > u[k]:
                        fits = False
                if not fits:
                    continue
                total = 0
                for k in range(kinds):
                    total += u[k] - keep_counts[b, k]
                first = o
                for k in range(kinds):
                    left = u[k] - keep_counts[b, k]
                    if left > 0:
                        if fill:
                            out_next[o] = _wild_code(q1, q2 + kind_stride[k], unseen, 0, players, max_unseen)
                            out_prob[o] = left / total
                        o += 1
                if fill:
                    row_actions[rows + m] = keep_action[b]
                    out_count[cells + m] = o - first
                m += 1
            n = 1
            if fill:
                col_actions[cols] = draw_action
        else:
            m = row_ptr[i + 1] - row_ptr[i]
            n = legal_card_ids(d2, c2, rest_card, kind_card, cost, legal2)
            if fill:
                for b in range(n):
                    col_actions[cols + b] = legal2[b]
            for a in range(m):
                r = row_ptr[i] + a
                card1 = row_cards[r]
                k = row_open[r]
                if fill:
                    row_actions[rows + a] = card1
                ia = 0
                while o_row_actions[o_row_at[k] + ia] != card1:
                    ia += 1
                n_open = o_col_at[k + 1] - o_col_at[k]
                _seen_after(s, rest1_kind, card1, card_kind, ps)
                seen_code = 0
                seen_size = 0
                for x in range(kinds):
                    seen_code += ps[x] * kind_stride[x]
                    seen_size += ps[x]
                for b in range(n):
                    card2 = legal2[b]
                    ib = 0
                    while o_col_actions[o_col_at[k] + ib] != card2:
                        ib += 1
                    cell = o_cell_at[k] + ia * n_open + ib
                    if not fill:
                        o += o_out_at[cell + 1] - o_out_at[cell]
                        continue
                    # N's hand after the turn before any draw: its played kind out, its resting one back.
                    # Were N to draw, U would be what neither H's seen cards, N's hand nor the
                    # cards played (both now resting) account for.
                    k2 = card_kind[card2]
                    kept2_code = c2_code
                    if k2 >= 0:
                        kept2_code -= kind_stride[k2]
                    if rest2_kind >= 0:
                        kept2_code += kind_stride[rest2_kind]
                    kinds_left = 0
                    for x in range(kinds):
                        kept2 = c2[x] - (k2 == x) + (rest2_kind == x)
                        if bonus_total[x] - ps[x] - kept2 - (card_kind[card1] == x) - (k2 == x) > 0:
                            kinds_left += 1
                    draw_waits = kinds_left > 1
                    got = 0
                    for x in range(o_out_at[cell], o_out_at[cell + 1]):
                        key = _read_after(
                            o_out_next[x], seen_code, seen_size, kept2_code, draw_waits, bonus_space, bonus_size,
                            players, max_unseen,
                        )
                        y = 0
                        while y < got and keys[y] != key:
                            y += 1
                        if y < got:
                            probs[y] += o_out_prob[x]
                        else:
                            keys[got] = key
                            probs[got] = o_out_prob[x]
                            got += 1
                    for y in range(1, got):  # insertion sort by next code (the codes are distinct)
                        key = keys[y]
                        p = probs[y]
                        z = y - 1
                        while z >= 0 and keys[z] > key:
                            keys[z + 1] = keys[z]
                            probs[z + 1] = probs[z]
                            z -= 1
                        keys[z + 1] = key
                        probs[z + 1] = p
                    for y in range(got):
                        out_next[o + y] = keys[y]
                        out_prob[o + y] = probs[y]
                    out_count[cells + a * n + b] = got
                    o += got
        if not fill:
            row_count[i] = m
            col_count[i] = n
            out_count[i] = o - outs
        rows += m
        cols += n
        cells += m * n
        outs = o
    return rows, cols, cells, outs


class WildTables:
    """What the kernels need of one wild game, as arrays (built once per game)."""

    def __init__(self, tables: TurnTables, max_unseen: int, keep_action_by_code: np.ndarray, draw_action: int) -> None:
        self.tables = tables
        radix, players, bonus_radix, bonus_total, kind_card, for_player, _ = table_args(tables)
        _stride, kind_stride, card_kind, seat_costs, _gain, rest_card, _, _ = for_player
        # The wild game needs rules the same for both seats (`WildGame`): one seat's costs serve both.
        cost = np.ascontiguousarray(seat_costs[0])
        self.common = (radix, players, bonus_radix, bonus_total, kind_card, card_kind, cost, rest_card, kind_stride,
                       max_unseen)
        bonus_space = int(radix[5])
        keep_counts = np.zeros((bonus_space, bonus_radix.size), dtype=np.int64)
        for code in range(bonus_space):
            rest = code
            for k in range(bonus_radix.size - 1, -1, -1):
                keep_counts[code, k] = rest % bonus_radix[k]
                rest //= bonus_radix[k]
        self.keeps = (keep_counts, keep_counts.sum(axis=1), np.asarray(keep_action_by_code, dtype=np.int64),
                      int(draw_action))


def offsets(counts: np.ndarray) -> np.ndarray:
    """Where each of `counts`' runs starts, and the total last."""
    at = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=at[1:])
    return at


def expand_wild_codes(w: WildTables, codes: np.ndarray) -> tuple[np.ndarray, ...]:
    """(row_count, row_actions, col_count, col_actions, out_count, out_next, out_prob) of the wild codes."""
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    n = codes.shape[0]
    row_count = np.zeros(n, dtype=np.int64)
    row_cards = np.zeros(10 * n, dtype=np.int64)
    row_concrete = np.zeros(10 * n, dtype=np.int64)
    rows = _wild_rows(codes, row_count, row_cards, row_concrete, *w.common)
    row_ptr = offsets(row_count)
    row_cards, row_concrete = row_cards[:rows], row_concrete[:rows]
    # The concrete positions' turns, each distinct position played once by the open game.
    ordered = np.sort(row_concrete)
    distinct = np.ones(ordered.size, dtype=np.bool_)
    np.not_equal(ordered[1:], ordered[:-1], out=distinct[1:])
    concrete = ordered[distinct]
    del ordered, distinct
    row_open = np.searchsorted(concrete, row_concrete)
    del row_concrete
    o_row_count, o_row_actions, o_col_count, o_col_actions, o_out_count, o_out_next, o_out_prob = expand_codes(
        w.tables, concrete
    )
    opened = (
        row_ptr, row_cards, row_open, offsets(o_row_count), o_row_actions, offsets(o_col_count), o_col_actions,
        offsets(o_row_count * o_col_count), offsets(o_out_count), o_out_next, o_out_prob,
    )
    widest = max(int(o_out_count.max()) if o_out_count.size else 0, 1)  # a cell's outcomes before merging
    empty_i = np.zeros(0, dtype=np.int64)
    empty_f = np.zeros(0, dtype=np.float64)
    col_count = np.zeros(n, dtype=np.int64)
    state_outs = np.zeros(n, dtype=np.int64)
    rows, cols, cells, bound = _wild_expand(
        codes, False, *opened, row_count, empty_i, col_count, empty_i, state_outs, empty_i, empty_f, *w.common,
        *w.keeps, widest,
    )
    del state_outs
    row_actions = np.zeros(rows, dtype=np.int64)
    col_actions = np.zeros(cols, dtype=np.int64)
    out_count = np.zeros(cells, dtype=np.int64)
    out_next = np.zeros(bound, dtype=np.int64)
    out_prob = np.zeros(bound, dtype=np.float64)
    *_, outs = _wild_expand(
        codes, True, *opened, row_count, row_actions, col_count, col_actions, out_count, out_next, out_prob,
        *w.common, *w.keeps, widest,
    )
    if outs < bound:  # merged outcomes: give the slack back
        out_next, out_prob = out_next[:outs].copy(), out_prob[:outs].copy()
    return row_count, row_actions, col_count, col_actions, out_count, out_next, out_prob
