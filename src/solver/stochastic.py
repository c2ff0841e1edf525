"""Solving the stochastic game: values by component, then strategies that certify.

Values. States are solved one strongly connected component at a time, in an
order where every successor outside the component is already solved. Inside a
component, Shapley's operator is iterated (Gauss-Seidel) from the unending
payoff, i.e. the n-turn games that pay `unending_payoff` when time runs out,
which converge to the value of the recursive game. A component that is a
single state without a self-loop takes one stage solve.

Strategies. Reading each stage's optimal strategy off the converged values is
not enough in a cyclic game: where several actions keep the value (a won
position in which Charge is as good as the winning blow, by the values), the
loser can be allowed to stall forever. So at each state we take, among the
stage strategies optimal for the values, the one best in the stage game whose
continuation values are discounted toward the unending payoff by
`1 - discount_gap` per turn: it prefers the action that ends the game sooner.
`certify.certify` then measures the exploitability of what we report.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order
from scipy.sparse.linalg import spsolve

from .graph import GameGraph
from .stage import (
    StageSolveError,
    matrix_game_kernel,
    matrix_game_tiebreak_kernel,
    solve_matrix_game_lp,
    solve_matrix_game_tiebreak_lp,
)


@numba.njit(cache=True, inline="always")
def _stage_matrix(i, values, discount, unending, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, m, n, out):
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
    """(value, x, y) of state i's undiscounted stage game built from `values`."""
    m = row_ptr[i + 1] - row_ptr[i]
    n = col_ptr[i + 1] - col_ptr[i]
    a = buffer[: m * n].reshape((m, n))
    _stage_matrix(i, values, 1.0, unending, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, m, n, a)
    return matrix_game_kernel(a)


@numba.njit(cache=True, inline="always")
def _lone_without_loop(lo, hi, comp_states, cell_ptr, out_ptr, out_next):
    """Whether the component is one state that cannot lead back to itself."""
    if hi - lo != 1:
        return False
    i = comp_states[lo]
    for j in range(out_ptr[cell_ptr[i]], out_ptr[cell_ptr[i + 1]]):
        if out_next[j] == i:
            return False
    return True


@numba.njit(cache=True)
def _sweep(lo, hi, comp_states, row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, unending, values, buffer):
    """One Gauss-Seidel sweep of Shapley's operator over a component; the largest change."""
    change = 0.0
    for t in range(lo, hi):
        i = comp_states[t]
        v, x, y = _solve_stage(i, values, unending, row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, buffer)
        change = max(change, abs(v - values[i]))
        values[i] = v
    return change


@numba.njit(cache=True)
def _solve_components(
    c, comp_ptr, comp_states, row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob,
    terminal_payoff, unending, tol, sweep_limit, values, progress_every, max_cells,
):
    """Solve components c, c+1, ... in order by value iteration.

    Returns (next component, states done, stuck): stops after about
    `progress_every` states so the caller can show progress, or at a component
    still changing after `sweep_limit` sweeps (stuck), for the caller to
    accelerate.
    """
    buffer = np.empty(max_cells)
    done_states = 0
    while c < comp_ptr.shape[0] - 1:
        lo, hi = comp_ptr[c], comp_ptr[c + 1]
        for t in range(lo, hi):
            values[comp_states[t]] = unending
        once = _lone_without_loop(lo, hi, comp_states, cell_ptr, out_ptr, out_next)
        sweeps = 0
        while True:
            change = _sweep(lo, hi, comp_states, row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, unending, values, buffer)
            sweeps += 1
            if once or change <= tol:
                break
            if sweeps >= sweep_limit:
                return c, done_states, True
        done_states += hi - lo
        c += 1
        if done_states >= progress_every:
            break
    return c, done_states, False


@numba.njit(cache=True)
def _component_chain(
    lo, hi, comp_states, local, row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob,
    terminal_payoff, unending, values, max_cells,
):
    """The Markov chain inside a component when both play their stage-optimal
    strategies for `values`: (rows, cols, probs) of in-component moves, the
    expected value carried out of the component, the probability of leaving,
    and the Bellman residual."""
    size = hi - lo
    capacity = 0
    for t in range(lo, hi):
        i = comp_states[t]
        capacity += out_ptr[cell_ptr[i + 1]] - out_ptr[cell_ptr[i]]
    rows = np.empty(capacity, dtype=np.int64)
    cols = np.empty(capacity, dtype=np.int64)
    probs = np.empty(capacity)
    carried = np.zeros(size)
    leaves = np.zeros(size)
    buffer = np.empty(max_cells)
    residual = 0.0
    e = 0
    for t in range(lo, hi):
        i = comp_states[t]
        n = col_ptr[i + 1] - col_ptr[i]
        v, x, y = _solve_stage(i, values, unending, row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, buffer)
        m = x.shape[0]
        residual = max(residual, abs(v - values[i]))
        for r in range(m):
            for c in range(n):
                w = x[r] * y[c]
                if w <= 0.0:
                    continue
                k = cell_ptr[i] + r * n + c
                for j in range(out_ptr[k], out_ptr[k + 1]):
                    nxt = out_next[j]
                    p = w * out_prob[j]
                    if nxt >= 0 and local[nxt] >= 0:
                        rows[e] = t - lo
                        cols[e] = local[nxt]
                        probs[e] = p
                        e += 1
                    else:
                        leaves[t - lo] += p
                        carried[t - lo] += p * (values[nxt] if nxt >= 0 else terminal_payoff[-1 - nxt])
    return rows[:e], cols[:e], probs[:e], carried, leaves, residual


@numba.njit(cache=True)
def _residuals(row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, unending, values, max_cells):
    buffer = np.empty(max_cells)
    residual = np.empty(values.shape[0])
    for i in range(values.shape[0]):
        v = _solve_stage(i, values, unending, row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, buffer)[0]
        residual[i] = abs(v - values[i])
    return residual


def bellman_residual(graph: GameGraph, values: np.ndarray) -> np.ndarray:
    """|value of the stage game built from `values` - values|, per state."""
    return _residuals(
        graph.row_ptr, graph.col_ptr, graph.cell_ptr, graph.out_ptr, graph.out_next,
        graph.out_prob, graph.terminal_payoff, graph.unending_payoff,
        np.ascontiguousarray(values, dtype=np.float64), _max_cells(graph),
    )


def _max_cells(graph: GameGraph) -> int:
    return max(1, int(np.diff(graph.cell_ptr).max(initial=1)))


def solve_values(
    graph: GameGraph,
    components: tuple[np.ndarray, np.ndarray],
    tol: float = 1e-13,
    sweep_limit: int = 60,
    progress=None,
) -> np.ndarray:
    """Values of every state, component by component (see the module docstring)."""
    comp_ptr, comp_states = components
    values = np.full(graph.num_states, graph.unending_payoff)
    local = np.full(graph.num_states, -1, dtype=np.int64)
    c = 0
    step = max(1, graph.num_states // 200)
    while c < comp_ptr.shape[0] - 1:
        c, done, stuck = _solve_components(
            c, comp_ptr, comp_states, graph.row_ptr, graph.col_ptr, graph.cell_ptr,
            graph.out_ptr, graph.out_next, graph.out_prob, graph.terminal_payoff,
            graph.unending_payoff, tol, sweep_limit, values, step, _max_cells(graph),
        )
        if stuck:
            _accelerate(graph, comp_ptr[c], comp_ptr[c + 1], comp_states, local, values, tol)
            done += comp_ptr[c + 1] - comp_ptr[c]
            c += 1
        if progress is not None:
            progress(done)
    return values


def _accelerate(graph, lo, hi, comp_states, local, values, tol, rounds: int = 200) -> None:
    """Converge a slow component: strategy-evaluation (Newton) steps with a
    backtracking line search on the Bellman residual, sweeps when no step
    helps. A step only moves toward a point where the residual is smaller; the
    exact certificate afterwards checks the fixed point reached is the value.
    """
    states = comp_states[lo:hi]
    local[states] = np.arange(states.size)
    cells = _max_cells(graph)
    buffer = np.empty(cells)
    arrays = (graph.row_ptr, graph.col_ptr, graph.cell_ptr, graph.out_ptr, graph.out_next,
              graph.out_prob, graph.terminal_payoff, graph.unending_payoff)
    try:
        chain = _component_chain(lo, hi, comp_states, local, *arrays, values, cells)
        stale = 0
        for _ in range(rounds):
            residual = chain[-1]
            if residual <= tol or stale >= 8:
                break
            target = evaluate_chain(*chain[:-1], graph.unending_payoff)
            accepted = False
            for step in (1.0, 0.5, 0.25, 0.125):
                candidate = values.copy()
                candidate[states] += step * (target - values[states])
                trial = _component_chain(lo, hi, comp_states, local, *arrays, candidate, cells)
                if trial[-1] < residual:
                    values[states] = candidate[states]
                    chain, accepted = trial, True
                    break
            if not accepted:
                for _ in range(30):
                    if _sweep(lo, hi, comp_states, *arrays, values, buffer) <= tol:
                        break
                chain = _component_chain(lo, hi, comp_states, local, *arrays, values, cells)
            stale = stale + 1 if chain[-1] >= 0.5 * residual else 0
    finally:
        local[states] = -1


def evaluate_chain(
    rows: np.ndarray, cols: np.ndarray, probs: np.ndarray, carried: np.ndarray,
    leaves: np.ndarray, unending: float,
) -> np.ndarray:
    """Values of a component's states under fixed strategies (absorbing-chain
    solve); states that can never leave the component are worth `unending`."""
    size = carried.size
    moves = sp.csr_matrix((probs, (rows, cols)), shape=(size, size))
    # Reverse edges plus a root (node `size`) pointing at the states that may leave.
    sources = np.flatnonzero(leaves > 0)
    reverse = sp.csr_matrix(
        (np.ones(rows.size + sources.size), (np.r_[cols, np.full(sources.size, size)], np.r_[rows, sources])),
        shape=(size + 1, size + 1),
    )
    reached = breadth_first_order(reverse, size, return_predecessors=False)
    can_leave = np.zeros(size, dtype=bool)
    can_leave[reached[reached < size]] = True
    result = np.full(size, unending)
    live = np.flatnonzero(can_leave)
    if live.size:
        to_live = moves[live][:, live]
        rhs = carried[live] + unending * np.asarray(moves[live][:, ~can_leave].sum(axis=1)).ravel()
        result[live] = spsolve((sp.identity(live.size, format="csc") - to_live).tocsc(), rhs)
    return result


@numba.njit(cache=True)
def _strategies(
    values, preferred, row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff,
    unending, discount, tol, row_strategy, col_strategy, residual, max_cells, failed,
):
    a_buffer = np.empty(max_cells)
    b_buffer = np.empty(max_cells)
    for i in range(values.shape[0]):
        m = row_ptr[i + 1] - row_ptr[i]
        n = col_ptr[i + 1] - col_ptr[i]
        a = a_buffer[: m * n].reshape((m, n))
        b = b_buffer[: m * n].reshape((m, n))
        _stage_matrix(i, values, 1.0, unending, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, m, n, a)
        _stage_matrix(i, preferred, discount, unending, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, m, n, b)
        try:
            v, x, y = matrix_game_tiebreak_kernel(a, b, tol)
        except Exception:  # left to the LP reference, outside the compiled loop
            failed[i] = True
            continue
        residual[i] = abs(v - values[i])
        row_strategy[row_ptr[i] : row_ptr[i + 1]] = x
        col_strategy[col_ptr[i] : col_ptr[i + 1]] = y


def certified_strategies(
    graph: GameGraph,
    values: np.ndarray,
    preferred: np.ndarray | None = None,
    discount_gap: float = 1e-6,
    tol: float = 1e-12,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row_strategy, col_strategy, bellman_residual): stage-optimal strategies
    for `values` that prefer ending the game (see the module docstring).

    Among the optimal ones, each side takes the best for continuation values
    `preferred` (default: `values`) discounted toward the unending payoff.
    Passing a side's exact guarantee there is a policy-improvement step: it
    prefers the moves whose follow-up is already known to convert.
    """
    preferred = values if preferred is None else preferred
    row_strategy = np.zeros(graph.row_actions.shape[0])
    col_strategy = np.zeros(graph.col_actions.shape[0])
    residual = np.zeros(graph.num_states)
    failed = np.zeros(graph.num_states, dtype=np.bool_)
    _strategies(
        values, preferred, graph.row_ptr, graph.col_ptr, graph.cell_ptr, graph.out_ptr, graph.out_next,
        graph.out_prob, graph.terminal_payoff, graph.unending_payoff, 1.0 - discount_gap, tol,
        row_strategy, col_strategy, residual, _max_cells(graph), failed,
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
