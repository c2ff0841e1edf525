"""Eliminating the states of a component that have at most one successor in it.

Most states of the components a strategy pair (or a strategy and a best
response) makes have one successor inside the component: a run of turns
that either leaves or moves on. Such a state's value is its constant plus a
multiple of its one successor's, x_j = c_j + a_j x_t, so it can be
substituted into its predecessors' equations without adding a single
transition: an edge i -> j becomes i -> t. A state with no successor left
in the component is known outright. Eliminating them, over and over as the
substitutions merge edges, leaves a *core* (often a small part of the
component) for the general solver; the eliminated states follow by back
substitution in the reverse order.

Each step is a step of GTH elimination in the cancellation-free form the
solver uses: the system is

    d_j x_j - sum_l P_jl x_l = rhs_j,   d_j = ex_j + sum_{l != j} P_jl,

with ex_j a state's exit mass (everything leaving the component). Eliminating
j (one successor t, mass p = P_jt, d = ex_j + p) gives a_j = p / d and
c_j = rhs_j / d; a predecessor i with mass q to j gains q * ex_j / d of exit
mass, q * a_j to t and q * c_j of right-hand side. Every quantity is a sum of
non-negative terms (a self-loop is dropped, as d already leaves it out): no
difference of nearly equal numbers is ever formed, so the answer is as
accurate as the core's.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _lone_successor(j, ptr, idx, val, alive):
    """(t, p): state j's one successor t in the component and the mass p it
    sends there (t = -1, p = 0 with none); t = -2 with two or more."""
    t = -1
    p = 0.0
    for e in range(ptr[j], ptr[j + 1]):
        if not alive[e]:
            continue
        if t == -1:
            t = idx[e]
        elif idx[e] != t:
            return -2, 0.0
        p += val[e]
    return t, p


@njit(cache=True)
def eliminate(c, ptr, idx, val, ex, rhs):
    """Eliminate every state with at most one successor, in place on the
    component's system: `ptr`, `idx`, `val` its off-diagonal transitions as
    CSR (local indices, no self-loops, positive masses), `ex` each state's
    exit mass (positive where it has no successor), `rhs` (c x k).

    Returns (order, target, coeff, const, alive, core): the states eliminated
    in order, each one's successor at elimination (-1 for none), a_j and c_j
    (k columns) so that x_j = c_j + a_j x_target, the transitions still alive
    (all between core states), and per state whether it is in the core."""
    k = rhs.shape[1]
    m = ptr[c]
    src = np.empty(m, np.int64)
    for j in range(c):
        for e in range(ptr[j], ptr[j + 1]):
            src[e] = j
    alive = np.ones(m, np.bool_)
    head = np.full(c, -1, np.int64)  # each state's incoming transitions, a linked list through `next_in`
    next_in = np.empty(m, np.int64)
    for e in range(m):
        t = idx[e]
        next_in[e] = head[t]
        head[t] = e
    core = np.ones(c, np.bool_)
    order = np.empty(c, np.int64)
    target = np.empty(c, np.int64)
    coeff = np.empty(c, np.float64)
    const = np.empty((c, k), np.float64)
    stack = np.empty(c, np.int64)
    queued = np.ones(c, np.bool_)
    for j in range(c):
        stack[j] = c - 1 - j  # popped in index order
    top = c
    done = 0
    while top > 0:
        top -= 1
        j = stack[top]
        queued[j] = False
        t, p = _lone_successor(j, ptr, idx, val, alive)
        d = ex[j] + p
        if t == -2 or not d > 0.0:
            continue
        order[done] = j
        target[done] = t
        coeff[done] = p / d
        for h in range(k):
            const[done, h] = rhs[j, h] / d
        core[j] = False
        for e in range(ptr[j], ptr[j + 1]):
            alive[e] = False
        e = head[j]
        while e != -1:
            following = next_in[e]
            i = src[e]
            if alive[e] and core[i]:
                q = val[e]
                ex[i] += q * (ex[j] / d)
                for h in range(k):
                    rhs[i, h] += q * const[done, h]
                if t == -1 or t == i:  # no successor, or back to i: a self-loop, which d leaves out
                    alive[e] = False
                else:
                    idx[e] = t
                    val[e] = q * coeff[done]
                    next_in[e] = head[t]
                    head[t] = e
                if not queued[i]:
                    queued[i] = True
                    stack[top] = i
                    top += 1
            e = following
        head[j] = -1
        done += 1
    return order[:done], target[:done], coeff[:done], const[:done], alive, core


@njit(cache=True)
def back_substitute(order, target, coeff, const, x):
    """Fill x (c x k) at the eliminated states, the core's rows already solved."""
    for r in range(order.shape[0] - 1, -1, -1):
        j = order[r]
        t = target[r]
        for h in range(x.shape[1]):
            x[j, h] = const[r, h] + (coeff[r] * x[t, h] if t >= 0 else 0.0)
