"""Successor lists and strongly connected components of a GameGraph.

Both are needed to solve a cyclic game component by component: a component's
values depend only on its own states and on states of components listed
before it, so solving in list order always finds successors already solved.

Everything is CSR arrays built by numba kernels (no Python object per state),
so it scales to tens of millions of states. Tarjan's algorithm is run with an
explicit stack: recursion would overflow long before 40M nodes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .graph import GameGraph


@njit(cache=True)
def successor_kernel(row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, row_w, col_w):
    """Distinct successor states of every state, over cells whose two actions
    have positive weight and outcomes of positive probability."""
    n = row_ptr.shape[0] - 1
    mark = np.full(n, -1, np.int64)  # mark[t] == s: t already listed for s
    ptr = np.zeros(n + 1, np.int64)
    succ = np.empty(0, np.int64)
    # Two passes over one loop body (count, then fill) avoid a growable buffer.
    for fill in (False, True):
        if fill:
            succ = np.empty(ptr[n], np.int64)
            mark[:] = -1
        for s in range(n):
            pos = ptr[s]
            r0 = row_ptr[s]
            c0 = col_ptr[s]
            m = row_ptr[s + 1] - r0
            nn = col_ptr[s + 1] - c0
            base = cell_ptr[s]
            for r in range(m):
                if row_w[r0 + r] <= 0.0:
                    continue
                for c in range(nn):
                    if col_w[c0 + c] <= 0.0:
                        continue
                    k = base + r * nn + c
                    for o in range(out_ptr[k], out_ptr[k + 1]):
                        t = out_next[o]
                        if t >= 0 and out_prob[o] > 0.0 and mark[t] != s:
                            mark[t] = s
                            if fill:
                                succ[pos] = t
                            pos += 1
            if not fill:
                ptr[s + 1] = pos
    return ptr, succ


@njit(cache=True)
def tarjan(ptr, adj):
    """Iterative Tarjan. Negative entries of `adj` are ignored (terminals).

    Tarjan emits a component only after every component reachable from it,
    so the emission order is already reverse topological.
    """
    n = ptr.shape[0] - 1
    index = np.full(n, -1, np.int64)
    low = np.empty(n, np.int64)
    on_stack = np.zeros(n, np.bool_)
    stack = np.empty(n, np.int64)
    call_v = np.empty(n, np.int64)  # explicit DFS call stack: node ...
    call_e = np.empty(n, np.int64)  # ... and its next edge to explore
    comp_states = np.empty(n, np.int64)
    comp_ptr = np.empty(n + 1, np.int64)
    comp_ptr[0] = 0
    sp = 0
    cp = 0
    nc = 0
    filled = 0
    counter = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        index[root] = counter
        low[root] = counter
        counter += 1
        stack[sp] = root
        sp += 1
        on_stack[root] = True
        call_v[cp] = root
        call_e[cp] = ptr[root]
        cp += 1
        while cp > 0:
            v = call_v[cp - 1]
            e = call_e[cp - 1]
            if e < ptr[v + 1]:
                call_e[cp - 1] = e + 1
                w = adj[e]
                if w < 0:
                    continue
                if index[w] < 0:
                    index[w] = counter
                    low[w] = counter
                    counter += 1
                    stack[sp] = w
                    sp += 1
                    on_stack[w] = True
                    call_v[cp] = w
                    call_e[cp] = ptr[w]
                    cp += 1
                elif on_stack[w]:
                    if index[w] < low[v]:
                        low[v] = index[w]
            else:
                cp -= 1
                if low[v] == index[v]:
                    while True:
                        sp -= 1
                        w = stack[sp]
                        on_stack[w] = False
                        comp_states[filled] = w
                        filled += 1
                        if w == v:
                            break
                    nc += 1
                    comp_ptr[nc] = filled
                if cp > 0:
                    u = call_v[cp - 1]
                    if low[v] < low[u]:
                        low[u] = low[v]
    return comp_ptr[: nc + 1].copy(), comp_states


@njit(cache=True)
def component_of_kernel(comp_ptr, comp_states, n):
    comp_of = np.full(n, -1, np.int64)
    for ci in range(comp_ptr.shape[0] - 1):
        for j in range(comp_ptr[ci], comp_ptr[ci + 1]):
            comp_of[comp_states[j]] = ci
    return comp_of


@njit(cache=True, inline="always")
def _place(t, local, keys, order):
    """The place of state t in the list `predecessors_among` was given, -1 if absent:
    from `local` where it is filled (dense), else by binary search in `keys` (sorted)."""
    if local.shape[0]:
        return local[t]
    k = np.searchsorted(keys, t)
    if k < keys.shape[0] and keys[k] == t:
        return order[k]
    return -1


@njit(cache=True)
def predecessors_among(states, cell_ptr, out_ptr, out_next, n):
    """(ptr, pred): for each of `states` (by its place in the list), the places
    of those of `states` with a move to it (`pred[ptr[j]:ptr[j + 1]]`; repeats
    kept, itself included if it loops); moves to other states are left out.
    `n`: the graph's state count. A few states of a big graph (one component
    of a layer) are looked up by binary search, not through an n-sized map:
    called once per component, the map would cost the layer's size each time."""
    c = states.shape[0]
    dense = 8 * c >= n
    local = np.full(n if dense else 0, -1, np.int64)
    order = np.argsort(states) if not dense else np.zeros(0, np.int64)
    keys = states[order]
    for j in range(c if dense else 0):
        local[states[j]] = j
    # One pass over the states' moves: each move within `states`, as (its target's place, its source's place).
    moves = 0
    for j in range(c):
        moves += out_ptr[cell_ptr[states[j] + 1]] - out_ptr[cell_ptr[states[j]]]
    target = np.empty(moves, np.int64)
    source = np.empty(moves, np.int64)
    k = 0
    for j in range(c):
        s = states[j]
        for o in range(out_ptr[cell_ptr[s]], out_ptr[cell_ptr[s + 1]]):
            t = out_next[o]
            place = _place(t, local, keys, order) if t >= 0 else -1
            if place >= 0:
                target[k] = place
                source[k] = j
                k += 1
    # Grouped by target, each group in the order met (a counting sort).
    ptr = np.zeros(c + 1, np.int64)
    for e in range(k):
        ptr[target[e] + 1] += 1
    for j in range(c):
        ptr[j + 1] += ptr[j]
    pred = np.empty(k, np.int64)
    at = ptr[:-1].copy()
    for e in range(k):
        pred[at[target[e]]] = source[e]
        at[target[e]] += 1
    return ptr, pred


def _ones(k: int) -> np.ndarray:
    return np.ones(k, np.float64)


def successor_csr(
    graph: GameGraph,
    row_strategy: np.ndarray | None = None,
    col_strategy: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Distinct non-terminal successors of each state: `succ[succ_ptr[i]:succ_ptr[i+1]]`.

    Over all cells and outcomes by default; outcomes of probability 0 are not
    edges. Given a strategy for a player, only cells where that player's action
    has positive weight count (the graph of play against that strategy).
    """
    row_w = _ones(len(graph.row_actions)) if row_strategy is None else np.ascontiguousarray(row_strategy, np.float64)
    col_w = _ones(len(graph.col_actions)) if col_strategy is None else np.ascontiguousarray(col_strategy, np.float64)
    return successor_kernel(*graph.kernel_arrays()[:6], row_w, col_w)  # type: ignore[call-arg]  # numba's dispatcher passes the kernel's own arguments


def scc_from_csr(succ_ptr: np.ndarray, succ: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SCCs of the graph with edges i -> succ[succ_ptr[i]:succ_ptr[i+1]] (negative entries ignored).

    Component c is `comp_states[comp_ptr[c]:comp_ptr[c+1]]`; components are in
    reverse topological order (every edge goes to the same or an earlier one).
    """
    return tarjan(np.ascontiguousarray(succ_ptr, np.int64), np.ascontiguousarray(succ, np.int64))


def strongly_connected_components(graph: GameGraph) -> tuple[np.ndarray, np.ndarray]:
    """SCCs of the game graph in reverse topological order: `(comp_ptr, comp_states)`.

    Every state's successors lie in its own component or in an earlier one,
    so solving components in list order always finds successors solved.
    """
    return scc_from_csr(*successor_csr(graph))


def component_of(comp_ptr: np.ndarray, comp_states: np.ndarray, num_states: int) -> np.ndarray:
    """Component index of every state (-1 for states in no listed component)."""
    return component_of_kernel(np.asarray(comp_ptr, np.int64), np.asarray(comp_states, np.int64), int(num_states))
