"""Stage-game solvers: compiled kernels against scipy/HiGHS and nashpy."""

from __future__ import annotations

import warnings

import nashpy
import numba
import numpy as np
import pytest
import scipy.optimize
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from solver.core import stage
from solver.core.stage import (
    MatrixGameSolution,
    StageSolveError,
    make_workspace,
    matrix_game_kernel,
    matrix_game_kernel_ws,
    matrix_game_tiebreak_kernel,
    matrix_game_tiebreak_kernel_ws,
    max_regret,
    solve_matrix_game,
    solve_matrix_game_lp,
    solve_matrix_game_tiebreak,
    solve_matrix_game_tiebreak_lp,
    support_game_value_ws,
    support_masks,
)

TOL = 1e-9


# ---------------------------------------------------------------- helpers


def row_guarantee(G: np.ndarray, x: np.ndarray) -> float:
    """What the row strategy x secures in G: min_j (x^T G)_j."""
    return float((x @ G).min())


def col_guarantee(G: np.ndarray, y: np.ndarray) -> float:
    """What the column strategy y concedes at most in G: max_i (G y)_i."""
    return float((G @ y).max())


def assert_distribution(p: np.ndarray, size: int) -> None:
    assert p.shape == (size,)
    assert np.all(p >= 0.0)
    assert abs(p.sum() - 1.0) <= 1e-12


def assert_optimal(A: np.ndarray, value: float, x: np.ndarray, y: np.ndarray) -> None:
    m, n = A.shape
    assert_distribution(x, m)
    assert_distribution(y, n)
    assert max_regret(A, x, y, value) <= TOL


def random_game(rng: np.random.Generator, kind: str, m: int, n: int) -> np.ndarray:
    # C order throughout: every new array layout costs the kernels a numba compile.
    return np.ascontiguousarray(_random_game(rng, kind, m, n))


def _random_game(rng: np.random.Generator, kind: str, m: int, n: int) -> np.ndarray:
    if kind == "uniform":
        return rng.random((m, n))
    if kind == "halves":  # integer-like payoffs: ties and degenerate LPs galore
        return rng.choice([0.0, 0.5, 1.0], size=(m, n))
    if kind == "binary":
        return rng.choice([0.0, 1.0], size=(m, n))
    if kind == "duplicated":  # repeated rows and columns
        base = rng.choice([0.0, 0.5, 1.0], size=(m, n))
        return base[rng.integers(0, m, m)][:, rng.integers(0, n, n)]
    if kind == "constant":
        return np.full((m, n), rng.choice([0.0, 0.5, 1.0]))
    if kind == "rounded":  # two decimals: near-ties
        return np.round(rng.random((m, n)), 2)
    if kind == "near":  # payoffs 1e-9 apart, as late in value iteration: ill-conditioned
        return rng.choice([0.0, 1e-9, 0.5, 0.5 + 1e-9, 1.0], size=(m, n))
    raise ValueError(kind)


KINDS = ("uniform", "halves", "binary", "duplicated", "constant", "rounded")
# HiGHS drops coefficients below 1e-9, so "near" games are checked by certificate only.
HARD_KINDS = KINDS + ("near",)


def game_batch(seed: int, count: int, max_dim: int = 10, kinds=KINDS):
    rng = np.random.default_rng(seed)
    for t in range(count):
        m, n = (int(s) for s in rng.integers(1, max_dim + 1, size=2))
        yield random_game(rng, kinds[t % len(kinds)], m, n)


def nashpy_row_strategy(A: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row, _ = nashpy.Game(A).linear_program()
    return np.asarray(row, dtype=float)


# ---------------------------------------------------------------- plain games


def test_known_games() -> None:
    pennies = np.array([[1.0, 0.0], [0.0, 1.0]])
    rps = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])
    for solve in (solve_matrix_game, solve_matrix_game_lp):
        sol = solve(pennies)
        assert isinstance(sol, MatrixGameSolution)
        assert sol.value == pytest.approx(0.5, abs=TOL)
        np.testing.assert_allclose(sol.row_strategy, [0.5, 0.5], atol=TOL)
        np.testing.assert_allclose(sol.col_strategy, [0.5, 0.5], atol=TOL)
        sol = solve(rps)
        assert sol.value == pytest.approx(0.0, abs=TOL)
        np.testing.assert_allclose(sol.row_strategy, np.full(3, 1 / 3), atol=TOL)
        np.testing.assert_allclose(sol.col_strategy, np.full(3, 1 / 3), atol=TOL)


@pytest.mark.parametrize(
    "A",
    [
        np.array([[0.3]]),
        np.array([[0.2, 0.7, 0.1, 0.9]]),  # 1 x n: column player picks the minimum
        np.array([[0.2], [0.7], [0.1]]),  # m x 1: row player picks the maximum
        np.full((4, 3), 0.5),
        np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]),
        np.array([[0.5, 1.0], [0.0, 0.5]]),  # saddle in a corner
    ],
    ids=["1x1", "1xn", "mx1", "constant", "duplicate-rows", "saddle"],
)
def test_degenerate_shapes(A: np.ndarray) -> None:
    v, x, y = matrix_game_kernel(A)
    ref = solve_matrix_game_lp(A)
    assert v == pytest.approx(ref.value, abs=TOL)
    assert_optimal(A, v, x, y)
    if A.shape[0] == 1:
        assert v == A.min()
    if A.shape[1] == 1:
        assert v == A.max()


def test_kernel_agrees_with_scipy_and_nashpy() -> None:
    for A in game_batch(seed=1, count=160):
        v, x, y = matrix_game_kernel(A)
        ref = solve_matrix_game_lp(A)
        assert abs(v - ref.value) <= TOL, A
        assert_optimal(A, v, x, y)
        assert_optimal(A, ref.value, ref.row_strategy, ref.col_strategy)
        # nashpy's LP returns the row strategy; what it secures is the value.
        assert abs(row_guarantee(A, nashpy_row_strategy(A)) - v) <= TOL, A


def test_kernel_certified_on_many_games() -> None:
    # No scipy here, so many more (and bigger) games fit in the time budget.
    for A in game_batch(seed=2, count=3500, max_dim=16, kinds=HARD_KINDS):
        v, x, y = matrix_game_kernel(A)
        assert_optimal(A, v, x, y)
        assert A.min() <= v <= A.max()


def test_affine_invariance() -> None:
    # a*A + b (a > 0) has the strategies of A and value a*value(A) + b; the
    # kernel normalises internally, so large or tiny scales must not matter.
    for A in game_batch(seed=3, count=60, kinds=("uniform", "halves")):
        v, _, _ = matrix_game_kernel(A)
        for a, b in ((1e6, -3e6), (1e-6, 2.0), (3.0, 0.0)):
            w, x, y = matrix_game_kernel(a * A + b)
            scale = max(1.0, a, abs(b))
            assert abs(w - (a * v + b)) <= TOL * scale
            assert max_regret(a * A + b, x, y, w) <= TOL * scale
            # tol is absolute, far below the round-off of 1e6-sized payoffs: the
            # tiebreak must still find strategies (it relaxes to what is attainable).
            w, x, y = matrix_game_tiebreak_kernel(a * A + b, A, 1e-12)
            assert max_regret(a * A + b, x, y, w) <= TOL * scale


def test_python_wrapper_matches_kernel_and_validates() -> None:
    A = [[0.0, 1.0, 0.5], [1.0, 0.0, 0.5]]
    sol = solve_matrix_game(A)  # lists are fine for the wrapper
    v, x, y = matrix_game_kernel(np.array(A))
    assert sol.value == v
    np.testing.assert_array_equal(sol.row_strategy, x)
    np.testing.assert_array_equal(sol.col_strategy, y)
    for bad in ([[np.nan, 1.0]], [[np.inf]], np.zeros((0, 3)), [1.0, 2.0]):
        with pytest.raises(ValueError):
            solve_matrix_game(bad)
    with pytest.raises(ValueError):
        matrix_game_kernel(np.array([[0.0, np.nan], [1.0, 0.0]]))


# ---------------------------------------------------------------- tiebreak


def test_tiebreak_all_optimal() -> None:
    # Every strategy is optimal in A, so B decides alone. Row: x^T B has
    # minimum 0.7 + 0.2 x_0 (second column), maximised by row 0 (0.9).
    # Column: max_i (B y)_i = 0.9 + 0.1 y_0 (first row), minimised by column 1.
    A = np.ones((2, 2))
    B = np.array([[1.0, 0.9], [0.8, 0.7]])
    for solve in (solve_matrix_game_tiebreak, solve_matrix_game_tiebreak_lp):
        sol = solve(A, B)
        assert sol.value == pytest.approx(1.0, abs=TOL)
        np.testing.assert_allclose(sol.row_strategy, [1.0, 0.0], atol=TOL)
        np.testing.assert_allclose(sol.col_strategy, [0.0, 1.0], atol=TOL)


def test_tiebreak_keeps_optimality_in_A() -> None:
    # value(A) = 1/2. Optimal row strategies are (a, a, 1 - 2a), a in [0, 1/2];
    # B would put everything on row 0, which is not optimal in A, and among the
    # optimal ones x^T B = (a, a) is best at a = 1/2. Column: A y <= 1/2 forces
    # y = (1/2, 1/2).
    A = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    B = np.array([[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]])
    for solve in (solve_matrix_game_tiebreak, solve_matrix_game_tiebreak_lp):
        sol = solve(A, B)
        assert sol.value == pytest.approx(0.5, abs=TOL)
        np.testing.assert_allclose(sol.row_strategy, [0.5, 0.5, 0.0], atol=TOL)
        np.testing.assert_allclose(sol.col_strategy, [0.5, 0.5], atol=TOL)
    # The column player's mirror image: B loves column 0 (B y = 1 - y_0 in
    # both rows), optimal y are (a, a, 1 - 2a), so the pick is a = 1/2.
    At, Bt = A.T.copy(), np.array([[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]])
    for solve in (solve_matrix_game_tiebreak, solve_matrix_game_tiebreak_lp):
        sol = solve(At, Bt)
        np.testing.assert_allclose(sol.row_strategy, [0.5, 0.5], atol=TOL)
        np.testing.assert_allclose(sol.col_strategy, [0.5, 0.5, 0.0], atol=TOL)


def test_tiebreak_tol_admits_near_optimal() -> None:
    # Row 1 falls 0.1 short of the value 0.5 and B wants it: x^T A >= 0.5 - tol
    # allows x_1 <= tol / 0.1, so the pick is x_1 = 0 at the default tol,
    # x_1 = 1/2 at tol = 0.05 and x_1 = 1 at tol = 0.15.
    A = np.array([[0.5, 0.5], [0.4, 0.5]])
    B = np.array([[0.0, 0.0], [1.0, 1.0]])
    for solve in (solve_matrix_game_tiebreak, solve_matrix_game_tiebreak_lp):
        np.testing.assert_allclose(solve(A, B).row_strategy, [1.0, 0.0], atol=TOL)
        np.testing.assert_allclose(solve(A, B, tol=0.05).row_strategy, [0.5, 0.5], atol=TOL)
        np.testing.assert_allclose(solve(A, B, tol=0.15).row_strategy, [0.0, 1.0], atol=TOL)
        assert solve(A, B, tol=0.15).value == pytest.approx(0.5, abs=TOL)


def test_tiebreak_agrees_with_reference() -> None:
    rng = np.random.default_rng(4)
    kinds = ("halves", "binary", "duplicated", "constant", "rounded", "uniform")
    for t, A in enumerate(game_batch(seed=5, count=120, kinds=kinds)):
        B = rng.random(A.shape) if t % 3 else random_game(rng, "halves", *A.shape)
        v, x, y = matrix_game_tiebreak_kernel(A, B, 1e-12)
        ref = solve_matrix_game_tiebreak_lp(A, B)
        assert abs(v - ref.value) <= TOL
        assert_optimal(A, v, x, y)
        # Strategies may differ when the B-optimum is not unique; guarantees may not.
        assert abs(row_guarantee(B, x) - row_guarantee(B, ref.row_strategy)) <= TOL, (A, B)
        assert abs(col_guarantee(B, y) - col_guarantee(B, ref.col_strategy)) <= TOL, (A, B)


def test_tiebreak_certified_on_many_games() -> None:
    rng = np.random.default_rng(6)
    for t, A in enumerate(game_batch(seed=6, count=800, max_dim=16, kinds=HARD_KINDS)):
        B = A if t % 4 == 0 else rng.random(A.shape)
        v, x, y = matrix_game_tiebreak_kernel(A, B, 1e-12)
        assert_optimal(A, v, x, y)


def test_tiebreak_validates() -> None:
    with pytest.raises(ValueError):
        solve_matrix_game_tiebreak(np.ones((2, 2)), np.ones((2, 3)))
    with pytest.raises(ValueError):
        solve_matrix_game_tiebreak(np.ones((2, 2)), np.ones((2, 2)), tol=-1.0)
    with pytest.raises(ValueError):
        solve_matrix_game_tiebreak_lp(np.ones((2, 2)), np.full((2, 2), np.nan))


# ---------------------------------------------------------------- compiled use


# Not cache=True: numba's on-disk cache of this function would keep the stage
# kernels it was compiled against after stage.py changes.
@numba.njit
def _solve_many(games: np.ndarray, tiebreaks: np.ndarray) -> np.ndarray:
    """Both kernels from compiled code, through one reused workspace (as a value
    iteration loop would call them)."""
    count, m, n = games.shape
    T, basis = make_workspace(16)
    x = np.empty(m)
    y = np.empty(n)
    out = np.empty((count, 2 + m + n))
    for g in range(count):
        out[g, 0] = matrix_game_kernel_ws(games[g], x, y, T, basis)
        v = matrix_game_tiebreak_kernel_ws(games[g], tiebreaks[g], 1e-12, x, y, T, basis)
        out[g, 1] = v
        for i in range(m):
            out[g, 2 + i] = x[i]
        for j in range(n):
            out[g, 2 + m + j] = y[j]
    return out


def test_kernels_callable_from_njit() -> None:
    rng = np.random.default_rng(7)
    games = rng.choice([0.0, 0.5, 1.0], size=(40, 5, 4))
    tiebreaks = rng.random((40, 5, 4))
    out = _solve_many(games, tiebreaks)
    for g in range(len(games)):
        # Workspace reuse changes nothing: same results as the allocating kernels.
        v, _, _ = matrix_game_kernel(games[g])
        w, x, y = matrix_game_tiebreak_kernel(games[g], tiebreaks[g], 1e-12)
        assert out[g, 0] == v
        assert out[g, 1] == w
        np.testing.assert_array_equal(out[g, 2:7], x)
        np.testing.assert_array_equal(out[g, 7:], y)


def test_workspace_too_small_is_refused() -> None:
    T, basis = make_workspace(2)
    A = np.random.default_rng(8).random((4, 4))
    with pytest.raises(ValueError):
        matrix_game_kernel_ws(A, np.empty(4), np.empty(4), T, basis)


# ---------------------------------------------------------------- reference status


def test_reference_raises_when_linprog_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    failed = scipy.optimize.OptimizeResult(status=2, success=False, x=None, message="infeasible")
    monkeypatch.setattr(stage.scipy.optimize, "linprog", lambda *a, **k: failed)
    with pytest.raises(StageSolveError):
        solve_matrix_game_lp(np.eye(2))
    with pytest.raises(StageSolveError):
        solve_matrix_game_tiebreak_lp(np.eye(2), np.eye(2))
    assert issubclass(StageSolveError, RuntimeError)


# ---------------------------------------------------------------- property tests

unit_floats = st.floats(min_value=0.0, max_value=1.0, allow_nan=False, allow_subnormal=False)
eighths = st.integers(0, 8).map(lambda k: k / 8)  # exact, and full of ties
shapes = st.tuples(st.integers(1, 6), st.integers(1, 6))


def matrices(elements, shape=shapes):
    return shape.flatmap(lambda sh: arrays(np.float64, sh, elements=elements))


any_matrices = matrices(st.one_of(unit_floats, eighths))
# Compared against HiGHS: keep entries where its 1e-9 coefficient cut-off is harmless.
grid_pairs = shapes.flatmap(
    lambda sh: st.tuples(
        arrays(np.float64, sh, elements=eighths),
        arrays(np.float64, sh, elements=st.integers(0, 1000).map(lambda k: k / 1000)),
    )
)


@settings(max_examples=120, deadline=None, derandomize=True)
@given(any_matrices)
def test_property_kernel_certified(A: np.ndarray) -> None:
    v, x, y = matrix_game_kernel(A)
    assert_optimal(A, v, x, y)
    assert A.min() <= v <= A.max()
    B = np.sin(7.0 * np.arange(A.size)).reshape(A.shape)  # any fixed tiebreak game
    w, x, y = matrix_game_tiebreak_kernel(A, B, 1e-12)
    assert w == v
    assert_optimal(A, w, x, y)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(grid_pairs)
def test_property_kernels_match_reference(pair: tuple[np.ndarray, np.ndarray]) -> None:
    A, B = pair
    v, x, y = matrix_game_kernel(A)
    assert abs(v - solve_matrix_game_lp(A).value) <= TOL
    w, x, y = matrix_game_tiebreak_kernel(A, B, 1e-12)
    ref = solve_matrix_game_tiebreak_lp(A, B)
    assert abs(w - ref.value) <= TOL
    assert abs(row_guarantee(B, x) - row_guarantee(B, ref.row_strategy)) <= TOL
    assert abs(col_guarantee(B, y) - col_guarantee(B, ref.col_strategy)) <= TOL


def test_tiebreak_skipped_only_where_the_lp_has_nothing_to_choose() -> None:
    """Where `_only_feasible` lets the tie-break LP be skipped, the LP would
    have returned the kernel's pure strategy; and a strict pure saddle point
    is such a case for both players, while a tie in A is not."""
    rng = np.random.default_rng(2026)
    T, basis = stage.make_workspace(16)
    skipped = 0
    for _ in range(4000):
        m, n = (int(k) for k in rng.integers(1, 6, 2))
        A = rng.integers(0, 4, (m, n)) / 4.0  # coarse payoffs: many ties and saddles
        B = rng.random((m, n))
        x, y = np.empty(m), np.empty(n)
        v = stage.matrix_game_kernel_ws(A, x, y, T, basis)
        for row_side, own in ((True, x), (False, y)):
            cap = stage.tiebreak_cap(A, v, 0.0, row_side, x, y)
            assert cap == (min(v, stage.row_guarantee(A, x)) if row_side else max(v, stage.col_guarantee(A, y)))
            if stage._only_feasible(A, own, cap, row_side):
                skipped += 1
                lp = own.copy()
                stage.tiebreak_lp_ws(A, B, cap, row_side, lp, T, basis)
                assert np.abs(lp - own).max() <= 1e-9
                # The pure action is what `tiebreak_side_ws` reports, and leaves in place.
                kept = own.copy()
                assert stage.tiebreak_side_ws(A, B, cap, row_side, kept, T, basis) == int(np.argmax(own))
                assert np.array_equal(kept, own)
    assert skipped > 1000
    strict = np.array([[0.5, 0.9], [0.2, 0.1]])  # saddle at (0, 0), strict in its row and column
    x, y = np.array([1.0, 0.0]), np.array([1.0, 0.0])
    assert stage._only_feasible(strict, x, 0.5, True) and stage._only_feasible(strict, y, 0.5, False)
    tied = np.array([[0.5, 0.9], [0.5, 0.1]])  # row 1 meets the cap too in the saddle's column
    assert not stage._only_feasible(tied, x, 0.5, True)
    assert not stage._only_feasible(strict, np.array([0.5, 0.5]), 0.5, True)  # a mix is never skipped


def optimal_set_is_a_point(A: np.ndarray, v: float, row_side: bool) -> bool:
    """Independently (scipy's HiGHS): whether every coordinate of the side's
    optimal strategies is pinned, its least and greatest over the optimal set
    within 1e-7 of each other."""
    G = A if row_side else -A.T  # P2's optimal strategies are P1's in -A^T, whose value is -v
    value = v if row_side else -v
    k = G.shape[0]
    bounds = [(0, None)] * k
    a_ub, b_ub = -G.T, -np.full(G.shape[1], value - 1e-12)
    for i in range(k):
        unit = np.eye(k)[i]
        low = scipy.optimize.linprog(unit, A_ub=a_ub, b_ub=b_ub, A_eq=np.ones((1, k)), b_eq=[1.0], bounds=bounds)
        high = scipy.optimize.linprog(-unit, A_ub=a_ub, b_ub=b_ub, A_eq=np.ones((1, k)), b_eq=[1.0], bounds=bounds)
        if -high.fun - low.fun > 1e-7:
            return False
    return True


@pytest.mark.parametrize("ties", [False, True], ids=["generic entries", "entries of 0, 0.5 and 1"])
def test_a_side_said_to_have_one_optimal_strategy_has_one(ties):
    rng = np.random.default_rng(7 if ties else 8)
    said, found = 0, 0
    for _ in range(300):
        m, n = rng.integers(1, 5, 2)
        A = rng.integers(0, 3, (m, n)) / 2.0 if ties else rng.random((m, n))
        x, y = np.empty(m), np.empty(n)
        T, basis = make_workspace(8)
        v = matrix_game_kernel_ws(A, x, y, T, basis)
        for row_side in (True, False):
            unique = optimal_set_is_a_point(A, v, row_side)
            found += unique
            if stage.only_optimal_strategy(A, v, x, y, row_side):
                said += 1
                assert unique, (A, row_side)
    # Sound, and not so cautious as to be useless: generic games have one optimal strategy a side.
    assert said >= (0.9 * found if not ties else 0.3 * found) and said > 50


@pytest.mark.parametrize("short", [1e-3, 1e-8], ids=["clear of the value", "within the margin"])
def test_the_tiebreak_is_skipped_only_where_one_optimal_strategy_stands_clear(short):
    # Matching pennies plus a third row that falls `short` of the value 1/2, which B wants.
    # P1's optimal strategy is (1/2, 1/2, 0) alone, but a tie-break keeping the value within
    # tol may put tol / short on row 2: 1e-9 when that row is clear of the value, 1e-4 when it
    # is within `MOOT_MARGIN` of it, where the tie-break must run and find that weight.
    A = np.array([[1.0, 0.0], [0.0, 1.0], [0.5 - short, 0.5 - short]])
    B = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
    x, y = np.array([0.5, 0.5, 0.0]), np.array([0.5, 0.5])
    assert stage.only_optimal_strategy(A, 0.5, x, y, True)
    clear = short >= stage.MOOT_MARGIN
    assert stage.only_optimal_strategy(A, 0.5, x, y, True, stage.MOOT_MARGIN) == clear
    _, kernel_x, _ = matrix_game_tiebreak_kernel(A, B, 1e-12)
    reference = solve_matrix_game_tiebreak_lp(A, B, tol=1e-12).row_strategy
    assert reference[2] == pytest.approx(1e-12 / short, rel=1e-3)
    if clear:  # skipped: the strategy differs from the tie-break's by its 1e-9 on row 2
        assert abs(kernel_x[2] - reference[2]) <= 2e-9
    else:
        assert kernel_x[2] == pytest.approx(reference[2], rel=1e-3)


def test_one_optimal_strategy_in_known_games():
    pennies = np.array([[1.0, 0.0], [0.0, 1.0]])
    x, y = np.array([0.5, 0.5]), np.array([0.5, 0.5])
    assert stage.only_optimal_strategy(pennies, 0.5, x, y, True) and stage.only_optimal_strategy(pennies, 0.5, x, y, False)
    # A third row mixing the first two as well: (1/2, 1/2, 0) and (0, 0, 1) are both optimal for P1.
    third = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    assert not stage.only_optimal_strategy(third, 0.5, np.array([0.0, 0.0, 1.0]), y, True)
    # P2 must still mix evenly: P1's (1/2, 1/2, 0) shows it, while (0, 0, 1) binds P2 only to the value (cautious).
    assert stage.only_optimal_strategy(third, 0.5, np.array([0.5, 0.5, 0.0]), y, False)
    assert not stage.only_optimal_strategy(third, 0.5, np.array([0.0, 0.0, 1.0]), y, False)
    # Row 0 wins whatever P2 plays: P1's strategy is pinned, P2's is anything.
    won = np.array([[1.0, 1.0], [0.0, 0.0]])
    x, y = np.array([1.0, 0.0]), np.array([1.0, 0.0])
    assert stage.only_optimal_strategy(won, 1.0, x, y, True) and not stage.only_optimal_strategy(won, 1.0, x, y, False)


def test_a_supports_shortcut_gives_the_value_on_the_right_supports_and_nothing_on_wrong_ones() -> None:
    # The sweeps try a state's last supports before the simplex. On the supports the simplex
    # found, the shortcut gives the same value and optimal strategies; on any other pair of
    # equally large supports it gives nan, or the value itself (where those supports are optimal
    # too): never a wrong value.
    rng = np.random.default_rng(2027)
    T, index = make_workspace(6)
    right = wrong = 0
    for t in range(300):
        m, n = (int(k) for k in rng.integers(2, 6, size=2))
        A = random_game(rng, ("uniform", "rounded", "halves")[t % 3], m, n)
        v, x, y = matrix_game_kernel(A)
        rows, cols = support_masks(x, y)
        sx, sy = np.empty(m), np.empty(n)
        if bin(rows).count("1") == bin(cols).count("1"):
            got = support_game_value_ws(A, rows, cols, sx, sy, T, index)
            assert got == pytest.approx(v, abs=1e-12)
            assert_optimal(A, got, sx, sy)
            right += 1
        for _ in range(4):
            k = int(rng.integers(1, min(m, n) + 1))
            rows = int(np.sum(1 << rng.choice(m, k, replace=False)))
            cols = int(np.sum(1 << rng.choice(n, k, replace=False)))
            got = support_game_value_ws(A, rows, cols, sx, sy, T, index)
            if not np.isnan(got):
                assert got == pytest.approx(v, abs=1e-12)
                assert_optimal(A, got, sx, sy)
            else:
                wrong += 1
    assert right > 200 and wrong > 500
    assert np.isnan(support_game_value_ws(np.eye(2), 0b11, 0b1, sx[:2], sy[:2], T, index))  # sizes differ
