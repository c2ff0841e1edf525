"""Sequence-form solves of game trees, checked by independent means: nashpy and a
plain LP on matrix games, known values of small extensive games, and the
dynamic-programming best response (itself checked against enumerating pure
strategies) on random trees with imperfect information."""

from __future__ import annotations

import itertools

import nashpy
import numpy as np
import pytest
import scipy.optimize

from solver.core import sequence_form as sequence_form_module
from solver.core.game_tree import GameTree
from solver.core.sequence_form import (
    SequenceFormError,
    best_response,
    exploitability,
    sequence_form,
    solve_tree,
    strategy_value,
)
from solver.core.stage import solve_matrix_game_lp

TOL = 1e-9

# --- builders ------------------------------------------------------------------


def matrix_tree(M: np.ndarray) -> GameTree:
    """A matrix game: player 1 picks a row, player 2 a column without seeing it."""
    tree = GameTree()
    m, n = M.shape
    root = tree.add_decision(0, "rows", [f"r{i}" for i in range(m)])
    for i in range(m):
        node = tree.add_decision(1, "cols", [f"c{j}" for j in range(n)], parent=root, edge=i)
        for j in range(n):
            tree.add_leaf(M[i, j], parent=node, edge=j)
    return tree


def kuhn_tree() -> GameTree:
    """Kuhn poker, ante 1, bet 1; cards 0 < 1 < 2 dealt one chance node per player."""
    tree = GameTree()
    deal1 = tree.add_chance()
    for c1 in range(3):
        deal2 = tree.add_chance(deal1, c1, 1 / 3)
        for k, c2 in enumerate(c for c in range(3) if c != c1):
            showdown = 1 if c1 > c2 else -1
            p1 = tree.add_decision(0, (c1, ""), ["check", "bet"], deal2, k, 0.5)
            # check
            p2 = tree.add_decision(1, (c2, "c"), ["check", "bet"], p1, 0)
            tree.add_leaf(showdown, p2, 0)
            p1b = tree.add_decision(0, (c1, "cb"), ["fold", "call"], p2, 1)
            tree.add_leaf(-1, p1b, 0)
            tree.add_leaf(2 * showdown, p1b, 1)
            # bet
            p2b = tree.add_decision(1, (c2, "b"), ["fold", "call"], p1, 1)
            tree.add_leaf(1, p2b, 0)
            tree.add_leaf(2 * showdown, p2b, 1)
    return tree


def random_tree(seed: int, rounds: int = 3) -> GameTree:
    """Rounds of (mostly simultaneous) moves with chance between them. Each player's
    information set is keyed by its own observations, which always include its own
    actions (so perfect recall holds) and only sometimes the other's actions or chance
    outcomes; a hidden chance node is hidden entirely, so one set's nodes can lie at
    different depths of the tree."""
    rng = np.random.default_rng(seed)
    tree = GameTree()
    n_actions: dict[tuple[int, tuple], int] = {}

    def decision(player: int, obs: tuple, parent: int, edge: int, probability: float) -> tuple[int, int]:
        k = n_actions.setdefault((player, obs), int(rng.integers(1, 4)))
        node = tree.add_decision(player, obs, [f"a{a}" for a in range(k)], parent, edge, probability)
        return node, k

    def grow(obs: tuple[tuple, tuple], r: int, parent: int, edge: int, probability: float) -> None:
        if r == rounds or (r > 0 and rng.random() < 0.25):
            tree.add_leaf(float(rng.uniform(-1, 1)), parent, edge, probability)
            return
        if r > 0 and rng.random() < 0.5:
            sees = (bool(rng.random() < 0.6), bool(rng.random() < 0.6))
            node = tree.add_chance(parent, edge, probability)
            weights = rng.uniform(0.2, 1.0, size=int(rng.integers(2, 4)))
            for o, w in enumerate(weights / weights.sum()):
                seen = tuple(obs[p] + (("chance", o),) if sees[p] else obs[p] for p in (0, 1))
                _moves(seen, r, node, o, float(w))
            return
        _moves(obs, r, parent, edge, probability)

    def _moves(obs: tuple[tuple, tuple], r: int, parent: int, edge: int, probability: float) -> None:
        movers = [(0, 1), (0, 1), (0,), (1,)][int(rng.integers(4))]
        if movers == (0, 1):
            node1, k1 = decision(0, obs[0], parent, edge, probability)
            p2_sees = bool(rng.random() < 0.3)  # sometimes sequential rather than simultaneous
            for a1 in range(k1):
                o2 = obs[1] + (("opp", a1),) if p2_sees else obs[1]
                node2, k2 = decision(1, o2, node1, a1, 1.0)
                for a2 in range(k2):
                    p1_sees = bool(rng.random() < 0.5)
                    o1 = obs[0] + (("own", a1),) + ((("opp", a2),) if p1_sees else ())
                    grow((o1, o2 + (("own", a2),)), r + 1, node2, a2, 1.0)
        else:
            (p,) = movers
            node, k = decision(p, obs[p], parent, edge, probability)
            for a in range(k):
                other_sees = bool(rng.random() < 0.5)
                new = [obs[0], obs[1]]
                new[p] = obs[p] + (("own", a),)
                if other_sees:
                    new[1 - p] = obs[1 - p] + (("opp", a),)
                grow((new[0], new[1]), r + 1, node, a, 1.0)

    grow(((), ()), 0, -1, 0, 1.0)
    return tree


def pure_strategies(tree: GameTree, player: int):
    sets = tree.infosets_of(player)
    for choice in itertools.product(*(range(len(tree.infosets[i].actions)) for i in sets)):
        yield {i: np.eye(len(tree.infosets[i].actions))[a] for i, a in zip(sets, choice)}


def pair(player: int, own: dict[int, np.ndarray], other: dict[int, np.ndarray]):
    return (own, other) if player == 0 else (other, own)


def random_behaviour(tree: GameTree, player: int, rng: np.random.Generator) -> dict[int, np.ndarray]:
    return {i: rng.dirichlet(np.ones(len(tree.infosets[i].actions))) for i in tree.infosets_of(player)}


def realization_plan(tree: GameTree, player: int, behaviour: dict[int, np.ndarray]) -> np.ndarray:
    sf = sequence_form(tree)
    x = np.zeros(len(sf.sequences[player]))
    x[0] = 1.0
    for i in tree.infosets_of(player):  # first met order: a set's parent sequence is already set
        first, k = sf.first[player][i], len(tree.infosets[i].actions)
        x[first:first + k] = x[sf.parent[player][i]] * behaviour[i]
    return x


def assert_equilibrium(tree: GameTree, payoffs: np.ndarray | None = None, tol: float = TOL):
    sol = solve_tree(tree, payoffs)
    loss1, loss2 = exploitability(tree, sol, payoffs)
    assert -tol <= loss1 <= tol and -tol <= loss2 <= tol, (loss1, loss2)
    assert strategy_value(tree, *sol.behaviour, payoffs) == pytest.approx(sol.value, abs=tol)
    for player in (0, 1):
        assert set(sol.behaviour[player]) == set(tree.infosets_of(player))
        for i, p in sol.behaviour[player].items():
            assert p.shape == (len(tree.infosets[i].actions),)
            assert np.all(p >= 0) and p.sum() == pytest.approx(1.0, abs=1e-12)
    return sol


# --- matrix games --------------------------------------------------------------


def lemke_howson(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """nashpy's Lemke-Howson (pivoting, no LP). nashpy 0.0.43 returns a wrong column
    strategy here when rows outnumber columns, so such games go in transposed."""
    if M.shape[0] <= M.shape[1]:
        return nashpy.Game(M, -M).lemke_howson(initial_dropped_label=0)
    y, x = nashpy.Game(-M.T, M.T).lemke_howson(initial_dropped_label=0)
    return x, y


@pytest.mark.parametrize("seed", range(12))
def test_matrix_games_agree_with_nashpy_and_a_plain_lp(seed):
    rng = np.random.default_rng(seed)
    # At least 2 x 2: nashpy's Lemke-Howson does not end on a single row or column.
    M = rng.uniform(-5, 5, size=(int(rng.integers(2, 6)), int(rng.integers(2, 6))))
    tree = matrix_tree(M)
    sol = assert_equilibrium(tree)
    x, y = sol.behaviour[0][0], sol.behaviour[1][1]
    reference = solve_matrix_game_lp(M)
    assert sol.value == pytest.approx(reference.value, abs=1e-12)
    # Random continuous payoffs: the equilibrium is unique, so every method finds the same one.
    nx, ny = lemke_howson(M)
    for strategy in (reference.row_strategy, nx):
        np.testing.assert_allclose(x, strategy, atol=1e-9)
    for strategy in (reference.col_strategy, ny):
        np.testing.assert_allclose(y, strategy, atol=1e-9)
    assert sol.value == pytest.approx(nx @ M @ ny, abs=1e-12)


@pytest.mark.parametrize("M, value", [
    ([[1, 0], [0, 1]], 0.5),  # matching pennies, payoffs 0/1
    ([[0, -1, 1], [1, 0, -1], [-1, 1, 0]], 0.0),  # rock-paper-scissors
    ([[3, 1], [4, 2]], 2.0),  # saddle point
    ([[7]], 7.0),
    ([[3, -1, 2]], -1.0),
    ([[3], [-1], [2]], 3.0),
])
def test_matrix_games_with_known_values(M, value):
    sol = assert_equilibrium(matrix_tree(np.array(M, dtype=float)))
    assert sol.value == pytest.approx(value, abs=1e-12)
    assert sol.status == 0 and sol.method == "highs-ds"


def test_matching_pennies_matrices_and_strategies():
    tree = matrix_tree(np.array([[1.0, 0.0], [0.0, 1.0]]))
    sf = sequence_form(tree)
    assert sf.sequences[0] == [(-1, -1), (0, 0), (0, 1)] and sf.sequences[1] == [(-1, -1), (1, 0), (1, 1)]
    np.testing.assert_array_equal(sf.E.toarray(), [[1, 0, 0], [-1, 1, 1]])
    np.testing.assert_array_equal(sf.F.toarray(), [[1, 0, 0], [-1, 1, 1]])
    np.testing.assert_array_equal(sf.e, [1, 0])
    np.testing.assert_array_equal(sf.A.toarray(), [[0, 0, 0], [0, 1, 0], [0, 0, 1]])
    sol = solve_tree(tree)
    np.testing.assert_allclose(sol.behaviour[0][0], [0.5, 0.5], atol=1e-12)
    np.testing.assert_allclose(sol.behaviour[1][1], [0.5, 0.5], atol=1e-12)
    # Against a biased opponent the best reply is pure and gains the bias.
    reply = best_response(tree, 0, {1: np.array([0.7, 0.3])})
    assert reply.value == pytest.approx(0.7, abs=1e-15)
    np.testing.assert_array_equal(reply.behaviour[0], [1, 0])
    reply = best_response(tree, 1, {0: np.array([0.7, 0.3])})
    assert reply.value == pytest.approx(0.3, abs=1e-15)
    np.testing.assert_array_equal(reply.behaviour[1], [0, 1])


# --- known extensive games -------------------------------------------------------


def test_kuhn_poker():
    tree = kuhn_tree()
    sol = assert_equilibrium(tree, tol=1e-12)
    assert sol.value == pytest.approx(-1 / 18, abs=1e-12)
    p1 = {tree.infosets[i].key: p for i, p in sol.behaviour[0].items()}
    p2 = {tree.infosets[i].key: p for i, p in sol.behaviour[1].items()}
    # Player 2's equilibrium strategy is unique.
    np.testing.assert_allclose(p2[(0, "c")], [2 / 3, 1 / 3], atol=1e-9)  # bluff a third with the jack
    np.testing.assert_allclose(p2[(0, "b")], [1, 0], atol=1e-9)
    np.testing.assert_allclose(p2[(1, "c")], [1, 0], atol=1e-9)
    np.testing.assert_allclose(p2[(1, "b")], [2 / 3, 1 / 3], atol=1e-9)
    np.testing.assert_allclose(p2[(2, "c")], [0, 1], atol=1e-9)
    np.testing.assert_allclose(p2[(2, "b")], [0, 1], atol=1e-9)
    # Player 1's: one family, bet the jack with alpha in [0, 1/3] and the king with 3 alpha.
    alpha = p1[(0, "")][1]
    assert -1e-9 <= alpha <= 1 / 3 + 1e-9
    assert p1[(2, "")][1] == pytest.approx(3 * alpha, abs=1e-9)
    np.testing.assert_allclose(p1[(1, "")], [1, 0], atol=1e-9)
    assert p1[(1, "cb")][1] == pytest.approx(alpha + 1 / 3, abs=1e-9)
    np.testing.assert_allclose(p1[(0, "cb")], [1, 0], atol=1e-9)
    np.testing.assert_allclose(p1[(2, "cb")], [0, 1], atol=1e-9)


def test_chance_only():
    tree = GameTree()
    root = tree.add_chance()
    tree.add_leaf(3.0, root, 0, 0.25)
    inner = tree.add_chance(root, 1, 0.75)
    tree.add_leaf(-1.0, inner, 0, 0.5)
    tree.add_leaf(2.0, inner, 1, 0.5)
    sol = assert_equilibrium(tree)
    assert sol.value == pytest.approx(0.25 * 3 + 0.75 * 0.5, abs=1e-12)
    assert sol.behaviour == ({}, {})
    assert sequence_form(tree).A.shape == (1, 1)


def test_a_lone_leaf():
    tree = GameTree()
    tree.add_leaf(-4.5)
    assert solve_tree(tree).value == pytest.approx(-4.5, abs=1e-12)


def test_sets_never_reached_get_uniform_play():
    """Player 1 never enters the game, so its set inside it has no realization weight."""
    tree = GameTree()
    root = tree.add_decision(0, "enter?", ["stay", "enter"])
    tree.add_leaf(1.0, root, 0)
    inside = tree.add_decision(0, "inside", ["a", "b", "c"], root, 1)
    for a in range(3):
        tree.add_leaf(-float(a), inside, a)
    sol = assert_equilibrium(tree)
    assert sol.value == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(sol.behaviour[0][1], [1 / 3] * 3, atol=1e-15)


@pytest.mark.parametrize("p", [1e-3, 5e-10, 1e-11])
def test_unlikely_decisions_are_still_taken_right(p):
    """HiGHS by default reads matrix entries below 1e-9 as zero, which would leave this choice to chance."""
    tree = GameTree()
    root = tree.add_chance()
    tree.add_leaf(0.0, root, 0, 1 - p)
    rare = tree.add_decision(0, "rare", ["bad", "good"], root, 1, p)
    tree.add_leaf(0.0, rare, 0)
    tree.add_leaf(1.0, rare, 1)
    sol = solve_tree(tree)
    np.testing.assert_array_equal(sol.behaviour[0][0], [0, 1])
    assert sol.value == pytest.approx(p, rel=1e-9)


def test_one_set_at_different_depths():
    """Player 2 cannot tell 'player 1 went left' from 'right, then chance': the set's
    nodes lie at depths 1 and 2, and the best response must weigh both."""
    tree = GameTree()
    root = tree.add_decision(0, "p1", ["left", "right"])
    p2_left = tree.add_decision(1, "p2", ["x", "y"], root, 0)
    tree.add_leaf(2.0, p2_left, 0)
    tree.add_leaf(0.0, p2_left, 1)
    chance = tree.add_chance(root, 1)
    p2_right = tree.add_decision(1, "p2", ["x", "y"], chance, 0, 0.5)
    tree.add_leaf(0.0, p2_right, 0)
    tree.add_leaf(4.0, p2_right, 1)
    tree.add_leaf(1.0, chance, 1, 0.5)
    assert {tree.infosets[1].nodes[0], tree.infosets[1].nodes[1]} == {p2_left, p2_right}
    sol = assert_equilibrium(tree)
    # Player 1 left with q: x pays 2q + (1 - q)/2, y pays 5(1 - q)/2; equal at q = 1/2.
    # Player 2 x with p: left pays 2p, right 5/2 - 2p; equal at p = 5/8. Value 5/4.
    assert sol.value == pytest.approx(1.25, abs=1e-12)
    np.testing.assert_allclose(sol.behaviour[0][0], [0.5, 0.5], atol=1e-12)
    np.testing.assert_allclose(sol.behaviour[1][1], [5 / 8, 3 / 8], atol=1e-12)


# --- random trees -----------------------------------------------------------------


@pytest.mark.parametrize("seed, rounds", [(seed, 3) for seed in range(40)] + [(seed, 5) for seed in range(10)])
def test_random_trees_are_solved_to_equilibrium(seed, rounds):
    tree = random_tree(seed, rounds)
    assert tree.problem() is None
    assert_equilibrium(tree)


def test_random_trees_cover_the_hard_shapes():
    """The generator does make sets whose nodes lie at different depths, and sizeable trees."""
    uneven = sizes = 0
    for seed in range(40):
        tree = random_tree(seed)
        depth = np.zeros(len(tree), dtype=int)
        for node in range(1, len(tree)):
            depth[node] = depth[tree.parent[node]] + 1
        uneven += any(len({depth[n] for n in s.nodes}) > 1 for s in tree.infosets)
        sizes = max(sizes, len(tree))
    assert uneven >= 5 and sizes >= 200


@pytest.mark.parametrize("seed", range(15))
def test_best_response_matches_enumerating_pure_strategies(seed):
    rng = np.random.default_rng(1000 + seed)
    tree = random_tree(seed, rounds=2)
    for player in (0, 1):
        if np.prod([len(tree.infosets[i].actions) for i in tree.infosets_of(player)]) > 2000:
            continue
        other = random_behaviour(tree, 1 - player, rng)
        values = [strategy_value(tree, *pair(player, b, other)) for b in pure_strategies(tree, player)]
        best = max(values) if player == 0 else min(values)
        reply = best_response(tree, player, other)
        assert reply.value == pytest.approx(best, abs=1e-12)
        assert strategy_value(tree, *pair(player, reply.behaviour, other)) == pytest.approx(best, abs=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_payoff_matrix_prices_every_strategy_pair(seed):
    rng = np.random.default_rng(seed)
    tree = random_tree(seed)
    sf = sequence_form(tree)
    b1, b2 = random_behaviour(tree, 0, rng), random_behaviour(tree, 1, rng)
    x, y = realization_plan(tree, 0, b1), realization_plan(tree, 1, b2)
    np.testing.assert_allclose(sf.E @ x, sf.e, atol=1e-12)
    np.testing.assert_allclose(sf.F @ y, sf.f, atol=1e-12)
    assert x @ (sf.A @ y) == pytest.approx(strategy_value(tree, b1, b2), abs=1e-12)


# --- payoffs override --------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_raising_leaf_payoffs_never_lowers_the_value(seed):
    rng = np.random.default_rng(seed)
    tree = random_tree(seed)
    base = tree.payoffs()
    leaves = tree.leaves()
    value = solve_tree(tree).value
    assert solve_tree(tree, base).value == pytest.approx(value, abs=1e-12)
    for _ in range(3):
        raised = base.copy()
        raised[leaves] += rng.uniform(0, 1, size=len(leaves)) * (rng.random(len(leaves)) < 0.3)
        assert solve_tree(tree, raised).value >= value - 1e-12
        assert_equilibrium(tree, raised)
    # An affine map of the payoffs maps the value the same way.
    assert solve_tree(tree, 3.0 * base + 2.0).value == pytest.approx(3.0 * value + 2.0, abs=1e-10)


def test_payoffs_override_changes_only_the_payoff_matrix():
    tree = kuhn_tree()
    doubled = 2.0 * tree.payoffs()
    a, b = sequence_form(tree), sequence_form(tree, doubled)
    np.testing.assert_allclose(b.A.toarray(), 2.0 * a.A.toarray())
    assert (a.E != b.E).nnz == 0 and (a.F != b.F).nnz == 0
    assert solve_tree(tree, doubled).value == pytest.approx(-1 / 9, abs=1e-12)


# --- errors --------------------------------------------------------------------------


def _childless():
    tree = GameTree()
    tree.add_decision(0, "root", ["a"])
    return tree


def _forgetful():
    tree = GameTree()
    root = tree.add_decision(0, "first", ["a", "b"])
    for a in range(2):
        node = tree.add_decision(0, "second", ["c", "d"], root, a)  # forgets its own first move
        tree.add_leaf(0.0, node, 0)
        tree.add_leaf(1.0, node, 1)
    return tree


def _bad_chance():
    tree = GameTree()
    root = tree.add_chance()
    tree.add_leaf(0.0, root, 0, 0.5)
    tree.add_leaf(1.0, root, 1, 0.4)
    return tree


@pytest.mark.parametrize("build, message", [
    (_childless, "has no children"),
    (_forgetful, "no perfect recall"),
    (_bad_chance, "probabilities sum to"),
    (GameTree, "empty"),
])
@pytest.mark.parametrize("call", [
    solve_tree,
    sequence_form,
    lambda tree: best_response(tree, 0, {}),
    lambda tree: strategy_value(tree, {}, {}),
])
def test_rejected_trees_raise_a_clear_value_error(build, message, call):
    with pytest.raises(ValueError, match=message) as info:
        call(build())
    assert isinstance(info.value, SequenceFormError)


def test_bad_arguments_raise_value_errors():
    tree = kuhn_tree()
    with pytest.raises(ValueError, match="one entry per node"):
        solve_tree(tree, np.zeros(3))
    bad = tree.payoffs()
    bad[tree.leaves()[0]] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        solve_tree(tree, bad)
    with pytest.raises(ValueError, match="player must be 0 or 1"):
        best_response(tree, 2, {})
    with pytest.raises(ValueError, match="lacks"):
        best_response(tree, 0, {})
    sol = solve_tree(tree)
    with pytest.raises(ValueError, match="lacks"):
        strategy_value(tree, sol.behaviour[0], {i: p[:1] for i, p in sol.behaviour[1].items()})


def test_a_failed_lp_raises_instead_of_returning_garbage(monkeypatch):
    tree = kuhn_tree()
    real = scipy.optimize.linprog

    def failing(*args, **kwargs):
        return scipy.optimize.OptimizeResult(status=4, message="numerical difficulties", x=None, ineqlin=None)

    monkeypatch.setattr(scipy.optimize, "linprog", failing)
    with pytest.raises(SequenceFormError, match="status 4"):
        solve_tree(tree)

    def garbled_duals(*args, **kwargs):
        res = real(*args, **kwargs)
        res.ineqlin.marginals = res.ineqlin.marginals[::-1].copy()
        return res

    monkeypatch.setattr(scipy.optimize, "linprog", garbled_duals)
    with pytest.raises(SequenceFormError, match="misses F y = f"):
        solve_tree(tree)


def test_an_option_highs_rejects_is_an_error(monkeypatch):
    monkeypatch.setitem(sequence_form_module._HIGHS_OPTIONS, "primal_feasibility_tolerance", 1e-13)
    with pytest.raises(SequenceFormError, match="rejected"):
        solve_tree(kuhn_tree())
