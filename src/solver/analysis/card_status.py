"""Each card's status (see `usage.CardStatus`) over every state of a solved
table, streamed in chunks: each chunk is expanded with the game and its
successors' values looked up in the table's sorted states, so no transition
graph of the whole table is ever held (the default rules' would be ~84 GB)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.chain import CellIndex
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
    row_index, col_index = layout.row, layout.col
    # A card in some optimal strategy's support earns the value against every
    # optimal strategy of the opponent; one that earns less against the
    # reported one is in no optimal support there.
    earned = np.bincount(row_index, weights=cell_value * col[col_index], minlength=row.size)
    row_state = np.repeat(np.arange(codes.size), row_count)
    col_state = np.repeat(np.arange(codes.size), col_count)
    optimal_reply = earned >= values[row_state] - OPTIMAL_TOLERANCE
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


def legal_row_actions(result: SolveResult, chunk: int = 1 << 24) -> np.ndarray:
    """The action ids P1 may play somewhere in `result`, ascending (read in chunks)."""
    seen = np.zeros(len(result.action_labels), bool)
    for lo in range(0, result.row_actions.shape[0], chunk):
        seen |= np.bincount(np.asarray(result.row_actions[lo : lo + chunk], np.int64), minlength=seen.size) > 0
    return np.flatnonzero(seen)
