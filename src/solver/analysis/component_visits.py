"""Expected visits of each state of a chain of play, component by component
in topological order (Kahn's algorithm over its strongly connected
components): the bookkeeping compiled, the loops of each step solved
together by scipy. Apart from `stalls` so that a query reading kept figures
never loads the compiler.

Each step takes every component whose predecessors are done; the sums are
taken in the order numpy's `bincount` took them before this was compiled, so
the visits are the same to the last bit. On the printed rules' chain (16.2
million states, 15.0 million components, 412 steps) the steps took 18-21 s
in numpy and take a few seconds compiled; the loops' solves (about 3 s) are
unchanged."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numba
import numpy as np

from ..core.graph import index_type

if TYPE_CHECKING:
    import scipy.sparse as sp

DIRECT_STATES = 2_000
"""Loops of a step with at most this many states in all are solved directly, larger ones iteratively."""
SOLVE_TOLERANCE = 1e-12
"""Relative residual of an iterative solve of expected visits."""
ITERATIONS = 300
"""BiCGSTAB steps before a large system is solved directly after all (a loop play almost never leaves)."""


class ComponentVisits:
    """Expected visits of each state from `start` (solving (I - Q)^T v = e_start),
    component by component: `states` (0 in closed components, where they are
    infinite once entered), `entries` of each component (expected times play
    comes into it, the start included), `inflow` of each state (entries there),
    which components are `closed` (a loop play never leaves) and `looped`
    (a state that can follow itself). `labels`: each state's component
    (`count` of them), as scipy's `connected_components` gives them."""

    def __init__(self, q: sp.csr_matrix, ending: np.ndarray, start: int, labels: np.ndarray, count: int) -> None:
        n = q.shape[0]
        indptr, indices, data = (np.asarray(a) for a in (q.indptr, q.indices, q.data))
        within, self.looped, leaves, waiting = _edge_facts(indptr, indices, labels, count)
        leaves[labels[ending > 0]] = True
        size = np.bincount(labels, minlength=count)
        self.closed = ((size > 1) | self.looped) & ~leaves
        loop = (size > 1) | self.looped
        members = np.argsort(labels, kind="stable")
        first_member = np.cumsum(size) - size
        local = np.full(n, -1, index_type(n))
        flows = np.empty((n, 2))  # per state: its inflow, and a step's flows into it (`_pushed`)
        flows[:, 0], flows[:, 1] = 0.0, -1.0
        flows[start, 0] = 1.0
        self.states = np.zeros(n)
        self.entries = np.zeros(count)
        frontier = np.flatnonzero(waiting == 0)
        while frontier.size:
            states, x, solve = _step_states(
                frontier, members, first_member, size, flows, self.entries, self.closed, loop,
            )
            if solve.size:
                edges, source = _step_edges(indptr, states)
                x[solve] = _loop_visits(indptr, indices, data, labels, states, solve, edges, source, within, x, local)
            self.states[states] = x
            frontier = _pushed(indptr, indices, data, labels, within, states, x, flows, waiting)
        self.inflow = flows[:, 0].copy()


@numba.njit(cache=True)
def _edge_facts(indptr, indices, labels, count):
    """Per edge whether it stays within its component; per component whether a
    state of it can follow itself (`looped`), whether an edge leaves it, and
    how many edges enter it from other components (`waiting`)."""
    within = np.empty(indices.size, np.bool_)
    looped = np.zeros(count, np.bool_)
    leaves = np.zeros(count, np.bool_)
    waiting = np.zeros(count, np.int64)
    for s in range(indptr.size - 1):
        c = labels[s]
        for e in range(indptr[s], indptr[s + 1]):
            t = indices[e]
            d = labels[t]
            within[e] = c == d
            if t == s:
                looped[c] = True
            if c != d:
                leaves[c] = True
                waiting[d] += 1
    return within, looped, leaves, waiting


@numba.njit(cache=True)
def _step_states(frontier, members, first_member, size, flows, entries, closed, loop):
    """The states of the step's components (`frontier`, in its order; each
    component's states in index order), their visits where no loop needs
    solving (the inflow; 0 in a closed component), where loops do (`solve`,
    positions among the states), and each component's entries (set)."""
    total = 0
    for c in frontier:
        total += size[c]
    states = np.empty(total, np.int64)
    x = np.empty(total)
    solve = np.empty(total, np.int64)
    k = 0
    loops = 0
    for c in frontier:
        entered = 0.0
        for m in range(first_member[c], first_member[c] + size[c]):
            s = members[m]
            states[k] = s
            b = flows[s, 0]
            entered += b
            x[k] = 0.0 if closed[c] else b
            if loop[c] and not closed[c]:
                solve[loops] = k
                loops += 1
            k += 1
        entries[c] = entered
    return states, x, solve[:loops]


@numba.njit(cache=True, inline="always")
def _edge_count(indptr, states):
    total = 0
    for s in states:
        total += indptr[s + 1] - indptr[s]
    return total


@numba.njit(cache=True)
def _step_edges(indptr, states):
    """The edges of `states`, in order, and the position of each one's state among them."""
    total = _edge_count(indptr, states)
    edges = np.empty(total, np.int64)
    source = np.empty(total, np.int64)
    k = 0
    for i in range(states.size):
        s = states[i]
        for e in range(indptr[s], indptr[s + 1]):
            edges[k] = e
            source[k] = i
            k += 1
    return edges, source


@numba.njit(cache=True)
def _pushed(indptr, indices, data, labels, within, states, x, flows, waiting):
    """Carry the step's visits along the edges leaving their components into
    the inflow (`flows[:, 0]`: each target's flows summed in edge order from
    zero, then added, as `bincount` did), count the edges arrived against
    `waiting`, and return the components whose last awaited edge arrived, in
    ascending order. `flows[:, 1]` is the step's sum per target, -1 between
    steps (a state's pair shares a cache line: the targets are everywhere)."""
    count = _edge_count(indptr, states)
    touched = np.empty(count, np.int64)
    arrived = np.empty(count, np.int64)
    t_count = 0
    a_count = 0
    for i in range(states.size):
        s = states[i]
        for e in range(indptr[s], indptr[s + 1]):
            if within[e]:
                continue
            t = indices[e]
            if flows[t, 1] < 0.0:
                flows[t, 1] = 0.0
                touched[t_count] = t
                t_count += 1
            flows[t, 1] += data[e] * x[i]
            d = labels[t]
            waiting[d] -= 1
            if waiting[d] == 0:
                arrived[a_count] = d
                a_count += 1
    for k in range(t_count):
        t = touched[k]
        flows[t, 0] += flows[t, 1]
        flows[t, 1] = -1.0
    return np.sort(arrived[:a_count])


def _loop_visits(indptr, indices, data, labels, states, solve, edges, source, within, b, local) -> np.ndarray:
    """Visits of `states[solve]` (whole loops, none closed): (I - M^T) x = b
    over the edges within their components, every loop of this step in
    one solve (no edge joins two of them)."""
    import scipy.sparse as sp

    local[states[solve]] = np.arange(solve.size)
    inside = within[edges] & (local[states[source]] >= 0)
    i = local[states[source[inside]]]
    j = local[indices[edges[inside]]]
    m = sp.csr_matrix((data[edges[inside]], (j, i)), shape=(solve.size, solve.size))
    x = _solve(sp.identity(solve.size, format="csr") - m, b[solve])
    local[states[solve]] = -1
    return x


def _solve(a: sp.csr_matrix, b: np.ndarray) -> np.ndarray:
    """x with a x = b: a direct solve of a small system; of a large one (where
    LU fill-in grows fast) BiCGSTAB, Jacobi-preconditioned, checked by its
    residual, and the direct solve only where that does not converge soon."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import bicgstab, spsolve

    if a.shape[0] > DIRECT_STATES:
        inverse = sp.diags(1.0 / a.diagonal())
        x, info = bicgstab(a, b, x0=inverse @ b, rtol=SOLVE_TOLERANCE, atol=0.0, M=inverse, maxiter=ITERATIONS)
        if info == 0 and np.linalg.norm(b - a @ x) <= 10 * SOLVE_TOLERANCE * np.linalg.norm(b):
            return x
    return np.atleast_1d(spsolve(a.tocsc(), b))
