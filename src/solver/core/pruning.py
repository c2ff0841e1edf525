"""A game graph with some of each state's actions taken away.

Hurried play chooses, at each state, among one side's optimal stage
strategies; actions that no optimal strategy plays are never played, so the
moves they lead to are not part of the order in which its states depend on
each other. Taking them away before that order is found leaves fewer and
smaller cycles to iterate (`hurry`).
"""

from __future__ import annotations

from dataclasses import replace

import numba
import numpy as np

from .graph import GameGraph


@numba.njit(cache=True)
def _kept(row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, keep_row, keep_col):
    """The arrays of the graph keeping only the actions marked in `keep_row`
    and `keep_col`, and the positions (into the old action arrays) of those kept."""
    n = row_ptr.shape[0] - 1
    rp = np.zeros(n + 1, np.int64)
    cp = np.zeros(n + 1, np.int64)
    kp = np.zeros(n + 1, np.int64)
    outs = 0
    for s in range(n):
        m = row_ptr[s + 1] - row_ptr[s]
        w = col_ptr[s + 1] - col_ptr[s]
        rows = 0
        for r in range(m):
            rows += keep_row[row_ptr[s] + r]
        cols = 0
        for c in range(w):
            cols += keep_col[col_ptr[s] + c]
        rp[s + 1] = rp[s] + rows
        cp[s + 1] = cp[s] + cols
        kp[s + 1] = kp[s] + rows * cols
        for r in range(m):
            if keep_row[row_ptr[s] + r]:
                for c in range(w):
                    if keep_col[col_ptr[s] + c]:
                        k = cell_ptr[s] + r * w + c
                        outs += out_ptr[k + 1] - out_ptr[k]
    rows_kept = np.empty(rp[n], np.int64)
    cols_kept = np.empty(cp[n], np.int64)
    op = np.zeros(kp[n] + 1, np.int64)
    on = np.empty(outs, np.int64)
    ob = np.empty(outs, np.float64)
    a = 0
    b = 0
    k2 = 0
    o = 0
    for s in range(n):
        m = row_ptr[s + 1] - row_ptr[s]
        w = col_ptr[s + 1] - col_ptr[s]
        for r in range(m):
            if keep_row[row_ptr[s] + r]:
                rows_kept[a] = row_ptr[s] + r
                a += 1
        for c in range(w):
            if keep_col[col_ptr[s] + c]:
                cols_kept[b] = col_ptr[s] + c
                b += 1
        for r in range(m):
            if not keep_row[row_ptr[s] + r]:
                continue
            for c in range(w):
                if not keep_col[col_ptr[s] + c]:
                    continue
                k = cell_ptr[s] + r * w + c
                for j in range(out_ptr[k], out_ptr[k + 1]):
                    on[o] = out_next[j]
                    ob[o] = out_prob[j]
                    o += 1
                k2 += 1
                op[k2] = o
    return rp, cp, kp, op, on, ob, rows_kept, cols_kept


def kept_actions(graph: GameGraph, keep_row: np.ndarray, keep_col: np.ndarray) -> tuple[GameGraph, np.ndarray, np.ndarray]:
    """(graph, rows kept, columns kept): `graph` with only the actions marked in
    `keep_row` (over `row_actions`) and `keep_col` (over `col_actions`), every
    state keeping at least one of each; and the positions in the old
    `row_actions` and `col_actions` of the actions kept, in their new order.
    The states, their order and the terminal outcomes stay the same."""
    keep_row = np.ascontiguousarray(keep_row, np.bool_)
    keep_col = np.ascontiguousarray(keep_col, np.bool_)
    if keep_row.shape != graph.row_actions.shape or keep_col.shape != graph.col_actions.shape:
        raise ValueError("keep_row and keep_col mark each of the graph's actions")
    rp, cp, kp, op, on, ob, rows_kept, cols_kept = _kept(  # type: ignore[call-arg]  # numba passes the kernel's own arguments
        *graph.kernel_arrays()[:6], keep_row, keep_col,
    )
    if np.any(np.diff(rp) == 0) or np.any(np.diff(cp) == 0):
        raise ValueError("every state keeps at least one action of each side")
    pruned = replace(
        graph, row_ptr=rp, row_actions=graph.row_actions[rows_kept], col_ptr=cp,
        col_actions=graph.col_actions[cols_kept], cell_ptr=kp, out_ptr=op, out_next=on, out_prob=ob,
    )
    return pruned, rows_kept, cols_kept
