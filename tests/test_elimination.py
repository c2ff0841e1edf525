"""Eliminating the states with a lone successor before a component's linear solve."""

from __future__ import annotations

import numpy as np
import pytest

from solver.core import linear_solve
from solver.core.elimination import back_substitute, eliminate


def random_component(rng: np.random.Generator, c: int, nearly_closed: bool):
    """A component's system as `build_system` gives it: mostly states with one
    successor (runs of turns), some branching, self-loops, repeated edges,
    states with no exit, and (`nearly_closed`) exits of about 1e-9."""
    rows, cols, vals = [], [], []
    exitm = np.zeros(c)
    for j in range(c):
        lone = rng.random() < 0.7
        targets = [int(rng.integers(c))] if lone else [int(t) for t in rng.integers(0, c, rng.integers(0, 4))]
        if rng.random() < 0.1:
            targets.append(j)
        if targets and rng.random() < 0.05:
            targets.append(targets[0])
        if not targets:
            exitm[j] = 1.0
            continue
        mass = rng.random(len(targets) + 1)
        mass[-1] *= 1e-9 if nearly_closed else 1.0
        if rng.random() < 0.2:
            mass[-1] = 0.0
        mass /= mass.sum()
        rows += [j] * len(targets)
        cols += targets
        vals += list(mass[:-1])
        exitm[j] = mass[-1]
    rows, cols = np.array(rows, np.int64), np.array(cols, np.int64)
    rhs = np.column_stack([exitm * rng.normal(size=c), exitm * rng.random(c)])
    return rows, cols, np.array(vals), exitm, rhs


@pytest.mark.parametrize("nearly_closed", [False, True])
@pytest.mark.parametrize("seed", range(20))
def test_the_solve_with_elimination_equals_sparse_lu_and_dense_elimination(seed, nearly_closed):
    rng = np.random.default_rng(seed)
    c = int(rng.integers(65, 400))
    rows, cols, vals, exitm, rhs = random_component(rng, c, nearly_closed)
    in_r = linear_solve.reach_exit(c, rows, cols, exitm)
    never = np.array([-3.0, 7.0])  # what play that never ends is worth, per column
    solved, ok = linear_solve.component_solve(
        c, rows, cols, vals, exitm, rhs.copy(), in_r, never, np.zeros((0, 2)), linear_solve.DENSE_MAX, 5000,
    )
    reference = linear_solve.fallback_solve(c, rows, cols, vals, exitm, rhs.copy(), in_r, never)
    assert ok
    np.testing.assert_allclose(solved, reference, rtol=0, atol=1e-12 * max(1.0, np.abs(reference).max()))
    np.testing.assert_array_equal(solved[~in_r], np.broadcast_to(never, solved[~in_r].shape))


def csr(c: int, edges: list[tuple[int, int, float]]):
    """(ptr, idx, val) of the transitions `edges` (from, to, mass), by state."""
    edges = sorted(edges)
    ptr = np.zeros(c + 1, np.int64)
    for j, _, _ in edges:
        ptr[j + 1] += 1
    return np.cumsum(ptr), np.array([t for _, t, _ in edges], np.int64), np.array([p for _, _, p in edges])


def test_a_cycle_and_a_state_leading_into_it_are_eliminated_whole_and_solved_exactly():
    # 0 -> 1 -> 2 -> 0 with exits, and 3 -> {0, 1}: all four go, 3 last (its successors gone first).
    ptr, idx, val = csr(4, [(0, 1, 0.5), (1, 2, 0.9), (2, 0, 0.99), (3, 0, 0.5), (3, 1, 0.5)])
    ex = np.array([0.5, 0.1, 0.01, 0.0])
    rhs = np.array([[0.5], [0.0], [0.01], [0.0]])  # 0's and 2's exits win (pay 1), 1's loses
    order, target, coeff, const, alive, core = eliminate(4, ptr, idx, val, ex, rhs)
    assert not core.any() and not alive.any()
    x = np.zeros((4, 1))
    back_substitute(order, target, coeff, const, x)
    # The chance of a win from each state, solved directly.
    p = np.array([[1, -0.5, 0, 0], [0, 1, -0.9, 0], [-0.99, 0, 1, 0], [-0.5, -0.5, 0, 1]])
    np.testing.assert_allclose(x[:, 0], np.linalg.solve(p, [0.5, 0.0, 0.01, 0.0]), rtol=1e-15)


def test_a_state_with_two_successors_among_a_cycle_stays_in_the_core():
    # 0 -> {1, 2}, 1 -> {0, 2}, 2 -> {0, 1}: no state has a lone successor, so none goes.
    ptr, idx, val = csr(3, [(0, 1, 0.5), (0, 2, 0.4), (1, 0, 0.5), (1, 2, 0.5), (2, 0, 0.5), (2, 1, 0.5)])
    order, _, _, _, alive, core = eliminate(3, ptr, idx, val, np.array([0.1, 0.0, 0.0]), np.zeros((3, 1)))
    assert order.size == 0 and core.all() and alive.all()
