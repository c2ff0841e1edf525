"""A game that may stop at every turn: one more outcome taking part of each cell's mass.

Hurried play's buzzer game (`hurry.buzzer_graph`) stops only play that would
go on; the leaking game of `everett` stops every turn, whatever it leads to.
Both are this transform of a graph's outcomes."""

from __future__ import annotations

import numba
import numpy as np

from .graph import GameGraph


@numba.njit(cache=True)
def _stopping_arrays(cell_ptr, out_ptr, out_next, out_prob, keep, stop, stop_terminal, every_outcome):
    """Each cell's outcomes, moves to a state scaled by `keep` (terminal outcomes too
    with `every_outcome`), then the stop outcome: `stop` itself with `every_outcome`
    (every cell), else `stop` times the mass of the moves (cells that have some)."""
    cells = cell_ptr[-1]
    extra = 0
    for k in range(cells):
        for j in range(out_ptr[k], out_ptr[k + 1]):
            if every_outcome or out_next[j] >= 0:
                extra += 1
                break
    ptr = np.zeros(cells + 1, np.int64)
    nxt = np.empty(out_next.shape[0] + extra, np.int64)
    prob = np.empty(out_next.shape[0] + extra, np.float64)
    o = 0
    for k in range(cells):
        staying = 0.0
        for j in range(out_ptr[k], out_ptr[k + 1]):
            nxt[o] = out_next[j]
            if every_outcome or out_next[j] >= 0:
                prob[o] = keep * out_prob[j]
                staying += out_prob[j]
            else:
                prob[o] = out_prob[j]
            o += 1
        if every_outcome or staying > 0.0:
            nxt[o] = -1 - stop_terminal
            prob[o] = stop if every_outcome else stop * staying
            o += 1
        ptr[k + 1] = o
    return ptr, nxt, prob


def stopping_outcomes(
    graph: GameGraph, keep: float, stop: float, every_outcome: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(out_ptr, out_next, out_prob) of `graph` with a stop outcome appended to its
    cells, as terminal outcome number `len(graph.terminal_payoff)` (see `_stopping_arrays`)."""
    return _stopping_arrays(
        np.ascontiguousarray(graph.cell_ptr, np.int64), np.ascontiguousarray(graph.out_ptr, np.int64),
        np.ascontiguousarray(graph.out_next, np.int64), np.ascontiguousarray(graph.out_prob, np.float64),
        keep, stop, graph.terminal_payoff.shape[0], every_outcome,
    )
