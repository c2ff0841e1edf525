"""Each card's status (see `usage.CardStatus`) over every state of a solved
table, streamed in chunks: each chunk is expanded with the game and its
successors' values looked up in the table's sorted states, so no transition
graph of the whole table is ever held (the default rules' would be ~84 GB).
`flags_for_statuses` reads only what the statuses need: where every card is
played somewhere, no state is expanded at all."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.chain import CellIndex
from ..core.graph import segment_positions
from ..core.protocol import StochasticGame
from ..core.result import SolveResult

OPTIMAL_TOLERANCE = 1e-9
"""A card counts as an optimal reply where it loses less than this against the
opponent's reported strategy (the values are certified to about 1e-11)."""

CHUNK_STATES = 1 << 16


@dataclass(frozen=True, eq=False)
class CardFlags:
    """Per action id (index into the game's action labels), over the whole table."""

    legal: np.ndarray
    """P1 may play it somewhere."""
    played_from_start: np.ndarray
    """Either player's reported strategy plays it at a state reached from the start."""
    played: np.ndarray
    """P1's reported strategy plays it somewhere."""
    optimal_reply: np.ndarray
    """It earns the value against P2's reported strategy somewhere."""


def card_flags(game: StochasticGame, result: SolveResult, reached: np.ndarray, chunk: int = CHUNK_STATES) -> CardFlags:
    """The flags behind each card's status; `reached`: sorted codes of the states
    the reported strategies reach from the start."""
    size = len(game.action_labels)
    flags = [np.zeros(size, bool) for _ in range(4)]
    for lo in range(0, result.num_states, chunk):
        for total, part in zip(flags, _chunk_flags(game, result, reached, lo, min(lo + chunk, result.num_states), size)):
            total |= part
    return CardFlags(*flags)


def _chunk_flags(game, result: SolveResult, reached: np.ndarray, lo: int, hi: int, size: int) -> list[np.ndarray]:
    codes = np.asarray(result.states[lo:hi])
    e = game.expand(codes)
    row_count, col_count = np.asarray(e.row_count, np.int64), np.asarray(e.col_count, np.int64)
    row_actions, col_actions = np.asarray(e.row_actions, np.int64), np.asarray(e.col_actions, np.int64)
    row_lo, row_hi = int(result.row_ptr[lo]), int(result.row_ptr[hi])
    col_lo, col_hi = int(result.col_ptr[lo]), int(result.col_ptr[hi])
    if not (np.array_equal(row_actions, result.row_actions[row_lo:row_hi])
            and np.array_equal(col_actions, result.col_actions[col_lo:col_hi])):
        raise ValueError("the table's actions differ from the game's: a table of other rules?")
    row = np.asarray(result.row_strategy[row_lo:row_hi])
    col = np.asarray(result.col_strategy[col_lo:col_hi])
    values = np.asarray(result.values[lo:hi])

    row_state = np.repeat(np.arange(codes.size), row_count)
    col_state = np.repeat(np.arange(codes.size), col_count)
    optimal_reply = _optimal_replies(e, result, row, col, values, row_state)
    at = np.minimum(np.searchsorted(reached, codes), max(reached.size - 1, 0))
    is_reached = reached[at] == codes if reached.size else np.zeros(codes.size, bool)

    def cards(mask: np.ndarray, actions: np.ndarray) -> np.ndarray:
        return np.bincount(actions[mask], minlength=size)[:size] > 0

    played, col_played = row > OPTIMAL_TOLERANCE, col > OPTIMAL_TOLERANCE
    return [
        cards(np.ones(row.size, bool), row_actions),
        cards(played & is_reached[row_state], row_actions) | cards(col_played & is_reached[col_state], col_actions),
        cards(played, row_actions),
        cards(optimal_reply, row_actions),
    ]


def _optimal_replies(e, result: SolveResult, row: np.ndarray, col: np.ndarray, values: np.ndarray,
                     row_state: np.ndarray) -> np.ndarray:
    """Per row action of the expansion `e` (of states whose values are
    `values`, strategies `row` and `col`): whether it earns the value against
    P2's reported strategy (within `OPTIMAL_TOLERANCE`)."""
    row_count, col_count = np.asarray(e.row_count, np.int64), np.asarray(e.col_count, np.int64)
    # Value of every cell (r, c), cells row-major per state, from the successors' table values.
    nxt = np.asarray(e.out_next, np.int64)
    live = nxt >= 0
    cont = np.empty(nxt.size)
    # Each successor looked up once, in order: far fewer and far faster probes of the (mapped) table.
    successors, slot = np.unique(nxt[live], return_inverse=True)
    at = np.searchsorted(result.states, successors)
    if at.size and (at.max() >= result.num_states or np.any(result.states[at] != successors)):
        raise ValueError("a successor is missing from the table")
    cont[live] = np.asarray(result.values[at])[slot]
    cont[~live] = result.terminal_payoff[-1 - nxt[~live]]
    cells = row_count * col_count
    out_cell = np.repeat(np.arange(cells.sum()), np.asarray(e.out_count, np.int64))
    cell_value = np.bincount(out_cell, weights=np.asarray(e.out_prob) * cont, minlength=int(cells.sum()))
    layout = CellIndex.of_counts(row_count, col_count)
    # A card in some optimal strategy's support earns the value against every
    # optimal strategy of the opponent; one that earns less against the
    # reported one is in no optimal support there.
    earned = np.bincount(layout.row, weights=cell_value * col[layout.col], minlength=row.size)
    return earned >= values[row_state] - OPTIMAL_TOLERANCE


def flags_for_statuses(
    game: StochasticGame, result: SolveResult, played_from_start: np.ndarray, chunk: int = CHUNK_STATES,
    entries: int = 1 << 24,
) -> CardFlags:
    """The flags as far as the cards' statuses (`usage.statuses`) read them,
    with `played_from_start` known (from play): `legal` and `played` from the
    table's stored actions and strategies (no state expanded), and
    `optimal_reply` only for the legal cards P1 never plays (the only ones
    whose status reads it), only at the states where one of them is legal,
    and no further once each is found: False for every other card. Where every
    card is played somewhere, no state is expanded at all."""
    size = len(game.action_labels)
    legal, played = np.zeros(size, bool), np.zeros(size, bool)
    for lo in range(0, result.row_actions.shape[0], entries):
        actions = np.asarray(result.row_actions[lo : lo + entries], np.int64)
        legal |= np.bincount(actions, minlength=size)[:size] > 0
        played |= np.bincount(actions[np.asarray(result.row_strategy[lo : lo + entries]) > OPTIMAL_TOLERANCE],
                              minlength=size)[:size] > 0
    optimal_reply = np.zeros(size, bool)
    wanted = legal & ~played_from_start & ~played
    for lo in range(0, result.num_states, chunk):
        if not wanted.any():
            break
        found = _replies_where_legal(game, result, wanted, lo, min(lo + chunk, result.num_states), size)
        optimal_reply |= found
        wanted &= ~found
    return CardFlags(legal, np.asarray(played_from_start, bool), played, optimal_reply)


def _replies_where_legal(game, result: SolveResult, wanted: np.ndarray, lo: int, hi: int, size: int) -> np.ndarray:
    """Per action id: whether it is one of the `wanted` cards and an optimal
    reply at one of the states lo..hi where some wanted card is legal."""
    row_lo, row_hi = int(result.row_ptr[lo]), int(result.row_ptr[hi])
    actions = np.asarray(result.row_actions[row_lo:row_hi], np.int64)
    state = np.repeat(np.arange(hi - lo), np.diff(np.asarray(result.row_ptr[lo : hi + 1], np.int64)))
    index = lo + np.unique(state[wanted[actions]])
    if index.size == 0:
        return np.zeros(size, bool)
    e = game.expand(np.asarray(result.states[index]))
    row_actions = np.asarray(e.row_actions, np.int64)
    if not np.array_equal(row_actions, result.row_actions[segment_positions(result.row_ptr, index)]):
        raise ValueError("the table's actions differ from the game's: a table of other rules?")
    row = np.asarray(result.row_strategy[segment_positions(result.row_ptr, index)])
    col = np.asarray(result.col_strategy[segment_positions(result.col_ptr, index)])
    values = np.asarray(result.values[index])
    replies = _optimal_replies(e, result, row, col, values, np.repeat(np.arange(index.size), np.asarray(e.row_count)))
    return (np.bincount(row_actions[replies], minlength=size)[:size] > 0) & wanted


def legal_row_actions(result: SolveResult, chunk: int = 1 << 24) -> np.ndarray:
    """The action ids P1 may play somewhere in `result`, ascending (read in chunks)."""
    seen = np.zeros(len(result.action_labels), bool)
    for lo in range(0, result.row_actions.shape[0], chunk):
        seen |= np.bincount(np.asarray(result.row_actions[lo : lo + chunk], np.int64), minlength=seen.size) > 0
    return np.flatnonzero(seen)
