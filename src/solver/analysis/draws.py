"""What drawing each bonus card is worth to the player who draws it.

Definition (stated in the report): over every draw that happens under the
reported strategies from the start, weighted by how often it happens, the
value to the drawer after drawing card X, minus the value after that same
draw made at random (the average over the cards that draw could have given,
with their probabilities). Positive: X is better than an average draw."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rules.charge_spark.state import held_bonus_counts

from ..core.chain import CellIndex, expected_visits, play_chain
from ..core.graph import GameGraph, expansion_of, segment_positions
from ..core.outcome import Seat
from ..core.play import FollowedPlay, Play, PlayedChunk, cells_and_states_of
from ..core.result import SolveResult


@dataclass(frozen=True)
class DrawValue:
    card: str
    gain: float
    """Value to the drawer after drawing this card, minus after the same draw at random."""
    draws_per_game: float
    """Expected number of times either player draws it in a game."""


def draw_values(
    graph: GameGraph, values: np.ndarray, row_strategy: np.ndarray, col_strategy: np.ndarray, start: int,
    held: np.ndarray, kinds: tuple[str, ...], max_turns: int = 200,
) -> list[DrawValue]:
    """`held[i, seat, k]`: how many bonus cards of kind `kinds[k]` the player at
    `seat` holds at state i (in hand or rest zone); it rises only by drawing."""
    chain = play_chain(graph, row_strategy, col_strategy)
    visits = expected_visits(chain, start, max_turns)
    cells = CellIndex.of(graph)
    cell_weight = visits[cells.state] * row_strategy[cells.row] * col_strategy[cells.col]
    out_cell = np.repeat(np.arange(graph.num_cells, dtype=np.int64), np.diff(graph.out_ptr))
    live = (graph.out_next >= 0) & (cell_weight[out_cell] > 0)
    cell, nxt, prob = out_cell[live], graph.out_next[live], graph.out_prob[live]
    drawn = held[nxt] - held[cells.state[cell]]  # (outcomes, 2, kinds)
    sums = _draw_sums(cell, cell_weight, values[nxt], drawn, prob, len(kinds))
    return _draw_values(kinds, *sums)


def table_draw_values(
    game, result: SolveResult, play: Play, visits: np.ndarray, chunk: int = 1 << 16,
) -> list[DrawValue]:
    """`draw_values` of the solved table `result` of `game` (Charge & Spark),
    from `play` (its chain of play from the start) and `visits` (expected
    visits of each of its states), streamed chunk by chunk of those states."""
    kinds = tuple(card.label for card in game.codec.bonus_kinds)
    gain_sum, weight_sum = np.zeros(len(kinds)), np.zeros(len(kinds))
    for lo in range(0, play.states.size, chunk):
        codes, index = play.states[lo : lo + chunk], play.index[lo : lo + chunk]
        e = expansion_of(game, codes)
        cells = CellIndex.of_counts(e["row_count"], e["col_count"])
        row_w = np.asarray(result.row_strategy[segment_positions(result.row_ptr, index)])
        col_w = np.asarray(result.col_strategy[segment_positions(result.col_ptr, index)])
        cell_weight = visits[lo + cells.state] * row_w[cells.row] * col_w[cells.col]
        out_cell = np.repeat(np.arange(cells.state.size, dtype=np.int64), e["out_count"])
        live = (e["out_next"] >= 0) & (cell_weight[out_cell] > 0)
        cell, nxt, prob = out_cell[live], e["out_next"][live].astype(np.int64), e["out_prob"][live]
        drawn = held_bonus_counts(game.codec, nxt) - held_bonus_counts(game.codec, codes)[cells.state[cell]]
        gain, weight = _draw_sums(cell, cell_weight, result.values[np.searchsorted(result.states, nxt)], drawn, prob,
                                  len(kinds))
        gain_sum += gain
        weight_sum += weight
    return _draw_values(kinds, gain_sum, weight_sum)


def _draw_sums(
    cell: np.ndarray, cell_weight: np.ndarray, next_values: np.ndarray, drawn: np.ndarray, prob: np.ndarray,
    kinds: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Per kind: the weighted gain over a draw at random, and the weight, of the
    outcomes given (each of cell `cell`, value `next_values` to P1 after it,
    `drawn[j, seat, k]` cards of kind k drawn by `seat`)."""
    gain_sum, weight_sum = np.zeros(kinds), np.zeros(kinds)
    for drew, gain in _gains_over_random_draws(cell, cell_weight.size, next_values, drawn, prob):
        weight = cell_weight[cell] * prob
        gain_sum += (weight * gain) @ drew
        weight_sum += weight @ drew
    return gain_sum, weight_sum


def _gains_over_random_draws(cell: np.ndarray, cells: int, next_values: np.ndarray, drawn: np.ndarray, prob: np.ndarray):
    """Per seat: which kinds each outcome has it draw, and what the outcome is
    worth to it over the same draw at random (the cell's outcomes in which
    this seat draws, averaged)."""
    for seat in Seat:
        to_drawer = next_values if seat == Seat.P1 else 1.0 - next_values
        drew = drawn[:, seat, :] > 0
        any_draw = drew.any(axis=1)
        mass = np.bincount(cell, weights=prob * any_draw, minlength=cells)
        total = np.bincount(cell, weights=prob * any_draw * to_drawer, minlength=cells)
        at_random = np.divide(total, mass, out=np.zeros_like(total), where=mass > 0)[cell]
        yield drew, to_drawer - at_random


def _draw_values(kinds: tuple[str, ...], gain_sum: np.ndarray, weight_sum: np.ndarray) -> list[DrawValue]:
    return [
        DrawValue(card, float(g / w) if w > 0 else float("nan"), float(w))
        for card, g, w in zip(kinds, gain_sum, weight_sum)
    ]


def draw_sums_of(game, result: SolveResult):
    """What `follow_play` gathers for `draws_from_play`: for each state of a
    `PlayedChunk`, the gains and weights of `_draw_sums` as if it were visited
    once (the draws' weights are linear in the state's visits), shape
    (states, 2 x kinds)."""
    kinds = len(game.codec.bonus_kinds)

    def sums(part: PlayedChunk) -> np.ndarray:
        e, size = part.expansion, part.codes.size
        live = np.flatnonzero(part.slot >= 0)  # played outcomes leading to a state (those of positive weight)
        # Each successor's value and holdings read once: the mapped table is read in order.
        values = np.asarray(result.values[part.successors])[part.slot[live]]
        # A player holds a few cards of a kind: int8 counts, an eighth of the bytes per outcome.
        held_next = held_bonus_counts(game.codec, np.asarray(result.states[part.successors])).astype(np.int8)
        cell, state = cells_and_states_of(e, live)
        drawn = held_next[part.slot[live]] - held_bonus_counts(game.codec, part.codes).astype(np.int8)[state]
        prob = np.asarray(e["out_prob"], np.float64)[live]
        # `_draw_sums` per state, each outcome weighted by its probability under both strategies.
        return _draw_sums_by_state(cell, state, size, part.weight[live], values, drawn, prob, kinds)

    return sums


def _draw_sums_by_state(
    cell: np.ndarray, state: np.ndarray, size: int, weight: np.ndarray, next_values: np.ndarray, drawn: np.ndarray,
    prob: np.ndarray, kinds: int,
) -> np.ndarray:
    """`_draw_sums` of each state on its own (one visit): (states, gains then weights per kind)."""
    out = np.zeros((size, 2 * kinds))
    if kinds == 0 or cell.size == 0:
        return out
    for drew, gain in _gains_over_random_draws(cell, int(cell.max()) + 1, next_values, drawn, prob):
        for k in range(kinds):
            out[:, k] += np.bincount(state, weights=weight * gain * drew[:, k], minlength=size)
            out[:, kinds + k] += np.bincount(state, weights=weight * drew[:, k], minlength=size)
    return out


def draws_from_play(game, followed: FollowedPlay, visits: np.ndarray) -> list[DrawValue]:
    """`table_draw_values` from what `follow_play` gathered with `draw_sums_of`
    and the expected `visits` of play's states."""
    kinds = tuple(card.label for card in game.codec.bonus_kinds)
    total = visits[followed.gathered_at] @ followed.gathered
    return _draw_values(kinds, total[: len(kinds)], total[len(kinds) :])
