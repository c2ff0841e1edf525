"""What drawing each bonus card is worth to the player who draws it.

Definition (stated in the report): over every draw that happens under the
reported strategies from the start, weighted by how often it happens, the
value to the drawer after drawing card X, minus the value after that same
draw made at random (the average over the cards that draw could have given,
with their probabilities). Positive: X is better than an average draw."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..graph import GameGraph
from .chain import CellIndex, expected_visits, play_chain


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
    source = cells.state[cell]
    drawn = held[nxt] - held[source]  # (outcomes, 2, kinds)

    gain_sum = np.zeros(len(kinds))
    weight_sum = np.zeros(len(kinds))
    for seat in (0, 1):
        to_drawer = values[nxt] if seat == 0 else 1.0 - values[nxt]
        drew = drawn[:, seat, :] > 0
        any_draw = drew.any(axis=1)
        # The same draw at random: the cell's outcomes in which this seat draws, averaged.
        mass = np.bincount(cell, weights=prob * any_draw, minlength=graph.num_cells)
        total = np.bincount(cell, weights=prob * any_draw * to_drawer, minlength=graph.num_cells)
        at_random = np.divide(total, mass, out=np.zeros_like(total), where=mass > 0)[cell]
        weight = cell_weight[cell] * prob
        gain_sum += (weight * (to_drawer - at_random)) @ drew
        weight_sum += weight @ drew
    return [
        DrawValue(card, float(g / w) if w > 0 else float("nan"), float(w))
        for card, g, w in zip(kinds, gain_sum, weight_sum)
    ]
