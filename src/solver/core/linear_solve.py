"""Exact linear solves of the absorbing Markov chain two stationary strategies make.

A chain is solved component by component in SCC order (successor components
first), each component's system (I - P) x = b with everything leaving it
folded into b (`build_system`); states that can never leave get `inf_vec`
(what play that never ends is worth).

Components of up to 64 states by GTH-style elimination (no pivoting; pivots
are sums of exit and off-diagonal mass, never 1 - p differences, so even
nearly closed components are accurate to rounding). In bigger ones the
states with at most one successor in the component are eliminated first, the
same way and without fill-in (`elimination`): 4,921 of the 8,541 states of
a best response's largest component on the printed board at health 1. The
long runs of them are what made the iterative solve crawl there (2.6 ms
instead of 14.5). What is left (sparse LU fills in badly
on most of it) by iterative refinement with
Jacobi-preconditioned BiCGSTAB corrections and residuals in the
cancellation-free form ex_j x_j + sum_l P_jl (x_j - x_l), until corrections
are below 1e-14; if that fails (nearly closed components, where BiCGSTAB
crawls), sparse LU plus the same refinement (milliseconds on those sparse,
chain-like components), and dense GTH up to 4096 states where the refinement
does not reach rounding. Most components are single acyclic states: one exact
Bellman backup.

`best_response` solves its policies' chains with the same kernels; the chain
of a strategy pair is `chain_solve`.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.sparse.linalg import splu

from .components import component_of_kernel, successor_kernel, tarjan
from .elimination import back_substitute, eliminate

_log = logging.getLogger(__name__)

# Read when a solve starts (not compiled in): `best_response` reads them from here too.
DENSE_MAX = 64  # components up to this size: exact dense elimination; bigger: iterative
ITER_MAX = 5000  # BiCGSTAB iterations of one refinement step at most ...
_QUICK_ITER_MAX = 300  # ... or this many in components small enough for the fallback to be cheap:
_QUICK_SIZE = 65536  # states (sparse LU's fill-in on bigger components of these games is unmeasured)
_ITER_TOL = 1e-14  # iterative refinement of big components stops at corrections below this (x max(1, |x|)) ...
_REFINEMENTS = 8  # ... or after this many steps
_LU_FIRST = True  # if BiCGSTAB fails: sparse LU with refinement first (milliseconds where GTH takes a fifth of a second)
_GTH_MAX = 4096  # ... then, where it does not reach rounding, exact dense elimination up to this size (c^2 doubles)
_GTH_LAST_RESORT = 16384  # ... and still up to this size (2 GB) where sparse LU finds I - P singular


def check_strategy(strategy: np.ndarray, ptr: np.ndarray, who: str) -> np.ndarray:
    """`strategy` (one weight per action, segments `ptr`) as contiguous float64,
    each state's weights renormalised to sum to 1; ValueError if its shape is
    wrong, a weight negative or not finite, or a state's sum not 1."""
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
        offsets = np.asarray(ptr, np.int64)
        s = np.maximum(s, 0.0) / np.repeat(sums, offsets[1:] - offsets[:-1])
    return s


# --------------------------------------------------------------------------
# One component's linear system for a Markov chain given by two weight
# vectors: X[s] = reward[s] + sum_terminal q * term_vec[t] + sum_s' P(s, s') X[s'].


@njit(cache=True)
def build_system(G, row_w, col_w, cs, ci, comp_of, loc, X, term_vec, reward, fixed, fixed_val):
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
def reach_exit(c, rows, cols, exitm):
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
        for q in range(k + 1, c):
            d += b[k, q]
        piv[k] = d
        for j in range(k + 1, c):
            f = b[j, k]
            if f == 0.0:
                continue
            f /= d
            for q in range(k + 1, c):  # b[j, j] gets junk but is never read:
                b[j, q] += f * b[k, q]  # the diagonal is rebuilt from e at j's turn
            e[j] += f * e[k]
            for h in range(nk):
                rhs[j, h] += f * rhs[k, h]
    x = np.empty_like(rhs)
    for k in range(c - 1, -1, -1):
        for h in range(nk):
            acc = rhs[k, h]
            for q in range(k + 1, c):
                acc += b[k, q] * x[q, h]
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
def component_solve(c, rows, cols, vals, exitm, rhs, in_r, inf_vec, x0, dense_max, iter_max):
    """Solve (I - P) x = rhs on one component: `(x, ok)`.

    Up to `dense_max` states: the exact GTH elimination. Bigger components:
    first the states with at most one successor in the component are
    eliminated (`elimination`: exact, and often most of the component), then
    what is left, the core, by the GTH elimination if it is that small, else
    (sparse LU fills in badly on most of them) by Jacobi-preconditioned
    BiCGSTAB inside iterative refinement (see `_iterative_solve`), from `x0`
    when it has c rows.
    ok is False if the iteration did not get there: the caller falls back to
    `fallback_solve`.
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
    b = rhs.copy()  # the elimination writes into it: a caller falling back reads `rhs` again
    for j in range(c):
        ex[j] = exitm[j] if in_r[j] else 1.0
        if not in_r[j]:
            b[j, :] = inf_vec
    for t in range(rows.shape[0]):
        j = rows[t]
        if in_r[j] and j != cols[t]:
            idx[pos[j]] = cols[t]
            val[pos[j]] = vals[t]
            pos[j] += 1
    order, target, coeff, const, alive, core = eliminate(c, ptr, idx, val, ex, b)
    sol = np.zeros_like(rhs)
    if order.shape[0] < c and not _core_solve(c, ptr, idx, val, ex, b, alive, core, x0, sol, inf_vec, dense_max, iter_max):
        return sol, False
    back_substitute(order, target, coeff, const, sol)
    return sol, True


@njit(cache=True)
def _core_solve(c, ptr, idx, val, ex, b, alive, core, x0, sol, inf_vec, dense_max, iter_max):
    """Solve the core `eliminate` left (the transitions `alive` between the
    states marked `core`) into those rows of `sol`; False if the iteration
    did not get there."""
    states = np.flatnonzero(core)
    n = states.shape[0]
    local = np.full(c, -1, np.int64)
    local[states] = np.arange(n)
    cptr = np.zeros(n + 1, np.int64)
    for a in range(n):
        j = states[a]
        cptr[a + 1] = cptr[a]
        for e in range(ptr[j], ptr[j + 1]):
            if alive[e]:
                cptr[a + 1] += 1
    cidx = np.empty(cptr[n], np.int64)
    cval = np.empty(cptr[n], np.float64)
    cex = np.empty(n, np.float64)
    diag = np.empty(n, np.float64)
    crhs = np.empty((n, b.shape[1]), np.float64)
    for a in range(n):
        j = states[a]
        cex[a] = ex[j]
        diag[a] = ex[j]
        crhs[a, :] = b[j, :]
        at = cptr[a]
        for e in range(ptr[j], ptr[j + 1]):
            if alive[e]:
                cidx[at] = local[idx[e]]
                cval[at] = val[e]
                diag[a] += val[e]
                at += 1
    if n <= dense_max:
        rows = np.empty(cptr[n], np.int64)
        for a in range(n):
            rows[cptr[a] : cptr[a + 1]] = a
        x = _dense_solve(n, rows, cidx, cval, cex, crhs, np.ones(n, np.bool_), inf_vec)
        for a in range(n):
            sol[states[a], :] = x[a, :]
        return True
    # Where BiCGSTAB crawls (nearly closed components), a component whose fallback is
    # cheap (sparse LU, dense GTH at worst) is better handed to it early.
    budget = min(iter_max, _QUICK_ITER_MAX) if c <= _QUICK_SIZE else iter_max  # c: the whole component's size
    for h in range(b.shape[1]):
        bh = crhs[:, h].copy()
        x = x0[states, h] if x0.shape[0] == c else bh / diag  # both copies
        if not _iterative_solve(cptr, cidx, cval, cex, diag, bh, x, _ITER_TOL, _REFINEMENTS, budget):
            return False
        for a in range(n):
            sol[states[a], h] = x[a]
    return True


def fallback_solve(
    c: int, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, exitm: np.ndarray, rhs: np.ndarray,
    in_r: np.ndarray, inf_vec: np.ndarray,
) -> np.ndarray:
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
        assert sol is not None
        return sol
    if c <= _GTH_MAX or (outcome == "singular" and c <= _GTH_LAST_RESORT):
        _log.debug("sparse LU: %s on a component of %d states; using dense elimination", outcome, c)
        return _dense_solve(c, rows, cols, vals, exitm, rhs, in_r, inf_vec)
    if outcome == "singular":
        raise RuntimeError(f"component of {c} states is numerically closed and too large for dense elimination")
    _log.debug("refinement stalled above 1e-12 on a component of %d states", c)
    assert sol is not None  # sparse LU was tried: the component is past dense elimination's size
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
    solver fails on and return its index (the caller uses `fallback_solve`)."""
    ncomp = comp_ptr.shape[0] - 1
    no_x0 = np.zeros((0, X.shape[1]))
    for ci in range(start, ncomp):
        lo = comp_ptr[ci]
        hi = comp_ptr[ci + 1]
        c = hi - lo
        cs = comp_states[lo:hi]
        for j in range(c):
            loc[cs[j]] = j
        rows, cols, vals, rhs, exitm = build_system(
            G, row_w, col_w, cs, ci, comp_of, loc, X, term_vec, reward, no_fixed, inf_vec
        )
        in_r = reach_exit(c, rows, cols, exitm)
        sol, ok = component_solve(c, rows, cols, vals, exitm, rhs, in_r, inf_vec, no_x0, dense_max, iter_max)
        if not ok:
            return ci
        for j in range(c):
            X[cs[j], :] = sol[j, :]
    return ncomp


def chain_solve(
    G: tuple, row_w: np.ndarray, col_w: np.ndarray, comp_ptr: np.ndarray, comp_states: np.ndarray,
    comp_of: np.ndarray, term_vec: np.ndarray, inf_vec: np.ndarray, reward: np.ndarray, n: int,
) -> np.ndarray:
    """X (n x k) of the chain the weights `row_w` and `col_w` make on the kernel
    arrays `G`: X[s] = reward[s] (if `reward` has rows) + sum over terminals t of
    P(s, t) term_vec[t] + sum_s' P(s, s') X[s'], `inf_vec` where play never
    ends. Solved for every state of the listed components, in list order
    (`chain_components`); the other states' rows stay 0."""
    k = term_vec.shape[1]
    X = np.zeros((n, k), np.float64)
    loc = np.zeros(n, np.int64)
    no_fixed = np.zeros(n, np.bool_)
    ncomp = comp_ptr.shape[0] - 1
    ci = 0
    while True:
        ci = _chain_run(
            G, row_w, col_w, comp_ptr, comp_states, comp_of, loc, X, term_vec, inf_vec, reward, no_fixed, ci,
            DENSE_MAX, ITER_MAX,
        )
        if ci >= ncomp:
            return X
        cs = comp_states[comp_ptr[ci] : comp_ptr[ci + 1]]
        c = cs.shape[0]
        loc[cs] = np.arange(c)
        rows, cols, vals, rhs, exitm = build_system(
            G, row_w, col_w, cs, ci, comp_of, loc, X, term_vec, reward, no_fixed, inf_vec
        )
        in_r = reach_exit(c, rows, cols, exitm)
        X[cs] = fallback_solve(c, rows, cols, vals, exitm, rhs, in_r, inf_vec)
        ci += 1


def chain_components(
    G: tuple, row_w: np.ndarray, col_w: np.ndarray, n: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(comp_ptr, comp_states, comp_of): the chain's strongly connected
    components, successors first, and each state's component."""
    succ_ptr, succ = successor_kernel(*G[:6], row_w, col_w)  # type: ignore[call-arg]  # numba's dispatcher passes the kernel's own arguments
    comp_ptr, comp_states = tarjan(succ_ptr, succ)
    return comp_ptr, comp_states, component_of_kernel(comp_ptr, comp_states, n)

