"""Stage games over the whole graph, compiled: Shapley sweeps, Bellman
residuals, and stage strategies that prefer ending the game.

Reading each stage's optimal strategy off converged values is not enough in a
cyclic game: where several actions keep the value (a won position in which
Charge is as good as the winning blow, by the values), the loser can be
allowed to stall forever. So `stage_strategies` takes, among the stage
strategies optimal for the values, the one best in the stage game whose
continuation values (`preferred`, by default the values themselves) are
discounted toward the unending payoff by `1 - discount_gap` per turn: it
prefers the action that ends the game sooner, or, given a side's exact
guarantee as `preferred`, the follow-up already known to convert.
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np

from .components import predecessors_among
from .graph import GameGraph
from .stage import (
    StageSolveError,
    make_workspace,
    matrix_game_kernel,
    matrix_game_kernel_ws,
    matrix_game_tiebreak_kernel_ws,
    solve_matrix_game_lp,
    solve_matrix_game_tiebreak_lp,
    support_game_value_ws,
    support_masks,
)


@numba.njit(cache=True, inline="always")
def stage_matrix_kernel(i, values, discount, unending, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, m, n, out):
    """Fill out[:m, :n] with state i's stage game; continuation values are
    discounted toward `unending` by `discount` (1.0: undiscounted)."""
    first = cell_ptr[i]
    for r in range(m):
        for c in range(n):
            k = first + r * n + c
            total = 0.0
            for j in range(out_ptr[k], out_ptr[k + 1]):
                nxt = out_next[j]
                if nxt >= 0:
                    total += out_prob[j] * (unending + discount * (values[nxt] - unending))
                else:
                    total += out_prob[j] * terminal_payoff[-1 - nxt]
            out[r, c] = total


@numba.njit(cache=True, inline="always")
def _solve_stage(i, values, unending, row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, buffer):
    """(value, x, y) of state i's undiscounted stage game built from `values`.

    The Bellman residual's kernel, and so the unit of the solve-cost figure
    (`solver.solve_cost`): it allocates its strategies and LP tableau per
    state, as the figure's unit always has, so that the figure stays
    comparable from commit to commit. Loops that only need the value use the
    allocation-free `matrix_game_kernel_ws` and a scratch of their own."""
    m = row_ptr[i + 1] - row_ptr[i]
    n = col_ptr[i + 1] - col_ptr[i]
    a = buffer[: m * n].reshape((m, n))
    stage_matrix_kernel(i, values, 1.0, unending, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, m, n, a)
    return matrix_game_kernel(a)


@numba.njit(cache=True)
def _sweeps(states, row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, unending, values, sweeps, tol, max_cells, max_dim):
    """Gauss-Seidel sweeps of Shapley's operator over `states`; the last sweep's largest change.

    A state none of whose successors' values changed since it was last solved
    would get the very same stage game and value again, so it is skipped (on
    the printed board at health 1, a fifth of the solves).

    A state solved again first tries the supports its strategies had last time
    (`support_game_value_ws`): the equalising strategies on them, checked to
    round-off. Near the fixed point the supports rarely change (92% of the
    mixed stage games of the printed board's warm-up sweeps at health 1), and
    the check costs a fraction of the simplex: the sweeps take about 28% less."""
    buffer = np.empty(max_cells)
    # One scratch for every state: allocating a tableau per stage game cost 7% of a sweep's time.
    T, basis = make_workspace(max_dim)
    x = np.empty(max_dim)
    y = np.empty(max_dim)
    ptr, pred = predecessors_among(states, cell_ptr, out_ptr, out_next, values.shape[0])
    stale = np.ones(states.shape[0], np.bool_)
    support = np.zeros((states.shape[0], 2), np.int64)
    change = np.inf
    for _ in range(sweeps):
        change = 0.0
        for j in range(states.shape[0]):
            if not stale[j]:
                continue
            stale[j] = False
            i = states[j]
            m = row_ptr[i + 1] - row_ptr[i]
            n = col_ptr[i + 1] - col_ptr[i]
            a = buffer[: m * n].reshape((m, n))
            stage_matrix_kernel(i, values, 1.0, unending, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, m, n, a)
            v = support_game_value_ws(a, support[j, 0], support[j, 1], x[:m], y[:n], T, basis)
            if not np.isfinite(v):
                v = matrix_game_kernel_ws(a, x[:m], y[:n], T, basis)
                support[j, 0], support[j, 1] = support_masks(x[:m], y[:n])
            if v != values[i]:
                change = max(change, abs(v - values[i]))
                for e in range(ptr[j], ptr[j + 1]):
                    stale[pred[e]] = True
            values[i] = v
        if change <= tol:
            break
    return change


def shapley_sweeps(graph: GameGraph, states: np.ndarray, values: np.ndarray, sweeps: int, tol: float = 1e-13) -> float:
    """Update `values[states]` in place by up to `sweeps` Gauss-Seidel sweeps of
    Shapley's operator (other states' values are read, not changed); stops early
    once a sweep changes nothing by more than `tol`. Returns the last change."""
    return float(_sweeps(
        np.ascontiguousarray(states, np.int64), graph.row_ptr, graph.col_ptr, graph.cell_ptr, graph.out_ptr,
        graph.out_next, graph.out_prob, graph.terminal_payoff, graph.unending_payoff, values, sweeps, tol,
        max_cells(graph), max_actions(graph),
    ))


@numba.njit(cache=True)
def _residuals(row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, unending, values, max_cells):
    buffer = np.empty(max_cells)
    residual = np.empty(values.shape[0])
    for i in range(values.shape[0]):
        v = _solve_stage(i, values, unending, row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, buffer)[0]
        residual[i] = abs(v - values[i])
    return residual


def bellman_residual(
    graph: GameGraph, values: np.ndarray, solve: Callable[[np.ndarray], float | tuple] | None = None,
) -> np.ndarray:
    """|value of the stage game built from `values` - values|, per state.

    By default the stage games are solved by the compiled kernel
    (`stage.matrix_game_kernel`) in one loop over all states. `solve(A)`,
    if given, is used instead: it returns the value of the matrix game A (row
    player maximises), or a tuple starting with it (a reference solver to
    check the kernel against)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    if solve is None:
        return _residuals(
            graph.row_ptr, graph.col_ptr, graph.cell_ptr, graph.out_ptr, graph.out_next,
            graph.out_prob, graph.terminal_payoff, graph.unending_payoff, values, max_cells(graph),
        )
    out = np.empty(graph.num_states, np.float64)
    for i in range(graph.num_states):
        res = solve(graph.stage_matrix(i, values))
        val = res[0] if isinstance(res, tuple) else res
        out[i] = abs(float(val) - values[i])
    return out


def max_cells(graph: GameGraph) -> int:
    """The largest stage game's cell count (a buffer size for the kernels)."""
    return max(1, int(np.diff(graph.cell_ptr).max(initial=1)))


def max_actions(graph: GameGraph) -> int:
    """The most actions either player has in one state (the kernels' LP workspace size)."""
    return max(1, int(np.diff(graph.row_ptr).max(initial=1)), int(np.diff(graph.col_ptr).max(initial=1)))


@numba.njit(cache=True)
def _strategies(
    values, preferred, row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff,
    unending, discount, tol, row_strategy, col_strategy, residual, max_cells, failed, sides, max_dim,
):
    a_buffer = np.empty(max_cells)
    b_buffer = np.empty(max_cells)
    T, basis = make_workspace(max_dim)
    x_buffer = np.empty(max_dim)
    y_buffer = np.empty(max_dim)
    for i in range(values.shape[0]):
        m = row_ptr[i + 1] - row_ptr[i]
        n = col_ptr[i + 1] - col_ptr[i]
        a = a_buffer[: m * n].reshape((m, n))
        b = b_buffer[: m * n].reshape((m, n))
        stage_matrix_kernel(i, values, 1.0, unending, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, m, n, a)
        stage_matrix_kernel(i, preferred, discount, unending, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, m, n, b)
        x = x_buffer[:m]
        y = y_buffer[:n]
        try:
            v = matrix_game_tiebreak_kernel_ws(a, b, tol, x, y, T, basis, sides)
        except Exception:  # left to the LP reference, outside the compiled loop
            failed[i] = True
            continue
        residual[i] = abs(v - values[i])
        row_strategy[row_ptr[i] : row_ptr[i + 1]] = x
        col_strategy[col_ptr[i] : col_ptr[i + 1]] = y


def stage_strategies(
    graph: GameGraph,
    values: np.ndarray,
    preferred: np.ndarray | None = None,
    discount_gap: float = 1e-6,
    tol: float = 1e-12,
    side: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row_strategy, col_strategy, bellman_residual): stage-optimal strategies
    for `values` that prefer ending the game (see the module docstring).

    Among the optimal ones, each side takes the best for continuation values
    `preferred` (default: `values`) discounted toward the unending payoff.
    Passing a side's exact guarantee there is a policy-improvement step: it
    prefers the moves whose follow-up is already known to convert. With
    `side` 0 (P1) or 1 (P2) only that side is tie-broken (the other's
    strategy is merely optimal): half the work when one side is wanted.
    """
    preferred = values if preferred is None else preferred
    row_strategy = np.zeros(graph.row_actions.shape[0])
    col_strategy = np.zeros(graph.col_actions.shape[0])
    residual = np.zeros(graph.num_states)
    failed = np.zeros(graph.num_states, dtype=np.bool_)
    _strategies(
        values, preferred, graph.row_ptr, graph.col_ptr, graph.cell_ptr, graph.out_ptr, graph.out_next,
        graph.out_prob, graph.terminal_payoff, graph.unending_payoff, 1.0 - discount_gap, tol,
        row_strategy, col_strategy, residual, max_cells(graph), failed, 3 if side is None else 1 << side,
        max_actions(graph),
    )
    # The kernel declines the rare stage game it cannot certify (payoffs tied
    # to rounding level); HiGHS solves those.
    for i in np.flatnonzero(failed):
        a = graph.stage_matrix(int(i), values)
        b = stage_matrix_discounted(graph, int(i), preferred, 1.0 - discount_gap)
        try:
            solution = solve_matrix_game_tiebreak_lp(a, b, tol)
        except StageSolveError:
            solution = solve_matrix_game_lp(a)
        residual[i] = abs(solution.value - values[i])
        row_strategy[graph.row_ptr[i] : graph.row_ptr[i + 1]] = solution.row_strategy
        col_strategy[graph.col_ptr[i] : graph.col_ptr[i + 1]] = solution.col_strategy
    return row_strategy, col_strategy, residual


def stage_matrix_discounted(graph: GameGraph, i: int, values: np.ndarray, discount: float) -> np.ndarray:
    """State i's stage game with continuation values discounted toward the unending payoff."""
    u = graph.unending_payoff
    return graph.stage_matrix(i, u + discount * (np.asarray(values) - u))
