"""Zero-sum matrix games (the stage games of the stochastic game).

`A` is an m x n payoff matrix to the row player, who maximises; the column
player minimises. Two families of solvers live here:

- readable scipy/HiGHS references (`solve_matrix_game_lp`,
  `solve_matrix_game_tiebreak_lp`), used by tests and as the speed baseline;
- numba kernels (`matrix_game_kernel`, `matrix_game_tiebreak_kernel` and their
  `*_ws` twins that take preallocated buffers) meant to be called from other
  njit code, plus Python wrappers (`solve_matrix_game`,
  `solve_matrix_game_tiebreak`).

The kernels solve every LP in a homogeneous form `max 1^T q  s.t.  M q <= b,
q >= 0` with `b >= 0`, so the slack basis is feasible and no phase 1 is needed:

- game: `M = A'` (A shifted and scaled into [1, 2]), `b = 1`; then
  `y = q / sum(q)`, `value' = 1 / sum(q)` and `x` is the dual (the reduced
  costs of the slacks), also divided by its sum;
- tiebreak (column side): `M = [B'; (A - v - tol) / range(A)]`,
  `b = [1; 0]`, i.e. the substitution `q = y / max_i (B' y)_i` of
  "min max_i (B y)_i over y in the simplex with A y <= v + tol";
  the row side is the same LP for the game (-A^T, -B^T).

Pivoting: Dantzig's rule with Harris's ratio test, switching to Bland's rule
during long runs of degenerate pivots (so it cannot cycle). Every kernel result
is certified with `max_regret` (tiebreak: its guarantee in A) before it is
returned; near-equal payoffs (say 0 vs 1e-9, as value iteration produces) can
make the pivot path ill-conditioned, so a result that misses the certificate
is polished (its final basis rebuilt from the original data and re-optimised)
or re-solved along another pivot path, and `StageSolveError` is raised only
if all of that fails.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import scipy.optimize
from numpy.typing import ArrayLike

__all__ = [
    "BEST_REPLY",
    "MAX_DIM",
    "MatrixGameSolution",
    "StageSolveError",
    "make_workspace",
    "matrix_game_kernel",
    "matrix_game_kernel_ws",
    "matrix_game_tiebreak_kernel",
    "matrix_game_tiebreak_kernel_ws",
    "tiebreak_cap",
    "tiebreak_is_moot",
    "tiebreak_lp_ws",
    "tiebreak_side_ws",
    "max_regret",
    "only_optimal_strategy",
    "reply_shortfall",
    "row_guarantee",
    "col_guarantee",
    "solve_matrix_game",
    "solve_matrix_game_lp",
    "solve_matrix_game_tiebreak",
    "solve_matrix_game_tiebreak_lp",
    "support_game_value_ws",
    "support_masks",
]

MAX_DIM = 16
"""Largest number of actions per player the default workspace is sized for."""


class StageSolveError(RuntimeError):
    """An LP solve did not end in a (certified) optimum."""


@dataclass(frozen=True, eq=False)
class MatrixGameSolution:
    value: float
    row_strategy: np.ndarray  # float64, m, in the simplex
    col_strategy: np.ndarray  # float64, n, in the simplex


def _as_matrix(A: ArrayLike, name: str = "A") -> np.ndarray:
    """A as a C-contiguous float64 matrix; ValueError for empty / non-finite input."""
    M = np.ascontiguousarray(A, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] < 1 or M.shape[1] < 1:
        raise ValueError(f"{name} must be a non-empty 2-D matrix, got shape {M.shape}")
    if not np.all(np.isfinite(M)):
        raise ValueError(f"{name} has non-finite entries")
    return M


# --------------------------------------------------------------------------
# Reference solvers (scipy / HiGHS)
# --------------------------------------------------------------------------
#
# Each player's problem is "pick z in the simplex maximising the guarantee
# t = min_j (z^T G)_j", optionally subject to a floor (z^T H)_j >= h for all j.
# The row player of A uses G = A; the column player uses G = -A^T (minimising
# max_i (A y)_i is maximising min_i (-A y)_i). Variables are (z, t).

# Tighter than HiGHS's 1e-7 defaults: the references are compared at 1e-9.
_HIGHS_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


def _lp_objective(k: int) -> np.ndarray:
    """linprog minimises, so maximise t by minimising -t."""
    c = np.zeros(k + 1)
    c[-1] = -1.0
    return c


def _guarantee_rows(G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """t <= (z^T G)_j for every column j, as  t - (G^T z)_j <= 0."""
    A_ub = np.hstack((-G.T, np.ones((G.shape[1], 1))))
    return A_ub, np.zeros(G.shape[1])


def _floor_rows(H: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """(z^T H)_j >= h for every column j, as  -(H^T z)_j <= -h."""
    A_ub = np.hstack((-H.T, np.zeros((H.shape[1], 1))))
    return A_ub, np.full(H.shape[1], -h)


def _simplex_row(k: int) -> tuple[np.ndarray, np.ndarray]:
    """sum(z) == 1 (t does not take part)."""
    A_eq = np.ones((1, k + 1))
    A_eq[0, -1] = 0.0
    return A_eq, np.ones(1)


def _lp_bounds(k: int) -> list[tuple[float | None, float | None]]:
    """z >= 0, t free."""
    return [(0.0, None)] * k + [(None, None)]


def _best_guarantee(
    G: np.ndarray, H: np.ndarray | None = None, h: float = 0.0
) -> tuple[np.ndarray, float]:
    """(z, t): a distribution z maximising t = min_j (z^T G)_j, s.t. z^T H >= h if H given."""
    k = G.shape[0]
    A_ub, b_ub = _guarantee_rows(G)
    if H is not None:
        F_ub, f_ub = _floor_rows(H, h)
        A_ub, b_ub = np.vstack((A_ub, F_ub)), np.concatenate((b_ub, f_ub))
    A_eq, b_eq = _simplex_row(k)
    res = scipy.optimize.linprog(
        _lp_objective(k),
        A_ub=A_ub,
        b_ub=b_ub,
        A_eq=A_eq,
        b_eq=b_eq,
        bounds=_lp_bounds(k),
        method="highs",
        options=_HIGHS_OPTIONS,
    )
    if res.status != 0 or res.x is None:
        raise StageSolveError(f"linprog failed (status {res.status}): {res.message}")
    # HiGHS may return -1e-17 for a zero; keep the strategy a true distribution.
    z = np.clip(res.x[:k], 0.0, None)
    total = z.sum()
    if not total > 0.0:
        raise StageSolveError("linprog returned an empty strategy")
    return z / total, float(res.x[-1])


def _normalise(M: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(N, lo, span) with M = lo + span * N and N in [0, 1]. Optimal strategies are
    invariant under this map, and HiGHS's absolute tolerances then mean the same
    thing at every scale (1e6-sized payoffs, or ones spanning only 1e-9, fail
    otherwise). HiGHS still drops coefficients below 1e-9, so payoffs that differ
    by ~1e-9 of their range are beyond these references."""
    lo, hi = float(M.min()), float(M.max())
    span = hi - lo if hi > lo else 1.0
    return (M - lo) / span, lo, span


def _solve_normalised(N: np.ndarray) -> MatrixGameSolution:
    x, v_row = _best_guarantee(N)
    y, neg_v_col = _best_guarantee(-N.T)
    v_col = -neg_v_col
    # Duality: both LPs must find the same value; a gap means a bad solve.
    if abs(v_row - v_col) > 1e-9:
        raise StageSolveError(f"duality gap {v_col - v_row:.3g} between the two LPs")
    return MatrixGameSolution(0.5 * (v_row + v_col), x, y)


def solve_matrix_game_lp(A: ArrayLike) -> MatrixGameSolution:
    """Value and optimal strategies of A via two HiGHS LPs (one per player)."""
    N, lo, span = _normalise(_as_matrix(A))
    sol = _solve_normalised(N)
    return MatrixGameSolution(lo + span * sol.value, sol.row_strategy, sol.col_strategy)


def solve_matrix_game_tiebreak_lp(A: ArrayLike, B: ArrayLike, tol: float = 1e-12) -> MatrixGameSolution:
    """Value of A; for each player, of the strategies guaranteeing value(A) within tol,
    one that is best for that player in B (row: max min_j (x^T B)_j; column:
    min max_i (B y)_i)."""
    MA, MB = _as_matrix(A, "A"), _as_matrix(B, "B")
    if MA.shape != MB.shape:
        raise ValueError(f"A and B differ in shape: {MA.shape} vs {MB.shape}")
    if not tol >= 0.0:
        raise ValueError("tol must be >= 0")
    NA, lo, span = _normalise(MA)
    NB, _, _ = _normalise(MB)
    sol = _solve_normalised(NA)
    # The computed value is exact only to round-off, which can exceed a tiny tol
    # and make the floor infeasible; so never demand more than the optimal
    # strategies just found actually guarantee (they are within 1e-9 of it).
    floor = min(sol.value, float((sol.row_strategy @ NA).min())) - tol / span
    cap = max(sol.value, float((NA @ sol.col_strategy).max())) + tol / span
    x, _ = _best_guarantee(NB, NA, floor)
    y, _ = _best_guarantee(-NB.T, -NA.T, -cap)
    return MatrixGameSolution(lo + span * sol.value, x, y)


# --------------------------------------------------------------------------
# Compiled kernels
# --------------------------------------------------------------------------
#
# Tableau layout (rows 0..nc-1 constraints, row nc the objective):
#   columns 0..nv-1 structural variables, nv..nv+nc-1 slacks, rhs = nv+nc.
# The objective row holds reduced costs (negative = improving for a max) and,
# in its rhs column, the objective value. Matrices are normalised to O(1)
# entries before they enter a tableau, so the tolerances below are absolute.
#
# Every result is certified with max_regret (or the tiebreak analogue) before it
# is returned. A failed certificate is almost always round-off picked up on the
# pivot path through ill-conditioned bases (near-equal payoffs, e.g. 0 vs 1e-9);
# the kernels then retry: rebuild the final basis from the original data and
# continue (polish), then other pivot paths; only if all fail do they raise.
#
# Flags are passed to njit callees as loop-derived values, never as literal
# True / False: numba compiles a separate specialisation per literal.

_EPS_OPT = 1e-12  # a reduced cost below -_EPS_OPT still improves
_EPS_PIV = 1e-11  # smaller column entries are treated as zero in the ratio test,
_EPS_PIV_REL = 1e-11  # and so are those below this fraction of the column's largest
_EPS_TIE = 1e-12  # a step this short is degenerate (dual ratio test: a tie)
_EPS_FEAS = 1e-12  # primal slack of the Harris ratio test and of a polished basis
_SADDLE_TOL = 1e-13  # relative to max|A|: accept a pure saddle this close
_CERT_REL = 1e-10  # accepted regret, relative to the range of A ...
_CERT_ABS = 1e-13  # ... plus this much of max|A| for round-off in the check itself
_CERT_LAST_REL = 5e-10  # when every attempt misses _CERT_REL, the best one may pass this
_POLISH_ROUNDS = 3

# Outcomes of one LP attempt.
_OK, _UNBOUNDED, _ITERATION_LIMIT, _NO_STRATEGY, _CERT_FAILED = 0, 1, 2, 3, 4


@numba.njit(cache=True)
def row_guarantee(A: np.ndarray, x: np.ndarray) -> float:
    """What P1's mixed strategy x guarantees in A: min_j (x^T A)_j."""
    m, n = A.shape
    worst = np.inf
    for j in range(n):
        s = 0.0
        for i in range(m):
            s += x[i] * A[i, j]
        worst = min(worst, s)
    return worst


@numba.njit(cache=True)
def col_guarantee(A: np.ndarray, y: np.ndarray) -> float:
    """What P2's mixed strategy y concedes at most in A: max_i (A y)_i."""
    m, n = A.shape
    best = -np.inf
    for i in range(m):
        s = 0.0
        for j in range(n):
            s += A[i, j] * y[j]
        best = max(best, s)
    return best


@numba.njit(cache=True)
def max_regret(A: np.ndarray, x: np.ndarray, y: np.ndarray, value: float) -> float:
    """Largest gain over `value` of a pure deviation by either player:
    max(max_i (A y)_i - value, value - min_j (x^T A)_j). <= eps certifies that
    value is within eps of the game's value and both strategies are eps-optimal."""
    return max(col_guarantee(A, y) - value, value - row_guarantee(A, x))


@numba.njit(cache=True)
def make_workspace(max_dim: int = MAX_DIM) -> tuple[np.ndarray, np.ndarray]:
    """(tableau, basis) scratch buffers for every `*_ws` kernel on games up to
    max_dim x max_dim; reuse them across calls to keep the hot loop allocation-free."""
    return np.empty((2 * max_dim + 1, 3 * max_dim + 1)), np.empty(2 * max_dim + 1, np.int64)


@numba.njit(cache=True)
def _pivot(T: np.ndarray, nc: int, rhs: int, r: int, k: int) -> None:
    inv = 1.0 / T[r, k]
    for j in range(rhs + 1):
        T[r, j] *= inv
    T[r, k] = 1.0
    for i in range(nc + 1):
        if i == r:
            continue
        f = T[i, k]
        if f != 0.0:
            for j in range(rhs + 1):
                T[i, j] -= f * T[r, j]
            T[i, k] = 0.0


@numba.njit(cache=True)
def _simplex_max(T: np.ndarray, basis: np.ndarray, nc: int, rhs: int, randomised: bool) -> int:
    """Primal simplex from a feasible basis; returns _OK, _UNBOUNDED or _ITERATION_LIMIT.

    Entering: Dantzig's rule. Leaving: Harris's ratio test (below). Cycling
    needs an endless run of degenerate pivots, so once a run is longer than nc
    the entering rule changes: Bland's rule (smallest improving index, smallest
    leaving basic index) or, when `randomised`, a pseudo-random improving
    column (a retry path that keeps the largest-pivot choice)."""
    max_iter = 50 * (rhs + 1)
    degenerate_run = 0
    seed = np.uint64(0x9E3779B97F4A7C15)
    for _ in range(max_iter):
        stalled = degenerate_run > nc
        bland = stalled and not randomised
        k = -1
        if stalled and randomised:
            n_improving = 0
            for j in range(rhs):
                if T[nc, j] < -_EPS_OPT:
                    n_improving += 1
            if n_improving > 0:
                # xorshift64: deterministic, so results are reproducible
                seed ^= seed << np.uint64(13)
                seed ^= seed >> np.uint64(7)
                seed ^= seed << np.uint64(17)
                pick = int(seed % np.uint64(n_improving))
                for j in range(rhs):
                    if T[nc, j] < -_EPS_OPT:
                        if pick == 0:
                            k = j
                            break
                        pick -= 1
        else:
            best = -_EPS_OPT
            for j in range(rhs):
                d = T[nc, j]
                if d < best:
                    k = j
                    if bland:
                        break
                    best = d
        if k < 0:
            return _OK
        # Entries tiny next to the column's largest are round-off (or tol-sized
        # coefficients); pivoting on them would blow the tableau up.
        colmax = 0.0
        for i in range(nc):
            colmax = max(colmax, T[i, k])
        threshold = max(_EPS_PIV, _EPS_PIV_REL * colmax)
        # Harris's two-pass ratio test: the step may overshoot a row's bound by
        # at most _EPS_FEAS, and within that slack the leaving row is the one
        # with the largest pivot (Bland: the smallest basic index).
        theta = np.inf
        for i in range(nc):
            a = T[i, k]
            if a > threshold:
                theta = min(theta, (T[i, rhs] + _EPS_FEAS) / a)
        r = -1
        piv = 0.0
        for i in range(nc):
            a = T[i, k]
            if a > threshold and T[i, rhs] <= theta * a:
                if r < 0 or ((basis[i] < basis[r]) if bland else (a > piv)):
                    r, piv = i, a
        if r < 0:
            return _UNBOUNDED
        if T[r, rhs] <= _EPS_TIE * piv:
            degenerate_run += 1
        else:
            degenerate_run = 0
        _pivot(T, nc, rhs, r, k)
        basis[r] = k
        # Harris's test lets rhs dip to -_EPS_FEAS (and ignored sub-threshold
        # entries, a little more): clamp, and leave the rest to the certificate.
        for i in range(nc):
            if T[i, rhs] < 0.0:
                T[i, rhs] = 0.0
    return _ITERATION_LIMIT


@numba.njit(cache=True)
def _reinvert(T: np.ndarray, basis: np.ndarray, nc: int, rhs: int, target: np.ndarray) -> bool:
    """T, basis: a freshly filled slack-basis tableau. Pivot the columns `target`
    into the basis by Gauss-Jordan with partial pivoting (no ratio test): the
    tableau of that basis recomputed from the original data, without the
    round-off the simplex path accumulated. False if the basis is singular."""
    for i in range(nc):
        basis[i] = -1  # row not yet claimed by a target column
    for t in range(nc):
        col = target[t]
        r = -1
        best = 1e-12
        for i in range(nc):
            if basis[i] < 0 and abs(T[i, col]) > best:
                r, best = i, abs(T[i, col])
        if r < 0:
            return False
        _pivot(T, nc, rhs, r, col)
        basis[r] = col
    return True


@numba.njit(cache=True)
def _dual_simplex(T: np.ndarray, basis: np.ndarray, nc: int, rhs: int) -> int:
    """Restore primal feasibility (rhs >= 0) of a reinverted tableau while keeping
    its reduced costs >= 0: the basis the simplex ended in is typically off by
    round-off only, which the simplex's clamping of rhs had hidden."""
    for _ in range(50 * (rhs + 1)):
        r = -1
        worst = -_EPS_FEAS
        for i in range(nc):
            if T[i, rhs] < worst:
                r, worst = i, T[i, rhs]
        if r < 0:
            for i in range(nc):
                T[i, rhs] = max(T[i, rhs], 0.0)
            return _OK
        # Dual ratio test: the entering column keeps every reduced cost >= 0;
        # near-ties go to the largest pivot.
        k = -1
        ratio = np.inf
        piv = 0.0
        for j in range(rhs):
            a = -T[r, j]
            if a > _EPS_PIV:
                t = max(T[nc, j], 0.0) / a
                if t < ratio - _EPS_TIE or (t <= ratio + _EPS_TIE and a > piv):
                    k, piv = j, a
                    ratio = min(ratio, t)
        if k < 0:
            return _NO_STRATEGY  # primal infeasible: cannot happen for these LPs
        _pivot(T, nc, rhs, r, k)
        basis[r] = k
    return _ITERATION_LIMIT


@numba.njit(cache=True)
def _raise_for(code: int) -> None:
    if code == _UNBOUNDED:
        raise StageSolveError("stage LP reported unbounded (numerical breakdown)")
    if code == _ITERATION_LIMIT:
        raise StageSolveError("stage LP hit its iteration limit")
    if code == _NO_STRATEGY:
        raise StageSolveError("stage LP ended without a strategy")
    if code == _CERT_FAILED:
        raise StageSolveError("stage LP solution failed its optimality certificate")


@numba.njit(cache=True)
def _fill_game(A, transpose, lo, rng, T, basis):
    """Tableau of max 1^T q s.t. A' q <= 1 for A' = A (or, when transpose, the
    game -A^T, same strategies swapped) scaled into [1, 2]. Returns (nc, nv)."""
    m, n = A.shape
    if transpose:
        m, n = n, m
    rhs = n + m
    for i in range(m):
        for j in range(n):
            # -A^T scaled into [1, 2] is (max(A) - A[j, i]) / rng + 1.
            a = (lo + rng - A[j, i]) if transpose else (A[i, j] - lo)
            T[i, j] = a / rng + 1.0
        for j in range(n, rhs):
            T[i, j] = 0.0
        T[i, n + i] = 1.0
        T[i, rhs] = 1.0
        basis[i] = n + i
    for j in range(n):
        T[m, j] = -1.0
    for j in range(n, rhs + 1):
        T[m, j] = 0.0
    return m, n


@numba.njit(cache=True)
def _read_game(T, basis, nc, nv, transpose, lo, rng, x, y):
    """(code, value(A)) from an optimal tableau of `_fill_game`; writes x, y:
    y = q / sum(q), x = duals (reduced costs of the slacks) / their sum."""
    if transpose:
        x, y = y, x
    rhs = nv + nc
    for j in range(nv):
        y[j] = 0.0
    for i in range(nc):
        if basis[i] < nv and T[i, rhs] > 0.0:
            y[basis[i]] = T[i, rhs]
    sy = 0.0
    for j in range(nv):
        sy += y[j]
    sx = 0.0
    for i in range(nc):
        x[i] = max(T[nc, nv + i], 0.0)
        sx += x[i]
    if not (sy > 0.0 and sx > 0.0):
        return _NO_STRATEGY, 0.0
    for j in range(nv):
        y[j] /= sy
    for i in range(nc):
        x[i] /= sx
    # sum(q) = 1 / value' = sum(duals) at an optimum; average the round-off.
    v_norm = 2.0 / (sy + sx)
    if transpose:
        # value(-A^T) = (v_norm - 1) * rng + min(-A^T), min(-A^T) = -(lo + rng).
        return _OK, lo + rng - (v_norm - 1.0) * rng
    return _OK, lo + (v_norm - 1.0) * rng


@numba.njit(cache=True)
def matrix_game_kernel_ws(
    A: np.ndarray, x: np.ndarray, y: np.ndarray, T: np.ndarray, basis: np.ndarray
) -> float:
    """Value of A; optimal strategies written into x (len m) and y (len n).

    T and basis are scratch buffers, at least (d+1) x (m+n+1) and d+1 with
    d = max(m, n) (`make_workspace` gives ones that fit every game up to its
    max_dim). Raises StageSolveError if no attempt passes the regret certificate."""
    m, n = A.shape
    if m < 1 or n < 1:
        raise ValueError("empty payoff matrix")
    if x.shape[0] != m or y.shape[0] != n:
        raise ValueError("strategy buffers do not match the matrix shape")
    if T.shape[0] < max(m, n) + 1 or T.shape[1] < n + m + 1 or basis.shape[0] < max(m, n) + 1:
        raise ValueError("workspace too small for this matrix")
    lo = np.inf
    hi = -np.inf
    maxmin = -np.inf
    i_star = 0
    for i in range(m):
        row_min = np.inf
        for j in range(n):
            a = A[i, j]
            if not np.isfinite(a):
                raise ValueError("payoff matrix has non-finite entries")
            row_min = min(row_min, a)
            hi = max(hi, a)
        lo = min(lo, row_min)
        if row_min > maxmin:
            maxmin, i_star = row_min, i
    minmax = np.inf
    j_star = 0
    for j in range(n):
        col_max = -np.inf
        for i in range(m):
            col_max = max(col_max, A[i, j])
        if col_max < minmax:
            minmax, j_star = col_max, j
    scale = max(1.0, max(abs(lo), abs(hi)))

    # Pure saddle point: common in these games and far cheaper than any LP.
    # It also covers 1 x n, m x 1 and constant games.
    if minmax - maxmin <= _SADDLE_TOL * scale:
        for i in range(m):
            x[i] = 0.0
        for j in range(n):
            y[j] = 0.0
        x[i_star] = 1.0
        y[j_star] = 1.0
        return A[i_star, j_star]

    # No saddle point implies m, n >= 2 and hi > lo.
    rng = hi - lo
    cert = _CERT_REL * rng + _CERT_ABS * scale
    code = _OK
    best = np.inf
    best_v = 0.0
    best_x = x  # placeholders (no allocation on the hot path); copies if needed
    best_y = y
    # Pivot paths: the LP of A, that of the transposed game, the randomised
    # anti-cycling rule. A path whose result misses the certificate is polished:
    # its final basis is rebuilt from the original data and re-optimised.
    for path in range(3):
        transpose = path == 1
        nc, nv = _fill_game(A, transpose, lo, rng, T, basis)
        code = _simplex_max(T, basis, nc, nv + nc, path == 2)
        for polish in range(_POLISH_ROUNDS + 1):
            if polish > 0:
                target = basis[:nc].copy()  # rare path: allocation is fine
                _fill_game(A, transpose, lo, rng, T, basis)
                if not _reinvert(T, basis, nc, nv + nc, target):
                    break
                code = _dual_simplex(T, basis, nc, nv + nc)
                if code == _OK:
                    code = _simplex_max(T, basis, nc, nv + nc, False)
            if code != _OK:
                break
            code, v = _read_game(T, basis, nc, nv, transpose, lo, rng, x, y)
            if code != _OK:
                break
            regret = max_regret(A, x, y, v)
            if regret <= cert:
                return v
            code = _CERT_FAILED
            if regret < best:  # rare path: allocations are fine
                best, best_v, best_x, best_y = regret, v, x.copy(), y.copy()
    if best <= _CERT_LAST_REL * rng + _CERT_ABS * scale:
        # (element loops: slice assignment costs numba seconds of compile time)
        for i in range(m):
            x[i] = best_x[i]
        for j in range(n):
            y[j] = best_y[j]
        return best_v
    _raise_for(code)
    return np.nan  # unreachable


@numba.njit(cache=True)
def matrix_game_kernel(A: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(value, x, y) of the zero-sum game A: pure saddle point check, then a dense simplex."""
    m, n = A.shape
    x = np.empty(m)
    y = np.empty(n)
    d = max(m, n)
    T = np.empty((d + 1, m + n + 1))
    basis = np.empty(d + 1, np.int64)
    v = matrix_game_kernel_ws(A, x, y, T, basis)
    return v, x, y


@numba.njit(cache=True)
def _fill_tiebreak(A, B, cap, row_side, T, basis):
    """Tableau for one player's tiebreak LP; returns (nc, nv).

    Column side: min max_i (B y)_i s.t. A y <= cap, solved as
    max 1^T q s.t. B' q <= 1, (A - cap) q / range(A) <= 0 (B' = B scaled into
    [1, 2]; y = q / sum(q)). Row side: the same for the game (-A^T, -B^T),
    i.e. x^T A >= cap."""
    m, n = A.shape
    k, h = (m, n) if row_side else (n, m)  # k own actions, h opponent actions
    amin = np.inf
    amax = -np.inf
    bmin = np.inf
    bmax = -np.inf
    for i in range(m):
        for j in range(n):
            amin = min(amin, A[i, j])
            amax = max(amax, A[i, j])
            bmin = min(bmin, B[i, j])
            bmax = max(bmax, B[i, j])
    ar = amax - amin if amax > amin else 1.0
    br = bmax - bmin if bmax > bmin else 1.0

    # Structural columns first; nc (hence the slack/rhs columns) is known after.
    nc = 0
    for c in range(h):
        for j in range(k):
            b = (bmax - B[j, c]) if row_side else (B[c, j] - bmin)
            T[nc, j] = b / br + 1.0
        nc += 1
    n_b = nc
    for c in range(h):
        binds = False
        for j in range(k):
            a = ((cap - A[j, c]) if row_side else (A[c, j] - cap)) / ar
            T[nc, j] = a
            binds = binds or a > 0.0
        if binds:  # an all-nonpositive row holds for every q >= 0: drop it
            nc += 1
    rhs = k + nc
    for i in range(nc):
        for j in range(k, rhs):
            T[i, j] = 0.0
        T[i, k + i] = 1.0
        T[i, rhs] = 1.0 if i < n_b else 0.0
        basis[i] = k + i
    for j in range(k):
        T[nc, j] = -1.0
    for j in range(k, rhs + 1):
        T[nc, j] = 0.0
    return nc, k


@numba.njit(cache=True)
def _read_tiebreak(A, cap, row_side, T, basis, nc, nv, out):
    """Strategy out = q / sum(q) from an optimal `_fill_tiebreak` tableau.
    Returns (code, by how much its guarantee in A misses cap)."""
    rhs = nv + nc
    for j in range(nv):
        out[j] = 0.0
    for i in range(nc):
        if basis[i] < nv and T[i, rhs] > 0.0:
            out[basis[i]] = T[i, rhs]
    total = 0.0
    for j in range(nv):
        total += out[j]
    # An A-optimal y gives sum(q) = 1 / max(B' y) >= 1/2; far less means breakdown.
    if not total > 0.25:
        return _NO_STRATEGY, np.inf
    for j in range(nv):
        out[j] /= total
    m, n = A.shape
    worst = -np.inf
    for c in range(n if row_side else m):
        s = 0.0
        for j in range(nv):
            s += (-A[j, c] if row_side else A[c, j]) * out[j]
        worst = max(worst, s)
    return _OK, worst - (-cap if row_side else cap)


@numba.njit(cache=True)
def tiebreak_lp_ws(A, B, cap, row_side, out, T, basis):
    """Into `out`: a strategy of one player guaranteeing cap in A, best in B.
    Pivot paths: plain, then the randomised anti-cycling rule; each polished
    (as in `matrix_game_kernel_ws`) while its result misses the certificate."""
    m, n = A.shape
    amin = np.inf
    amax = -np.inf
    for i in range(m):
        for j in range(n):
            amin = min(amin, A[i, j])
            amax = max(amax, A[i, j])
    abs_term = _CERT_ABS * max(1.0, max(abs(amin), abs(amax)))
    cert = _CERT_REL * (amax - amin) + abs_term
    code = _OK
    best = np.inf
    best_out = out  # placeholder (no allocation on the hot path); a copy if needed
    for path in range(2):
        nc, nv = _fill_tiebreak(A, B, cap, row_side, T, basis)
        code = _simplex_max(T, basis, nc, nv + nc, path == 1)
        for polish in range(_POLISH_ROUNDS + 1):
            if polish > 0:
                target = basis[:nc].copy()  # rare path: allocation is fine
                _fill_tiebreak(A, B, cap, row_side, T, basis)
                if not _reinvert(T, basis, nc, nv + nc, target):
                    break
                code = _dual_simplex(T, basis, nc, nv + nc)
                if code == _OK:
                    code = _simplex_max(T, basis, nc, nv + nc, False)
            if code != _OK:
                break
            code, excess = _read_tiebreak(A, cap, row_side, T, basis, nc, nv, out)
            if code != _OK:
                break
            if excess <= cert:
                return
            code = _CERT_FAILED
            if excess < best:
                best, best_out = excess, out.copy()
    if best <= _CERT_LAST_REL * (amax - amin) + abs_term:
        for j in range(best_out.shape[0]):
            out[j] = best_out[j]
        return
    _raise_for(code)


_ALONE_MARGIN = 1e-9  # relative to max|A|: how far below the cap every other action must fall


_SUPPORT = 1e-6  # an opponent's weight above this binds a column (a row) to the value ...
BEST_REPLY = 1e-9  # ... and a row (a column) within this of the value against its strategy may be played
_RANK_PIVOT = 1e-6  # a pivot below this (times the matrix's largest entry) counts as zero: the rank falls short
MOOT_MARGIN = 1e-6
"""How far below the value (above, for P2) every action that no optimal strategy
plays must fall, against the opponent's strategy, for a tie-break to be skipped
where the optimal strategy is unique: a tie-break keeping the value within
`tol` can put at most tol / MOOT_MARGIN of weight there, so skipping it
changes a strategy by no more than `MOOT_WEIGHT` where tol is at most
MOOT_WEIGHT * MOOT_MARGIN (the solver's 1e-12 is)."""
MOOT_WEIGHT = 1e-6


@numba.njit(cache=True)
def reply_shortfall(A: np.ndarray, v: float, x: np.ndarray, y: np.ndarray, k: int, row_side: bool) -> float:
    """How far the side's action k falls short of A's value `v` against the
    opponent's strategy (P1's row k against `y`; P2's column k against `x`,
    short meaning above the value). By complementary slackness no optimal
    strategy plays an action short by more than round-off."""
    reply = 0.0
    if row_side:
        for h in range(A.shape[1]):
            reply += A[k, h] * y[h]
        return v - reply
    for h in range(A.shape[0]):
        reply += x[h] * A[h, k]
    return reply - v


@numba.njit(cache=True)
def only_optimal_strategy(
    A: np.ndarray, v: float, x: np.ndarray, y: np.ndarray, row_side: bool, margin: float = 0.0,
) -> bool:
    """Whether the side's optimal strategy in A is unique, given A's value `v`
    and optimal strategies `x`, `y` (from `matrix_game_kernel_ws`). With
    `margin`, also that every other action falls at least that far short of
    the value against the opponent's strategy (see `MOOT_MARGIN`).

    By complementary slackness every optimal x of P1 plays only rows that
    are best replies to y, (A y)_i = v, and meets the value exactly at every
    column y plays, (x^T A)_j = v (P2's likewise with the roles swapped).
    Where those equations and sum x = 1 leave one solution (full column
    rank), the optimal strategy is unique, and a tie-break among the optimal
    strategies has nothing to choose from. Conservative: rows within
    `BEST_REPLY` of the value count as best replies, only columns played
    with more than `_SUPPORT` bind, and a near-singular system counts as
    leaving a choice."""
    m, n = A.shape
    own, other = (m, n) if row_side else (n, m)
    free = np.empty(own, np.int64)  # the actions an optimal strategy may play
    unknowns = 0
    for k in range(own):
        short = reply_shortfall(A, v, x, y, k, row_side)
        if short <= BEST_REPLY:
            free[unknowns] = k
            unknowns += 1
        elif short < margin:
            return False
    rows = 1
    for h in range(other):
        if (y[h] if row_side else x[h]) > _SUPPORT:
            rows += 1
    if rows < unknowns:
        return False
    M = np.ones((rows, unknowns))  # the last row: the weights sum to 1
    r = 0
    for h in range(other):
        if (y[h] if row_side else x[h]) > _SUPPORT:
            for c in range(unknowns):
                M[r, c] = A[free[c], h] if row_side else A[h, free[c]]
            r += 1
    scale = max(1.0, np.abs(M).max())
    for c in range(unknowns):  # Gaussian elimination with partial pivoting: a column without a pivot is free
        best = c
        for q in range(c + 1, rows):
            if abs(M[q, c]) > abs(M[best, c]):
                best = q
        if abs(M[best, c]) <= _RANK_PIVOT * scale:
            return False
        for t in range(unknowns):
            M[c, t], M[best, t] = M[best, t], M[c, t]
        for q in range(c + 1, rows):
            f = M[q, c] / M[c, c]
            for t in range(c, unknowns):
                M[q, t] -= f * M[c, t]
    return True


@numba.njit(cache=True)
def tiebreak_is_moot(A: np.ndarray, v: float, x: np.ndarray, y: np.ndarray, row_side: bool, tol: float) -> bool:
    """Whether a side's tie-break keeping A's value `v` within `tol` has nothing
    to choose: its optimal strategy is unique and clear of its other actions by
    `MOOT_MARGIN`, and tol is small enough that the tie-break could move it by
    `MOOT_WEIGHT` at most. The strategy `x` (`y`) then stands as it is."""
    return tol <= MOOT_WEIGHT * MOOT_MARGIN and only_optimal_strategy(A, v, x, y, row_side, MOOT_MARGIN)


@numba.njit(cache=True)
def _only_feasible(A, strategy, cap, row_side):
    """Whether the pure `strategy` is the only one of its player that keeps `cap`
    in A (P1: x^T A >= cap; P2: A y <= cap), so that no tie-break can pick another.

    It is where, at one of the opponent's replies, the pure action meets the
    cap with a slack at most 1e-12 of the shortfall of every other action
    (itself at least `_ALONE_MARGIN`): a mix then keeps at most 1e-12 of its
    weight off the pure action. (A strict pure saddle point is such a case.)"""
    m, n = A.shape
    own = m if row_side else n
    pure = -1
    for k in range(own):
        if strategy[k] == 1.0:
            pure = k
        elif strategy[k] != 0.0:
            return False
    if pure < 0:
        return False
    scale = 1.0
    for i in range(m):
        for j in range(n):
            scale = max(scale, abs(A[i, j]))
    margin = _ALONE_MARGIN * scale
    for c in range(n if row_side else m):
        # Seen as the maximiser: P1's payoff, or P2's (the negated entry).
        slack = (A[pure, c] - cap) if row_side else (cap - A[c, pure])
        if slack < 0.0:
            continue
        short = np.inf  # by how much the rivals miss the cap at this reply, at least
        for k in range(own):
            if k != pure:
                short = min(short, (cap - A[k, c]) if row_side else (A[c, k] - cap))
        # A strategy keeping the cap has at most slack / short of its weight off the pure action.
        if short >= margin and slack <= 1e-12 * short:
            return True
    return False


@numba.njit(cache=True)
def matrix_game_tiebreak_kernel_ws(
    A: np.ndarray,
    B: np.ndarray,
    tol: float,
    x: np.ndarray,
    y: np.ndarray,
    T: np.ndarray,
    basis: np.ndarray,
    sides: int = 3,
) -> float:
    """Value of A; into x, y each player's strategy that guarantees value(A) within
    tol in A and is best for that player in B. T, basis: at least
    (2d+1) x (3d+1) and 2d+1 with d = max(m, n) (see `make_workspace`).
    `sides` (1: P1 only, 2: P2 only, 3: both) says whose tie-break to run; the
    other side keeps a plain optimal strategy. So does a side whose optimal
    strategy is unique and clear of its other actions (`MOOT_MARGIN`), at a
    tol small enough that the tie-break could move it by `MOOT_WEIGHT` at most."""
    m, n = A.shape
    if B.shape[0] != m or B.shape[1] != n:
        raise ValueError("A and B differ in shape")
    if not tol >= 0.0:
        raise ValueError("tol must be >= 0")
    d = max(m, n)
    if T.shape[0] < 2 * d + 1 or T.shape[1] < 3 * d + 1 or basis.shape[0] < 2 * d + 1:
        raise ValueError("workspace too small for this matrix")
    for i in range(m):
        for j in range(n):
            if not np.isfinite(B[i, j]):
                raise ValueError("tiebreak matrix has non-finite entries")
    v = matrix_game_kernel_ws(A, x, y, T, basis)
    for side in range(2):
        row_side = side == 1
        if not sides & (1 if row_side else 2):
            continue
        if tiebreak_is_moot(A, v, x, y, row_side, tol):
            continue  # one optimal strategy, clear of the rest: the tie-break has nothing to choose
        tiebreak_side_ws(A, B, tiebreak_cap(A, v, tol, row_side, x, y), row_side, x if row_side else y, T, basis)
    return v


@numba.njit(cache=True)
def tiebreak_cap(A: np.ndarray, v: float, tol: float, row_side: bool, x: np.ndarray, y: np.ndarray) -> float:
    """What one side's tie-break must keep in A (P1: x^T A >= cap; P2: A y <= cap),
    given A's value `v` and optimal strategies `x`, `y` from `matrix_game_kernel_ws`.

    The cap is relaxed to what those strategies really guarantee (v is exact
    only to round-off, which can exceed tol when |A| is large), so they are
    always feasible; they differ from v by at most their regret."""
    if row_side:
        return min(v, row_guarantee(A, x)) - tol
    return max(v, col_guarantee(A, y)) + tol


@numba.njit(cache=True)
def tiebreak_side_ws(
    A: np.ndarray, B: np.ndarray, cap: float, row_side: bool, out: np.ndarray, T: np.ndarray, basis: np.ndarray,
) -> int:
    """Into `out`, one side's strategy keeping `cap` in A (`tiebreak_cap`), best in B;
    returns its pure action where it is the only one keeping the cap (`out`
    holding that pure strategy on entry, as the kernel left it), else -1.

    A caller that meets the same A again (hurried play's rounds: A is the
    stage game of fixed guarantees, only B changes) can keep the cap and,
    where the answer is a lone pure action, the action, and skip both LPs."""
    if _only_feasible(A, out, cap, row_side):
        for k in range(out.shape[0]):
            if out[k] == 1.0:
                return k
    tiebreak_lp_ws(A, B, cap, row_side, out, T, basis)
    return -1


@numba.njit(cache=True)
def matrix_game_tiebreak_kernel(
    A: np.ndarray, B: np.ndarray, tol: float, sides: int = 3
) -> tuple[float, np.ndarray, np.ndarray]:
    """(value(A), x, y): the compiled twin of `solve_matrix_game_tiebreak_lp`
    (`sides` as in `matrix_game_tiebreak_kernel_ws`)."""
    m, n = A.shape
    x = np.empty(m)
    y = np.empty(n)
    d = max(m, n)
    T = np.empty((2 * d + 1, 3 * d + 1))
    basis = np.empty(2 * d + 1, np.int64)
    v = matrix_game_tiebreak_kernel_ws(A, B, tol, x, y, T, basis, sides)
    return v, x, y


@numba.njit(cache=True)
def _equalizer(A, first, second, k, transpose, T, out):
    """Into out (zeros elsewhere): the strategy on the actions `second` (k of
    them) that makes every action of `first` pay the same against it in A
    (A^T with `transpose`); its weights summing to 1. Returns that common payoff,
    or nan where the system is singular."""
    # Unknowns: the k weights and the payoff v. Rows: k equalities, then the sum.
    for r in range(k):
        for c in range(k):
            T[r, c] = A[second[c], first[r]] if transpose else A[first[r], second[c]]
        T[r, k] = -1.0
        T[r, k + 1] = 0.0
    for c in range(k):
        T[k, c] = 1.0
    T[k, k] = 0.0
    T[k, k + 1] = 1.0
    size = k + 1
    for p in range(size):
        piv = p
        big = abs(T[p, p])
        for r in range(p + 1, size):
            if abs(T[r, p]) > big:
                big, piv = abs(T[r, p]), r
        if big < 1e-12:
            return np.nan
        if piv != p:
            for c in range(p, size + 1):
                T[p, c], T[piv, c] = T[piv, c], T[p, c]
        inv = 1.0 / T[p, p]
        for r in range(p + 1, size):
            f = T[r, p] * inv
            if f != 0.0:
                for c in range(p, size + 1):
                    T[r, c] -= f * T[p, c]
    for p in range(size - 1, -1, -1):
        s = T[p, size]
        for c in range(p + 1, size):
            s -= T[p, c] * T[c, size]
        T[p, size] = s / T[p, p]
    for j in range(out.shape[0]):
        out[j] = 0.0
    for c in range(k):
        out[second[c]] = T[c, size]
    return T[k, size]


@numba.njit(cache=True)
def support_game_value_ws(A, rows, cols, x, y, T, index):
    """The value of A if its optimal strategies are the equalising ones on the
    supports `rows` and `cols` (bit masks of equal size; x and y written), or
    nan where they are not: a weight negative, the system singular, or a pure
    deviation gaining more than round-off (`_CERT_ABS` of max|A|), far inside
    `matrix_game_kernel_ws`'s own certificate. The sweeps' shortcut: a state's
    support rarely changes from one visit to the next."""
    m, n = A.shape
    k = 0
    for r in range(m):
        if rows >> r & 1:
            index[k] = r
            k += 1
    kc = 0
    for c in range(n):
        if cols >> c & 1:
            index[k + kc] = c
            kc += 1
    if k == 0 or kc != k:
        return np.nan
    row_idx = index[:k]
    col_idx = index[k : 2 * k]
    v = _equalizer(A, row_idx, col_idx, k, False, T, y)
    if not np.isfinite(v):
        return np.nan
    w = _equalizer(A, col_idx, row_idx, k, True, T, x)
    if not np.isfinite(w):
        return np.nan
    for r in range(m):
        if x[r] < 0.0:
            return np.nan
    for c in range(n):
        if y[c] < 0.0:
            return np.nan
    scale = 1.0
    for r in range(m):
        for c in range(n):
            scale = max(scale, abs(A[r, c]))
    value = 0.5 * (v + w)
    if max_regret(A, x, y, value) > _CERT_ABS * scale:
        return np.nan
    return value


@numba.njit(cache=True)
def support_masks(x, y):
    """(rows, cols): bit masks of the actions x and y play."""
    rows = 0
    cols = 0
    for r in range(x.shape[0]):
        if x[r] > 0.0:
            rows |= 1 << r
    for c in range(y.shape[0]):
        if y[c] > 0.0:
            cols |= 1 << c
    return rows, cols


# --------------------------------------------------------------------------
# Python-facing wrappers
# --------------------------------------------------------------------------


def solve_matrix_game(A: ArrayLike) -> MatrixGameSolution:
    """Value and optimal strategies of A, via the compiled kernel."""
    v, x, y = matrix_game_kernel(_as_matrix(A))
    return MatrixGameSolution(float(v), x, y)


def solve_matrix_game_tiebreak(A: ArrayLike, B: ArrayLike, tol: float = 1e-12) -> MatrixGameSolution:
    """Compiled `solve_matrix_game_tiebreak_lp`: value(A) and B-best A-optimal strategies."""
    MA, MB = _as_matrix(A, "A"), _as_matrix(B, "B")
    if MA.shape != MB.shape:
        raise ValueError(f"A and B differ in shape: {MA.shape} vs {MB.shape}")
    v, x, y = matrix_game_tiebreak_kernel(MA, MB, float(tol))
    return MatrixGameSolution(float(v), x, y)
