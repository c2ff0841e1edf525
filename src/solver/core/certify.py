"""Exact certification of stationary strategies in a cyclic stochastic game.

Best response (`best_response_values`)
--------------------------------------
Fixing one player's stationary strategy leaves the other player (the
*responder*) an MDP whose run pays the terminal payoff where play ends and
`unending_payoff` (u) if it never ends. Below, payoffs are taken from the
responder's side (w = payoff for P1 responding, w = -payoff for P2), so the
responder maximises w; m = min(all terminal w, w_u) is its worst payoff.

u lies between the terminal payoffs, so this is neither maximum reachability
nor a discounted problem, and value iteration converges to whichever fixed
point its start leads to: from the bottom, a maximiser with a self-loop and a
0.3 exit settles at 0.3 instead of 0.5; from the top, a pure self-loop stays at
1 instead of 0.5. The method:

1. K = the states from which the responder can keep play going forever with
   probability 1: the greatest set such that every state in it has an action
   all of whose possible successors (over the fixed player's support and
   chance) are non-terminal and in K. Computed by peeling (a worklist removes
   states without such an action and re-checks their predecessors).
2. Give the responder an extra "stall" action at K states worth exactly w_u.
   It is realisable: from a K state the responder can really keep play going
   forever. Now let runs that never end (without stalling) pay m, the worst
   payoff. The true value equals the value of this modified problem: a
   modified strategy is emulated in the real game by playing the K-staying
   action instead of stalling (never worse, since real unending pays u >= m),
   and conversely under an optimal stationary policy every never-ending run
   falls into a closed class lying inside K, where stalling yields the same u.
3. The modified problem is a reachability-reward problem whose value is the
   *least* fixed point above m of
       V(s) = max( max_a Q(s, a; V),  w_u if s in K ).
   It is solved component by component in SCC order of the graph of play
   against the fixed strategy (successor components are final first). Inside
   a component: a few Gauss-Seidel value-iteration sweeps from m (from below;
   only a warm start), the greedy policy, then policy iteration with exact
   evaluation: states from which the policy can never leave the component (no
   terminal, no outside successor, no stall reachable) get m, the others solve
   (I - P) v = b. Improvement switches an action only for a gain > eps (1e-13
   times the payoff scale). With "never-ending runs pay m" every switch
   strictly raises the policy's value, so this terminates; at the end v is the
   value of a real policy (so v <= lfp) and a fixed point of the operator (so
   v >= lfp): optimal, up to eps times the expected time spent in the
   component. (A gain below rounding is invisible: if a loop's only way out
   has probability 1e-20, Q(loop) = 0.9 + 1e-21 rounds to 0.9 and a 0.9 exit
   is kept although looping is worth 1. Such exits come from strategy weights
   that are noise; zero them before certifying if they are.)

Linear solves: components of up to 64 states by GTH-style elimination (no
pivoting; pivots are sums of exit and off-diagonal mass, never 1 - p
differences, so even nearly closed components are accurate to rounding).
Bigger ones (sparse LU fills in badly on most of them) by iterative refinement with
Jacobi-preconditioned BiCGSTAB corrections and residuals in the
cancellation-free form ex_j x_j + sum_l P_jl (x_j - x_l), until corrections
are below 1e-14; if that fails (nearly closed components, where BiCGSTAB
crawls), sparse LU plus the same refinement (milliseconds on those sparse,
chain-like components), and dense GTH up to 4096 states where the refinement
does not reach rounding. Most components are single
acyclic states: one exact Bellman backup.

The returned responder policy replaces "stall" by a K-staying action; the pure
stationary policy obtained attains the values in the real game.

Everything else (`outcome_probabilities`, the length distribution) is the
absorbing Markov chain of a strategy pair, solved with the same component-wise
linear solves; closed classes with no way out never end.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.sparse.linalg import splu

from .components import component_of_kernel, successor_kernel, tarjan
from .graph import GameGraph
from .shapley import bellman_residual as compiled_bellman_residual

_log = logging.getLogger(__name__)

_DENSE_MAX = 64  # components up to this size: exact dense elimination; bigger: iterative
_VI_SWEEPS = 20  # Gauss-Seidel warm-start sweeps before policy iteration ...
_VI_MIN_SIZE = 8  # ... skipped for components this small
_VI_TOL = 1e-14
_MAX_POLICY_ITERATIONS = 10_000
_EPS = 1e-13  # policy-improvement threshold, times the payoff scale
_ITER_TOL = 1e-14  # iterative refinement of big components stops at corrections below this (x max(1, |x|)) ...
_REFINEMENTS = 8  # ... or after this many steps ...
_ITER_MAX = 5000  # ... of at most this many BiCGSTAB iterations each ...
_QUICK_ITER_MAX = 300  # ... or this many in components small enough for the fallback to be cheap:
_QUICK_SIZE = 65536  # states (sparse LU's fill-in on bigger components of these games is unmeasured)
_LU_FIRST = True  # if BiCGSTAB fails: sparse LU with refinement first (milliseconds where GTH takes a fifth of a second)
_GTH_MAX = 4096  # ... then, where it does not reach rounding, exact dense elimination up to this size (c^2 doubles)
_GTH_LAST_RESORT = 16384  # ... and still up to this size (2 GB) where sparse LU finds I - P singular


# --------------------------------------------------------------------------
# Graph arrays as one numba-friendly tuple.


def _check_strategy(strategy: np.ndarray, ptr: np.ndarray, who: str) -> np.ndarray:
    s = np.ascontiguousarray(strategy, np.float64)
    if s.shape != (int(ptr[-1]),):
        raise ValueError(f"{who} strategy has shape {s.shape}, expected ({int(ptr[-1])},)")
    if not np.all(np.isfinite(s)) or (s.size and s.min() < -1e-12):
        raise ValueError(f"{who} strategy has negative or non-finite weights")
    if s.size:
        sums = np.add.reduceat(s, np.asarray(ptr[:-1], np.int64))
        bad = np.flatnonzero(np.abs(sums - 1.0) > 1e-9)
        if bad.size:
            raise ValueError(f"{who} strategy does not sum to 1 at state {int(bad[0])} (sum {sums[bad[0]]})")
        # Renormalise so every code path (Bellman backups, linear solves) sees the same chain.
        s = np.maximum(s, 0.0) / np.repeat(sums, np.diff(np.asarray(ptr, np.int64)))
    return s


# --------------------------------------------------------------------------
# One component's linear system for a Markov chain given by two weight
# vectors: X[s] = reward[s] + sum_terminal q * term_vec[t] + sum_s' P(s, s') X[s'].


@njit(cache=True)
def _build_system(G, row_w, col_w, cs, ci, comp_of, loc, X, term_vec, reward, fixed, fixed_val):
    """Local system of component `ci` (states `cs`): intra-component transitions as
    COO (local indices), right-hand side with everything leaving the component
    folded in, and each state's probability of leaving it directly (its exit
    mass). Fixed states are exits (mass 1) whose value is `fixed_val`."""
    row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, _pay = G
    c = cs.shape[0]
    k = X.shape[1]
    has_reward = reward.shape[0] > 0
    cap = 0
    for j in range(c):
        s = cs[j]
        if not fixed[s]:
            cap += out_ptr[cell_ptr[s + 1]] - out_ptr[cell_ptr[s]]
    rows = np.empty(cap, np.int64)
    cols = np.empty(cap, np.int64)
    vals = np.empty(cap, np.float64)
    rhs = np.zeros((c, k), np.float64)
    exitm = np.zeros(c, np.float64)
    nnz = 0
    for j in range(c):
        s = cs[j]
        if fixed[s]:
            for h in range(k):
                rhs[j, h] = fixed_val[h]
            exitm[j] = 1.0
            continue
        if has_reward:
            for h in range(k):
                rhs[j, h] = reward[s, h]
        r0 = row_ptr[s]
        c0 = col_ptr[s]
        m = row_ptr[s + 1] - r0
        nn = col_ptr[s + 1] - c0
        base = cell_ptr[s]
        for r in range(m):
            wr = row_w[r0 + r]
            if wr <= 0.0:
                continue
            for cc in range(nn):
                wc = col_w[c0 + cc]
                if wc <= 0.0:
                    continue
                w = wr * wc
                kc = base + r * nn + cc
                for o in range(out_ptr[kc], out_ptr[kc + 1]):
                    p = out_prob[o]
                    if p <= 0.0:
                        continue
                    q = w * p
                    t = out_next[o]
                    if t < 0:
                        for h in range(k):
                            rhs[j, h] += q * term_vec[-1 - t, h]
                        exitm[j] += q
                    elif comp_of[t] != ci:
                        for h in range(k):
                            rhs[j, h] += q * X[t, h]
                        exitm[j] += q
                    else:
                        rows[nnz] = j
                        cols[nnz] = loc[t]
                        vals[nnz] = q
                        nnz += 1
    return rows[:nnz], cols[:nnz], vals[:nnz], rhs, exitm


@njit(cache=True)
def _reach_exit(c, rows, cols, exitm):
    """Local states that can reach a direct exit (backward search over the
    transitions): the others can never leave, so play from them never ends."""
    cnt = np.zeros(c + 1, np.int64)
    for e in range(rows.shape[0]):
        cnt[cols[e] + 1] += 1
    for j in range(c):
        cnt[j + 1] += cnt[j]
    pos = cnt[:-1].copy()
    pred = np.empty(rows.shape[0], np.int64)
    for e in range(rows.shape[0]):
        pred[pos[cols[e]]] = rows[e]
        pos[cols[e]] += 1
    in_r = exitm > 0.0
    queue = np.empty(c, np.int64)
    qt = 0
    for j in range(c):
        if in_r[j]:
            queue[qt] = j
            qt += 1
    qh = 0
    while qh < qt:
        j = queue[qh]
        qh += 1
        for e in range(cnt[j], cnt[j + 1]):
            i = pred[e]
            if not in_r[i]:
                in_r[i] = True
                queue[qt] = i
                qt += 1
    return in_r


@njit(cache=True)
def _dense_solve(c, rows, cols, vals, exitm, rhs, in_r, inf_vec):
    """Solve (I - P) x = rhs on one component by GTH-style elimination.

    I - P is a nonsingular M-matrix, so Gaussian elimination needs no pivoting.
    Each pivot is computed as (exit mass + remaining off-diagonal mass), a sum
    of non-negative terms, instead of 1 - P[k, k] minus updates: no
    cancellation, so nearly closed components (exit mass 1e-20, far below
    rounding of 1 - p) stay accurate to rounding. Rows that cannot reach an exit get `inf_vec`.
    """
    b = np.zeros((c, c), np.float64)  # off-diagonal mass B[j, l] = P[j, l], j != l
    e = np.empty(c, np.float64)  # row sums of the partly eliminated matrix
    for j in range(c):
        e[j] = exitm[j] if in_r[j] else 1.0
        if not in_r[j]:
            rhs[j, :] = inf_vec
    for t in range(rows.shape[0]):
        j = rows[t]
        if in_r[j] and cols[t] != j:
            b[j, cols[t]] += vals[t]
    piv = np.empty(c, np.float64)
    nk = rhs.shape[1]
    for k in range(c):
        d = e[k]
        for l in range(k + 1, c):
            d += b[k, l]
        piv[k] = d
        for j in range(k + 1, c):
            f = b[j, k]
            if f == 0.0:
                continue
            f /= d
            for l in range(k + 1, c):  # b[j, j] gets junk but is never read:
                b[j, l] += f * b[k, l]  # the diagonal is rebuilt from e at j's turn
            e[j] += f * e[k]
            for h in range(nk):
                rhs[j, h] += f * rhs[k, h]
    x = np.empty_like(rhs)
    for k in range(c - 1, -1, -1):
        for h in range(nk):
            acc = rhs[k, h]
            for l in range(k + 1, c):
                acc += b[k, l] * x[l, h]
            x[k, h] = acc / piv[k]
    return x


@njit(cache=True)
def _m_apply(ptr, idx, val, ex, x, out):
    """out = (I - P) x, written as ex_j x_j + sum_l P_jl (x_j - x_l) (ex = exit mass).

    Never forms 1 - P_jj: in nearly closed components x is nearly constant, the
    differences are small and exact, and the residual keeps its accuracy where
    b - (D - Off) x would drown in rounding (the iterative analogue of GTH)."""
    for j in range(ex.shape[0]):
        xj = x[j]
        acc = ex[j] * xj
        for e in range(ptr[j], ptr[j + 1]):
            acc += val[e] * (xj - x[idx[e]])
        out[j] = acc


@njit(cache=True)
def _dot(a, b):
    # A plain loop: BLAS ddot may wake its thread pool, slow for these sizes.
    acc = 0.0
    for j in range(a.shape[0]):
        acc += a[j] * b[j]
    return acc


@njit(cache=True)
def _bicgstab(ptr, idx, val, ex, diag, b, x, tol, maxiter):
    """Jacobi-preconditioned BiCGSTAB on (I - P) x = b, in place from x. Returns
    whether the recursive residual's max-norm reached tol (False: breakdown or
    maxiter)."""
    c = b.shape[0]
    r = np.empty(c)
    _m_apply(ptr, idx, val, ex, x, r)
    for j in range(c):
        r[j] = b[j] - r[j]
    r0 = r.copy()
    p = np.zeros(c)
    v = np.zeros(c)
    ph = np.empty(c)
    sh = np.empty(c)
    t = np.empty(c)
    rho_old = 1.0
    alpha = 1.0
    omega = 1.0
    for _ in range(maxiter):
        if np.abs(r).max() <= tol:
            return True
        rho = _dot(r0, r)
        if rho == 0.0 or omega == 0.0:
            return False  # breakdown
        beta = (rho / rho_old) * (alpha / omega)
        for j in range(c):
            p[j] = r[j] + beta * (p[j] - omega * v[j])
            ph[j] = p[j] / diag[j]
        _m_apply(ptr, idx, val, ex, ph, v)
        den = _dot(r0, v)
        if den == 0.0:
            return False
        alpha = rho / den
        for j in range(c):
            r[j] -= alpha * v[j]  # r is now s
            x[j] += alpha * ph[j]
        if np.abs(r).max() <= tol:
            return True
        for j in range(c):
            sh[j] = r[j] / diag[j]
        _m_apply(ptr, idx, val, ex, sh, t)
        tt = _dot(t, t)
        omega = _dot(t, r) / tt if tt > 0.0 else 0.0
        for j in range(c):
            x[j] += omega * sh[j]
            r[j] -= omega * t[j]
        rho_old = rho
    return np.abs(r).max() <= tol


@njit(cache=True)
def _residual(ptr, idx, val, ex, b, x, r):
    """r = b - (I - P) x in the difference form of `_m_apply`; returns max |r|."""
    _m_apply(ptr, idx, val, ex, x, r)
    rmax = 0.0
    for j in range(b.shape[0]):
        r[j] = b[j] - r[j]
        rmax = max(rmax, abs(r[j]))
    return rmax


@njit(cache=True)
def _refinement_done(d, x, prev, rel_tol):
    """Iterative refinement stops once the correction (an estimate of the
    remaining error) is below rel_tol * max(1, |x|): 1 = converged, -1 = stalled
    above the 1e-12 target, 0 = go on."""
    dmax = np.abs(d).max() if d.shape[0] else 0.0
    scale = max(1.0, np.abs(x).max() if x.shape[0] else 0.0)
    if dmax <= rel_tol * scale:
        return 1, dmax
    if dmax > 0.5 * prev:  # stalled at rounding level
        return (1 if dmax <= 1e-12 * scale else -1), dmax
    return 0, dmax


@njit(cache=True)
def _iterative_solve(ptr, idx, val, ex, diag, b, x, rel_tol, refinements, maxiter):
    """Iterative refinement of x with BiCGSTAB corrections. Residuals use the
    cancellation-free form, so even in nearly closed components (expected stay
    of millions of turns) they are accurate and the refinement reaches the
    solution to rounding, where b - (D - Off) x would stall ~1e-10 away.
    Returns whether it converged (see `_refinement_done`)."""
    c = b.shape[0]
    r = np.empty(c)
    prev = np.inf
    for _ in range(refinements):
        rmax = _residual(ptr, idx, val, ex, b, x, r)
        if rmax == 0.0:
            return True
        if not np.isfinite(rmax):
            return False
        d = np.zeros(c)
        if not _bicgstab(ptr, idx, val, ex, diag, r, d, 1e-10 * rmax, maxiter):
            return False
        for j in range(c):
            x[j] += d[j]
        status, prev = _refinement_done(d, x, prev, rel_tol)
        if status != 0:
            return status == 1
    return False


@njit(cache=True)
def _component_solve(c, rows, cols, vals, exitm, rhs, in_r, inf_vec, x0, dense_max, iter_max):
    """Solve (I - P) x = rhs on one component: `(x, ok)`.

    Up to `dense_max` states: the exact GTH elimination. Bigger components:
    sparse LU fills in badly on most of them, so Jacobi-
    preconditioned BiCGSTAB inside iterative refinement (see `_iterative_solve`),
    from `x0` when it has c rows.
    ok is False if the iteration did not get there: the caller falls back to
    `_fallback_solve`.
    """
    if c <= dense_max:
        return _dense_solve(c, rows, cols, vals, exitm, rhs, in_r, inf_vec), True
    ptr = np.zeros(c + 1, np.int64)
    for t in range(rows.shape[0]):
        if in_r[rows[t]] and rows[t] != cols[t]:
            ptr[rows[t] + 1] += 1
    for j in range(c):
        ptr[j + 1] += ptr[j]
    pos = ptr[:-1].copy()
    idx = np.empty(ptr[c], np.int64)
    val = np.empty(ptr[c], np.float64)
    ex = np.empty(c, np.float64)
    diag = np.empty(c, np.float64)
    for j in range(c):
        ex[j] = exitm[j] if in_r[j] else 1.0
        diag[j] = ex[j]
        if not in_r[j]:
            rhs[j, :] = inf_vec
    for t in range(rows.shape[0]):
        j = rows[t]
        if in_r[j] and j != cols[t]:
            idx[pos[j]] = cols[t]
            val[pos[j]] = vals[t]
            pos[j] += 1
            diag[j] += vals[t]
    # Where BiCGSTAB crawls (nearly closed components), a component whose fallback is
    # cheap (sparse LU, dense GTH at worst) is better handed to it early.
    budget = min(iter_max, _QUICK_ITER_MAX) if c <= _QUICK_SIZE else iter_max
    sol = np.empty_like(rhs)
    for h in range(rhs.shape[1]):
        b = rhs[:, h].copy()
        x = x0[:, h].copy() if x0.shape[0] == c else b / diag
        if not _iterative_solve(ptr, idx, val, ex, diag, b, x, _ITER_TOL, _REFINEMENTS, budget):
            return sol, False
        sol[:, h] = x
    return sol, True


def _fallback_solve(c, rows, cols, vals, exitm, rhs, in_r, inf_vec) -> np.ndarray:
    """Fallback when the iterative solve of a big component fails (typically a
    nearly closed one, where BiCGSTAB needs thousands of steps): sparse LU of
    I - P, then iterative refinement with the cancellation-free residual,
    which turns LU's ~cond * eps error into rounding-level accuracy as long as
    cond * eps < 1. Where it does not get there (exits below rounding relative
    to the loop mass), the exact dense GTH elimination, up to `_GTH_MAX`
    states (`_GTH_LAST_RESORT` where LU finds I - P singular)."""
    rhs = rhs.copy()
    rhs[~in_r] = inf_vec
    sol, outcome = None, "not tried"
    if _LU_FIRST or c > _GTH_MAX:
        sol, outcome = _sparse_lu_solve(c, rows, cols, vals, exitm, rhs, in_r)
    if outcome == "exact":
        return sol
    if c <= _GTH_MAX or (outcome == "singular" and c <= _GTH_LAST_RESORT):
        _log.debug("sparse LU: %s on a component of %d states; using dense elimination", outcome, c)
        return _dense_solve(c, rows, cols, vals, exitm, rhs, in_r, inf_vec)
    if outcome == "singular":
        raise RuntimeError(f"component of {c} states is numerically closed and too large for dense elimination")
    _log.debug("refinement stalled above 1e-12 on a component of %d states", c)
    return sol


def _sparse_lu_solve(c, rows, cols, vals, exitm, rhs, in_r) -> tuple[np.ndarray | None, str]:
    """(I - P) x = rhs by sparse LU and iterative refinement: (x, "exact"), or
    (x, "stalled") where the refinement stalls above the 1e-12 target, or
    (None, "singular") where LU finds I - P singular."""
    keep = in_r[rows] & (rows != cols)
    off = sp.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=(c, c))
    off.sum_duplicates()
    ex = np.where(in_r, exitm, 1.0)
    try:
        lu = splu((sp.diags(ex + np.asarray(off.sum(axis=1)).ravel(), format="csr") - off).tocsc())
    except RuntimeError:  # exits below rounding relative to the loop mass: only GTH sees them
        return None, "singular"
    ptr, idx, val = off.indptr.astype(np.int64), off.indices.astype(np.int64), off.data.astype(np.float64)
    sol = np.empty_like(rhs)
    r = np.empty(c)
    outcome = "exact"
    for h in range(rhs.shape[1]):
        b = np.ascontiguousarray(rhs[:, h])
        x = lu.solve(b)
        status, prev = 0, np.inf
        for _ in range(_REFINEMENTS):
            if _residual(ptr, idx, val, ex, b, x, r) == 0.0:
                status = 1
                break
            d = lu.solve(r)
            x += d
            status, prev = _refinement_done(d, x, prev, _ITER_TOL)
            if status != 0:
                break
        if status != 1:
            outcome = "stalled"
        sol[:, h] = x
    return sol, outcome


@njit(cache=True)
def _chain_run(
    G, row_w, col_w, comp_ptr, comp_states, comp_of, loc, X, term_vec, inf_vec, reward, no_fixed, start,
    dense_max, iter_max,
):
    """Solve components from `start` on; stop at the first one the iterative
    solver fails on and return its index (the caller uses `_fallback_solve`)."""
    ncomp = comp_ptr.shape[0] - 1
    no_x0 = np.zeros((0, X.shape[1]))
    for ci in range(start, ncomp):
        lo = comp_ptr[ci]
        hi = comp_ptr[ci + 1]
        c = hi - lo
        cs = comp_states[lo:hi]
        for j in range(c):
            loc[cs[j]] = j
        rows, cols, vals, rhs, exitm = _build_system(
            G, row_w, col_w, cs, ci, comp_of, loc, X, term_vec, reward, no_fixed, inf_vec
        )
        in_r = _reach_exit(c, rows, cols, exitm)
        sol, ok = _component_solve(c, rows, cols, vals, exitm, rhs, in_r, inf_vec, no_x0, dense_max, iter_max)
        if not ok:
            return ci
        for j in range(c):
            X[cs[j], :] = sol[j, :]
    return ncomp


def _chain_solve(G, row_w, col_w, comp_ptr, comp_states, comp_of, term_vec, inf_vec, reward, n) -> np.ndarray:
    """X for every state in the listed components, components in list order."""
    k = term_vec.shape[1]
    X = np.zeros((n, k), np.float64)
    loc = np.zeros(n, np.int64)
    no_fixed = np.zeros(n, np.bool_)
    ncomp = comp_ptr.shape[0] - 1
    ci = 0
    while True:
        ci = _chain_run(
            G, row_w, col_w, comp_ptr, comp_states, comp_of, loc, X, term_vec, inf_vec, reward, no_fixed, ci,
            _DENSE_MAX, _ITER_MAX,
        )
        if ci >= ncomp:
            return X
        cs = comp_states[comp_ptr[ci] : comp_ptr[ci + 1]]
        c = cs.shape[0]
        loc[cs] = np.arange(c)
        rows, cols, vals, rhs, exitm = _build_system(
            G, row_w, col_w, cs, ci, comp_of, loc, X, term_vec, reward, no_fixed, inf_vec
        )
        in_r = _reach_exit(c, rows, cols, exitm)
        X[cs] = _fallback_solve(c, rows, cols, vals, exitm, rhs, in_r, inf_vec)
        ci += 1


def _chain_components(G, row_w, col_w, n) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    succ_ptr, succ = successor_kernel(*G[:6], row_w, col_w)
    comp_ptr, comp_states = tarjan(succ_ptr, succ)
    return comp_ptr, comp_states, component_of_kernel(comp_ptr, comp_states, n)


# --------------------------------------------------------------------------
# Best response: the responder's MDP.


@njit(cache=True)
def _n_resp(G, s, resp_is_row):
    row_ptr, col_ptr = G[0], G[1]
    if resp_is_row:
        return row_ptr[s + 1] - row_ptr[s]
    return col_ptr[s + 1] - col_ptr[s]


@njit(cache=True, inline="always")
def _fixed_side(G, s, resp_is_row):
    """(first weight index, action count) of the fixed player at s, the row
    length of s's cell block and its first cell: cell (responder a, fixed f)
    is base + a * nn + f when the responder picks rows, base + f * nn + a
    otherwise."""
    row_ptr, col_ptr, cell_ptr = G[0], G[1], G[2]
    nn = col_ptr[s + 1] - col_ptr[s]
    if resp_is_row:
        return col_ptr[s], nn, nn, cell_ptr[s]
    return row_ptr[s], row_ptr[s + 1] - row_ptr[s], nn, cell_ptr[s]


@njit(cache=True)
def _q(G, s, a, resp_is_row, fixed_w, sign, X):
    """Responder's expected w after action a at s, continuation values X[:, 0]."""
    _r, _c, _k, out_ptr, out_next, out_prob, pay = G
    f0, nf, nn, base = _fixed_side(G, s, resp_is_row)
    total = 0.0
    for f in range(nf):
        wf = fixed_w[f0 + f]
        if wf <= 0.0:
            continue
        k = base + a * nn + f if resp_is_row else base + f * nn + a
        acc = 0.0
        for o in range(out_ptr[k], out_ptr[k + 1]):
            p = out_prob[o]
            if p <= 0.0:
                continue
            t = out_next[o]
            if t < 0:
                acc += p * sign * pay[-1 - t]
            else:
                acc += p * X[t, 0]
        total += wf * acc
    return total


@njit(cache=True)
def _stays(G, s, a, resp_is_row, fixed_w, in_k):
    """Whether action a at s surely leads to a state of K (never to a terminal)."""
    _r, _c, _k, out_ptr, out_next, out_prob, _pay = G
    f0, nf, nn, base = _fixed_side(G, s, resp_is_row)
    for f in range(nf):
        if fixed_w[f0 + f] <= 0.0:
            continue
        k = base + a * nn + f if resp_is_row else base + f * nn + a
        for o in range(out_ptr[k], out_ptr[k + 1]):
            if out_prob[o] <= 0.0:
                continue
            t = out_next[o]
            if t < 0 or not in_k[t]:
                return False
    return True


@njit(cache=True)
def _check_k(G, s, resp_is_row, fixed_w, in_k, witness):
    for a in range(_n_resp(G, s, resp_is_row)):
        if _stays(G, s, a, resp_is_row, fixed_w, in_k):
            witness[s] = a
            return True
    return False


@njit(cache=True)
def _k_component(G, cs, ci, comp_of, loc, succ_ptr, succ, resp_is_row, fixed_w, in_k, witness):
    """Greatest fixed point K restricted to one component (later components'
    membership is final). Worklist peeling: a removal re-checks predecessors."""
    c = cs.shape[0]
    for j in range(c):
        in_k[cs[j]] = True
    cnt = np.zeros(c + 1, np.int64)
    for j in range(c):
        s = cs[j]
        for e in range(succ_ptr[s], succ_ptr[s + 1]):
            t = succ[e]
            if comp_of[t] == ci:
                cnt[loc[t] + 1] += 1
    for j in range(c):
        cnt[j + 1] += cnt[j]
    pos = cnt[:-1].copy()
    pred = np.empty(cnt[c], np.int64)
    for j in range(c):
        s = cs[j]
        for e in range(succ_ptr[s], succ_ptr[s + 1]):
            t = succ[e]
            if comp_of[t] == ci:
                lt = loc[t]
                pred[pos[lt]] = j
                pos[lt] += 1
    queue = np.empty(c, np.int64)  # circular; each state queued at most once at a time
    in_q = np.ones(c, np.bool_)
    for j in range(c):
        queue[j] = j
    qh = 0
    size = c
    while size > 0:
        j = queue[qh]
        qh = (qh + 1) % c
        size -= 1
        in_q[j] = False
        s = cs[j]
        if not in_k[s]:
            continue
        if _check_k(G, s, resp_is_row, fixed_w, in_k, witness):
            continue
        in_k[s] = False
        for e in range(cnt[j], cnt[j + 1]):
            i = pred[e]
            if in_k[cs[i]] and not in_q[i]:
                in_q[i] = True
                queue[(qh + size) % c] = i
                size += 1


@njit(cache=True)
def _vi_sweeps(G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, max_sweeps, tol):
    """Gauss-Seidel value iteration (from below): only a warm start."""
    for _ in range(max_sweeps):
        delta = 0.0
        for j in range(cs.shape[0]):
            s = cs[j]
            best = w_u if in_k[s] else -np.inf
            for a in range(_n_resp(G, s, resp_is_row)):
                q = _q(G, s, a, resp_is_row, fixed_w, sign, X)
                if q > best:
                    best = q
            d = abs(best - X[s, 0])
            if d > delta:
                delta = d
            X[s, 0] = best
        if delta < tol:
            return


@njit(cache=True)
def _set_choice(G, s, a, resp_is_row, choice, resp_w):
    p0 = G[0][s] if resp_is_row else G[1][s]
    for i in range(_n_resp(G, s, resp_is_row)):
        resp_w[p0 + i] = 0.0
    resp_w[p0 + a] = 1.0
    choice[s] = a


@njit(cache=True)
def _argmax_q(G, s, resp_is_row, fixed_w, sign, X):
    best = -np.inf
    best_a = 0
    for a in range(_n_resp(G, s, resp_is_row)):
        q = _q(G, s, a, resp_is_row, fixed_w, sign, X)
        if q > best:
            best = q
            best_a = a
    return best, best_a


@njit(cache=True)
def _greedy(G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, choice, stall, resp_w, eps):
    for j in range(cs.shape[0]):
        s = cs[j]
        best, best_a = _argmax_q(G, s, resp_is_row, fixed_w, sign, X)
        _set_choice(G, s, best_a, resp_is_row, choice, resp_w)
        # Ties go to stalling: it is an exit, so it never creates a dead loop.
        stall[s] = in_k[s] and w_u >= best - eps


@njit(cache=True)
def _improve(G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, choice, stall, resp_w, eps):
    """One policy-improvement sweep on the evaluated X; switch only for a gain > eps."""
    changes = 0
    for j in range(cs.shape[0]):
        s = cs[j]
        cur = w_u if stall[s] else _q(G, s, choice[s], resp_is_row, fixed_w, sign, X)
        best, best_a = _argmax_q(G, s, resp_is_row, fixed_w, sign, X)
        if in_k[s] and w_u >= best:
            if w_u > cur + eps:
                stall[s] = True
                changes += 1
        elif best > cur + eps:
            stall[s] = False
            _set_choice(G, s, best_a, resp_is_row, choice, resp_w)
            changes += 1
    return changes


@njit(cache=True)
def _pi_eps(eps, iteration):
    # Evaluation noise (iterative solves of big, slow-mixing components) could
    # make switches between near-equal actions cycle; widening the threshold
    # tenfold every 100 rounds guarantees termination. Normally PI ends in < 20.
    return eps * 10.0 ** (iteration // 100)


@njit(cache=True)
def _has_self_loop(succ_ptr, succ, s):
    for e in range(succ_ptr[s], succ_ptr[s + 1]):
        if succ[e] == s:
            return True
    return False


@njit(cache=True)
def _br_run(
    G, resp_is_row, fixed_w, sign, w_u, worst, comp_ptr, comp_states, comp_of, loc, succ_ptr, succ,
    in_k, witness, X, choice, stall, resp_w, term_vec, start, dense_max, iter_max, eps, max_sweeps, max_iter, warm,
):
    """Best response on components from `start` on; stop at the first one the
    iterative solver fails on and return its index (the caller redoes it with
    `_fallback_solve`)."""
    ncomp = comp_ptr.shape[0] - 1
    no_reward = np.zeros((0, 1), np.float64)
    inf_vec = np.full(1, worst)
    stall_val = np.full(1, w_u)
    for ci in range(start, ncomp):
        lo = comp_ptr[ci]
        hi = comp_ptr[ci + 1]
        c = hi - lo
        cs = comp_states[lo:hi]
        if c == 1 and not _has_self_loop(succ_ptr, succ, cs[0]):
            # Acyclic state (the common case): one Bellman backup is exact.
            s = cs[0]
            in_k[s] = _check_k(G, s, resp_is_row, fixed_w, in_k, witness)
            best, best_a = _argmax_q(G, s, resp_is_row, fixed_w, sign, X)
            if in_k[s] and w_u >= best:
                stall[s] = True
                choice[s] = witness[s]
                X[s, 0] = w_u
            else:
                choice[s] = best_a
                X[s, 0] = best
            continue
        for j in range(c):
            loc[cs[j]] = j
            X[cs[j], 0] = warm[cs[j]] if warm.shape[0] else worst
        _k_component(G, cs, ci, comp_of, loc, succ_ptr, succ, resp_is_row, fixed_w, in_k, witness)
        if c > _VI_MIN_SIZE and not warm.shape[0]:  # tiny components: a sweep costs about as much as an exact solve
            _vi_sweeps(G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, max_sweeps, _VI_TOL)
        _greedy(G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, choice, stall, resp_w, eps)
        converged = False
        for it in range(max_iter):
            if resp_is_row:
                rows, cols, vals, rhs, exitm = _build_system(
                    G, resp_w, fixed_w, cs, ci, comp_of, loc, X, term_vec, no_reward, stall, stall_val
                )
            else:
                rows, cols, vals, rhs, exitm = _build_system(
                    G, fixed_w, resp_w, cs, ci, comp_of, loc, X, term_vec, no_reward, stall, stall_val
                )
            in_r = _reach_exit(c, rows, cols, exitm)
            x0 = np.empty((c, 1))
            for j in range(c):
                x0[j, 0] = X[cs[j], 0]  # warm start: the previous policy's values
            sol, ok = _component_solve(c, rows, cols, vals, exitm, rhs, in_r, inf_vec, x0, dense_max, iter_max)
            if not ok:
                return ci
            for j in range(c):
                X[cs[j], 0] = sol[j, 0]
            if _improve(G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, choice, stall, resp_w, _pi_eps(eps, it)) == 0:
                converged = True
                break
        if not converged:
            raise RuntimeError("policy iteration did not converge")
        for j in range(c):
            if stall[cs[j]]:
                choice[cs[j]] = witness[cs[j]]
    return ncomp


def _br_big_component(
    G, resp_is_row, fixed_w, sign, w_u, worst, ci, comp_ptr, comp_states, comp_of, loc, succ_ptr, succ,
    in_k, witness, X, choice, stall, resp_w, term_vec, eps,
) -> None:
    """The same steps as `_br_run` for one component, with `_fallback_solve`
    (when the iterative solve failed on it)."""
    cs = comp_states[comp_ptr[ci] : comp_ptr[ci + 1]]
    c = cs.shape[0]
    loc[cs] = np.arange(c)
    X[cs, 0] = worst
    _k_component(G, cs, ci, comp_of, loc, succ_ptr, succ, resp_is_row, fixed_w, in_k, witness)
    _vi_sweeps(G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, _VI_SWEEPS, _VI_TOL)
    _greedy(G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, choice, stall, resp_w, eps)
    no_reward = np.zeros((0, 1))
    inf_vec = np.full(1, worst)
    stall_val = np.full(1, w_u)
    row_w, col_w = (resp_w, fixed_w) if resp_is_row else (fixed_w, resp_w)
    for it in range(_MAX_POLICY_ITERATIONS):
        rows, cols, vals, rhs, exitm = _build_system(
            G, row_w, col_w, cs, ci, comp_of, loc, X, term_vec, no_reward, stall, stall_val
        )
        in_r = _reach_exit(c, rows, cols, exitm)
        X[cs] = _fallback_solve(c, rows, cols, vals, exitm, rhs, in_r, inf_vec)
        if _improve(G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, choice, stall, resp_w, _pi_eps(eps, it)) == 0:
            break
    else:
        raise RuntimeError("policy iteration did not converge")
    stalled = cs[stall[cs]]
    choice[stalled] = witness[stalled]


def best_response(
    graph: GameGraph, seat: int, strategy: np.ndarray, guess: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact best response to the stationary strategy of the player at `seat`.

    Returns `(values, actions)`: `values[i]` is the optimal value (P1's payoff)
    the other player achieves from state i, and `actions[i]` the local index of
    the responder's action at state i in an optimal pure stationary policy
    (into `col_actions[col_ptr[i]:]` when seat == 0, `row_actions[row_ptr[i]:]`
    when seat == 1). See the module docstring for the method.

    `guess` (P1's payoff per state), when given, is where each cyclic
    component's value iteration starts instead of the worst payoff: a good
    guess (the guarantee the strategy was built to have) leaves policy
    iteration one exact evaluation to confirm it. The answer does not depend
    on the guess, only the time it takes.
    """
    if seat not in (0, 1):
        raise ValueError("seat must be 0 (P1) or 1 (P2)")
    G = graph.kernel_arrays()
    n = graph.num_states
    resp_is_row = seat == 1
    fixed_w = _check_strategy(strategy, G[0] if seat == 0 else G[1], "P1" if seat == 0 else "P2")
    sign = 1.0 if resp_is_row else -1.0  # responder maximises w = sign * payoff
    pay = G[6]
    w_u = sign * float(graph.unending_payoff)
    worst = float(min(w_u, (sign * pay).min())) if pay.size else w_u
    scale = max(1.0, float(np.abs(pay).max()) if pay.size else 0.0, abs(w_u))
    eps = _EPS * scale
    term_vec = np.ascontiguousarray((sign * pay).reshape(-1, 1))

    ones = np.ones(int((G[0] if resp_is_row else G[1])[-1]), np.float64)  # every responder action counts
    row_w, col_w = (ones, fixed_w) if resp_is_row else (fixed_w, ones)
    succ_ptr, succ = successor_kernel(*G[:6], row_w, col_w)
    comp_ptr, comp_states = tarjan(succ_ptr, succ)
    comp_of = component_of_kernel(comp_ptr, comp_states, n)

    X = np.zeros((n, 1), np.float64)
    loc = np.zeros(n, np.int64)
    in_k = np.zeros(n, np.bool_)
    witness = np.zeros(n, np.int64)
    choice = np.zeros(n, np.int64)
    stall = np.zeros(n, np.bool_)
    resp_w = np.zeros_like(ones)
    ncomp = comp_ptr.shape[0] - 1
    warm = np.zeros(0) if guess is None else sign * np.ascontiguousarray(guess, np.float64)
    ci = 0
    while True:
        ci = _br_run(
            G, resp_is_row, fixed_w, sign, w_u, worst, comp_ptr, comp_states, comp_of, loc, succ_ptr, succ,
            in_k, witness, X, choice, stall, resp_w, term_vec, ci, _DENSE_MAX, _ITER_MAX, eps, _VI_SWEEPS,
            _MAX_POLICY_ITERATIONS, warm,
        )
        if ci >= ncomp:
            break
        _br_big_component(
            G, resp_is_row, fixed_w, sign, w_u, worst, ci, comp_ptr, comp_states, comp_of, loc, succ_ptr, succ,
            in_k, witness, X, choice, stall, resp_w, term_vec, eps,
        )
        ci += 1
    return sign * X[:, 0] + 0.0, choice  # + 0.0: no -0.0 from the sign flip


def best_response_values(
    graph: GameGraph, seat: int, strategy: np.ndarray, guess: np.ndarray | None = None,
) -> np.ndarray:
    """Optimal value (P1's payoff) of the player opposite `seat` against `strategy`, per state.

    seat 0: P1 plays `strategy` (aligned with `row_actions`) and P2 minimises,
    so this is what the strategy guarantees P1. seat 1: P2 plays it (aligned
    with `col_actions`) and P1 maximises.
    """
    return best_response(graph, seat, strategy, guess)[0]


def chain_values(
    graph: GameGraph, row_strategy: np.ndarray, col_strategy: np.ndarray, terminal_payoffs: np.ndarray | None = None,
) -> np.ndarray:
    """P1's expected payoff per state when both players play the given
    stationary strategies: the Markov chain they make, solved exactly
    (component by component), play that never ends paying the unending payoff.
    Where neither side has a choice this is also each side's guarantee. With
    `terminal_payoffs` (terminals x k), k payoff columns of the same chain at
    once, shape (n, k); else the graph's own payoffs, shape (n,)."""
    G = graph.kernel_arrays()
    n = graph.num_states
    row_w = _check_strategy(row_strategy, G[0], "P1")
    col_w = _check_strategy(col_strategy, G[1], "P2")
    comp_ptr, comp_states, comp_of = _chain_components(G, row_w, col_w, n)
    payoff = np.ascontiguousarray(G[6] if terminal_payoffs is None else terminal_payoffs, np.float64)
    payoff = payoff.reshape(payoff.shape[0], -1)
    if payoff.shape[0] != G[6].shape[0]:
        raise ValueError(f"terminal_payoffs needs {G[6].shape[0]} rows, got {payoff.shape[0]}")
    unending = np.full(payoff.shape[1], float(graph.unending_payoff))
    X = _chain_solve(G, row_w, col_w, comp_ptr, comp_states, comp_of, payoff, unending, np.zeros((0, payoff.shape[1])), n)
    return X[:, 0].copy() if terminal_payoffs is None else X


def pure_strategy(graph: GameGraph, seat: int, actions: np.ndarray) -> np.ndarray:
    """The stationary strategy array of a pure policy (`actions[i]` local index at state i)."""
    ptr = np.asarray(graph.row_ptr if seat == 0 else graph.col_ptr, np.int64)
    out = np.zeros(int(ptr[-1]), np.float64)
    out[ptr[:-1] + np.asarray(actions, np.int64)] = 1.0
    return out


# --------------------------------------------------------------------------
# Certificates.


@dataclass(frozen=True, eq=False)
class Certificate:
    """What a strategy pair provably guarantees, per state (P1's payoff).

    `p1_guarantee <= true value <= p2_guarantee`, so `gap` >= 0 up to rounding
    and bounds how far either strategy can be from optimal.
    """

    p1_guarantee: np.ndarray  # P1's strategy against P2's best response
    p2_guarantee: np.ndarray  # P2's strategy against P1's best response
    exploitability: np.ndarray  # max(values - p1_guarantee, p2_guarantee - values), >= 0
    max_exploitability: float
    gap: np.ndarray  # p2_guarantee - p1_guarantee

    @property
    def min_gap(self) -> float:
        return float(self.gap.min()) if self.gap.size else 0.0

    @property
    def max_gap(self) -> float:
        return float(self.gap.max()) if self.gap.size else 0.0


def certify(graph: GameGraph, values: np.ndarray, row_strategy: np.ndarray, col_strategy: np.ndarray) -> Certificate:
    """Exact guarantees of both strategies and the exploitability of the claimed `values`."""
    values = np.asarray(values, np.float64)
    p1 = best_response_values(graph, 0, row_strategy)
    p2 = best_response_values(graph, 1, col_strategy)
    expl = np.maximum(np.maximum(values - p1, p2 - values), 0.0)
    return Certificate(
        p1_guarantee=p1,
        p2_guarantee=p2,
        exploitability=expl,
        max_exploitability=float(expl.max()) if expl.size else 0.0,
        gap=p2 - p1,
    )


# --------------------------------------------------------------------------
# Bellman residual of claimed values.

def bellman_residual(
    graph: GameGraph,
    values: np.ndarray,
    solve: Callable[[np.ndarray], float | tuple] | None = None,
) -> np.ndarray:
    """|value of the stage matrix game built from `values` - values|, per state.

    `solve(A)` returns the value of the matrix game A (row player maximises),
    or a tuple starting with it. Without it, `solver.core.stage.matrix_game_kernel`
    is used (compiled loop over all states).
    """
    values = np.ascontiguousarray(values, np.float64)
    if solve is None:
        return compiled_bellman_residual(graph, values)
    out = np.empty(graph.num_states, np.float64)
    for i in range(graph.num_states):
        res = solve(graph.stage_matrix(i, values))
        val = res[0] if isinstance(res, tuple) else res
        out[i] = abs(float(val) - values[i])
    return out


# --------------------------------------------------------------------------
# Outcome distribution and game length of a strategy pair.


def outcome_probabilities(
    graph: GameGraph, row_strategy: np.ndarray, col_strategy: np.ndarray,
    terminal_outcomes: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per start state: probability of ending in each terminal outcome, shape (n, T),
    and of never ending, shape (n,), under the two stationary strategies.

    With `terminal_outcomes` (one row per terminal of `graph`, K + 1 columns:
    K outcomes, then never ending), reaching a terminal counts as that row's
    distribution instead (a cut-out part of a game, whose exits lead to states
    with known outcome probabilities); the result then has K columns."""
    terminal, unending, _turns = outcomes_and_ending_turns(graph, row_strategy, col_strategy, terminal_outcomes)
    return terminal, unending


def outcomes_and_ending_turns(
    graph: GameGraph, row_strategy: np.ndarray, col_strategy: np.ndarray,
    terminal_outcomes: np.ndarray | None = None, terminal_turns: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """`outcome_probabilities`, and given `terminal_turns` also each state's
    ending turns, E[T 1{the game ends}] (T the turns played
    until it ends): divided by the probability of ending, the expected length
    of the games that end. `terminal_turns` (one per terminal of `graph`, 0 for
    a real end) is what reaching each terminal adds beyond its turn: a cut-out
    part's exits pay the ending turns of the states they lead to."""
    G = graph.kernel_arrays()
    n = graph.num_states
    row_w = _check_strategy(row_strategy, G[0], "P1")
    col_w = _check_strategy(col_strategy, G[1], "P2")
    T = G[6].shape[0]
    if terminal_outcomes is None:
        term_vec = np.zeros((T, T + 1))
        term_vec[np.arange(T), np.arange(T)] = 1.0
    else:
        term_vec = np.ascontiguousarray(terminal_outcomes, np.float64)
        if term_vec.ndim != 2 or term_vec.shape[0] != T:
            raise ValueError(f"terminal_outcomes needs {T} rows, got shape {term_vec.shape}")
    K = term_vec.shape[1] - 1
    comp_ptr, comp_states, comp_of = _chain_components(G, row_w, col_w, n)
    inf_vec = np.zeros(K + 1)
    inf_vec[K] = 1.0
    X = _chain_solve(G, row_w, col_w, comp_ptr, comp_states, comp_of, term_vec, inf_vec, np.zeros((0, K + 1)), n)
    if terminal_turns is None:
        return X[:, :K].copy(), X[:, K].copy(), None
    turns_vec = np.ascontiguousarray(terminal_turns, np.float64).reshape(-1, 1)
    if turns_vec.shape[0] != T:
        raise ValueError(f"terminal_turns needs {T} entries, got {turns_vec.shape[0]}")
    # h(s) = P(end | s) + sum_s' P(s, s') h(s') + sum_exits P(s, e) h(e): the turn just
    # played counts once for every way of ending, and play that never ends adds nothing.
    ending = np.ascontiguousarray(X[:, :K].sum(axis=1).reshape(-1, 1))
    H = _chain_solve(G, row_w, col_w, comp_ptr, comp_states, comp_of, turns_vec, np.zeros(1), ending, n)
    return X[:, :K].copy(), X[:, K].copy(), H[:, 0].copy()


@njit(cache=True)
def _reachable(G, row_w, col_w, start):
    row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, _pay = G
    n = row_ptr.shape[0] - 1
    seen = np.zeros(n, np.bool_)
    order = np.empty(n, np.int64)
    order[0] = start
    seen[start] = True
    qt = 1
    qh = 0
    while qh < qt:
        s = order[qh]
        qh += 1
        r0 = row_ptr[s]
        c0 = col_ptr[s]
        nn = col_ptr[s + 1] - c0
        for r in range(row_ptr[s + 1] - r0):
            if row_w[r0 + r] <= 0.0:
                continue
            for c in range(nn):
                if col_w[c0 + c] <= 0.0:
                    continue
                k = cell_ptr[s] + r * nn + c
                for o in range(out_ptr[k], out_ptr[k + 1]):
                    t = out_next[o]
                    if t >= 0 and out_prob[o] > 0.0 and not seen[t]:
                        seen[t] = True
                        order[qt] = t
                        qt += 1
    return order[:qt].copy()


@njit(cache=True)
def _merged_chain(G, row_w, col_w, reach, loc):
    """Transition matrix of the pair on the reachable states (local CSR, merged
    duplicates) and each state's probability of ending this turn."""
    row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, _pay = G
    m_states = reach.shape[0]
    cap = 0
    for j in range(m_states):
        s = reach[j]
        cap += out_ptr[cell_ptr[s + 1]] - out_ptr[cell_ptr[s]]
    ptr = np.zeros(m_states + 1, np.int64)
    idx = np.empty(cap, np.int64)
    data = np.empty(cap, np.float64)
    term = np.zeros(m_states, np.float64)
    slot = np.full(m_states, -1, np.int64)  # slot[t] = position of t in the current row
    nnz = 0
    for j in range(m_states):
        s = reach[j]
        row_start = nnz
        r0 = row_ptr[s]
        c0 = col_ptr[s]
        nn = col_ptr[s + 1] - c0
        for r in range(row_ptr[s + 1] - r0):
            wr = row_w[r0 + r]
            if wr <= 0.0:
                continue
            for c in range(nn):
                wc = col_w[c0 + c]
                if wc <= 0.0:
                    continue
                k = cell_ptr[s] + r * nn + c
                for o in range(out_ptr[k], out_ptr[k + 1]):
                    p = out_prob[o]
                    if p <= 0.0:
                        continue
                    q = wr * wc * p
                    t = out_next[o]
                    if t < 0:
                        term[j] += q
                        continue
                    lt = loc[t]
                    if slot[lt] >= row_start:
                        data[slot[lt]] += q
                    else:
                        slot[lt] = nnz
                        idx[nnz] = lt
                        data[nnz] = q
                        nnz += 1
        ptr[j + 1] = nnz
    return ptr, idx[:nnz].copy(), data[:nnz].copy(), term


def expected_length_and_distribution(
    graph: GameGraph, row_strategy: np.ndarray, col_strategy: np.ndarray, start: int, max_turns: int
) -> tuple[float, np.ndarray]:
    """Game length from state index `start` under the two strategies.

    Returns `(expected_turns_given_end, pmf)`: `pmf[t - 1]` is the probability
    that the game ends at turn t (t = 1..max_turns); the expectation is exact
    (linear solves): E[T | the game ends], nan if it never ends.
    """
    G, row_w, col_w, reach, (ptr, idx, data, term) = _reachable_chain(graph, row_strategy, col_strategy, start)
    n = graph.num_states
    # Exact: p(s) = P(end | s); h(s) = E[T 1{end} | s] = p(s) + sum_s' P(s, s') h(s').
    comp_ptr, local_states = tarjan(ptr, idx)
    comp_states = reach[local_states]
    comp_of = component_of_kernel(comp_ptr, comp_states, n)
    T = G[6].shape[0]
    zero = np.zeros(1)
    p = _chain_solve(G, row_w, col_w, comp_ptr, comp_states, comp_of, np.ones((T, 1)), zero, np.zeros((0, 1)), n)
    h = _chain_solve(G, row_w, col_w, comp_ptr, comp_states, comp_of, np.zeros((T, 1)), zero, p, n)
    p_end = p[start, 0]
    expected = float(h[start, 0] / p_end) if p_end > 0 else float("nan")
    return expected, _propagate(ptr, idx, data, term, int(max_turns))


def length_distribution(
    graph: GameGraph, row_strategy: np.ndarray, col_strategy: np.ndarray, start: int, max_turns: int
) -> np.ndarray:
    """`pmf[t - 1]`: the probability that the game ends at turn t (t = 1..max_turns)
    from state index `start` under the two strategies; the distribution half of
    `expected_length_and_distribution`, without its linear solves."""
    _G, _row_w, _col_w, _reach, (ptr, idx, data, term) = _reachable_chain(graph, row_strategy, col_strategy, start)
    return _propagate(ptr, idx, data, term, int(max_turns))


def _reachable_chain(graph: GameGraph, row_strategy: np.ndarray, col_strategy: np.ndarray, start: int) -> tuple:
    """The kernel arrays, both strategies' weights, the states the pair reaches
    from `start` (it first) and the chain on them (`_merged_chain`)."""
    G = graph.kernel_arrays()
    n = graph.num_states
    if not 0 <= start < n:
        raise IndexError(start)
    row_w = _check_strategy(row_strategy, G[0], "P1")
    col_w = _check_strategy(col_strategy, G[1], "P2")
    reach = _reachable(G, row_w, col_w, int(start))
    loc = np.full(n, -1, np.int64)
    loc[reach] = np.arange(reach.shape[0])
    return G, row_w, col_w, reach, _merged_chain(G, row_w, col_w, reach, loc)


@njit(cache=True)
def _propagate(ptr, idx, data, term, max_turns):
    """pmf[t-1] = P(end at turn t) from local state 0: the distribution (a row
    vector) times P, turn by turn, pushing only from states holding mass (few
    in the early turns)."""
    size = ptr.shape[0] - 1
    dist = np.zeros(size)
    nxt = np.zeros(size)
    dist[0] = 1.0
    pmf = np.zeros(max_turns)
    for t in range(max_turns):
        ended = 0.0
        for j in range(size):
            mass = dist[j]
            if mass == 0.0:
                continue
            dist[j] = 0.0
            ended += mass * term[j]
            for e in range(ptr[j], ptr[j + 1]):
                nxt[idx[e]] += mass * data[e]
        pmf[t] = ended
        dist, nxt = nxt, dist
    return pmf
