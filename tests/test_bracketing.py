"""Component-by-component bracketing: cut-out components behave like the
whole game, the bookkeeping agrees with an independent global best response,
and games with only epsilon-optimal strategies still close their bracket."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from dict_game import LOSS, WIN, DictGame
from random_games import random_graph
from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.core.best_response import best_response_values
from solver.core.bracketing import GAP_TOL, bracket_values, component_games, mirrors_strategies, seat_mirror
from solver.core.components import strongly_connected_components
from solver.core.graph import build_graph, reachable_states
from solver.core.shapley import _solve_stage, bellman_residual, max_cells, shapley_sweeps


@cache
def variant_graph(*overrides):
    rules = apply_overrides(RuleSet(), list(overrides))
    game = ChargeSparkGame(rules)
    root = game.encode(initial_position(rules))
    graph = build_graph(game, reachable_states(game, np.array([root])))
    components = strongly_connected_components(graph)
    return graph, components, graph.index_of(root)


RAY = ("board=S*M", "health=1", "bonus_cards=ray")


def test_a_cut_out_component_has_the_guarantees_of_the_whole_game():
    graph, components, _ = variant_graph(*RAY)
    bracket = bracket_values(graph, components)
    comp_ptr, comp_states = components
    biggest = int(np.argmax(np.diff(comp_ptr)))
    states = comp_states[comp_ptr[biggest] : comp_ptr[biggest + 1]]
    assert states.size > 100
    local = np.full(graph.num_states, -1, np.int64)
    local[states] = np.arange(states.size)
    p1_game, p2_game = component_games(graph, states, local, [bracket.lower, bracket.upper])
    outside = np.setdiff1d(np.arange(graph.num_states), states)
    assert np.all(local[outside] == -1)  # the scratch marks of exits are cleared
    rows = np.concatenate([np.arange(graph.row_ptr[s], graph.row_ptr[s + 1]) for s in states])
    cols = np.concatenate([np.arange(graph.col_ptr[s], graph.col_ptr[s + 1]) for s in states])
    whole_lower = best_response_values(graph, 0, bracket.row_strategy)
    whole_upper = best_response_values(graph, 1, bracket.col_strategy)
    cut_lower = best_response_values(p1_game, 0, bracket.row_strategy[rows])
    cut_upper = best_response_values(p2_game, 1, bracket.col_strategy[cols])
    assert np.abs(cut_lower - whole_lower[states]).max() <= 1e-12
    assert np.abs(cut_upper - whole_upper[states]).max() <= 1e-12


@pytest.mark.parametrize("overrides", [RAY, ("board=SM", "health=1", "bonus_cards=")])
def test_bookkeeping_matches_an_independent_global_best_response(overrides):
    graph, components, root = variant_graph(*overrides)
    bracket = bracket_values(graph, components)
    lower = best_response_values(graph, 0, bracket.row_strategy)
    upper = best_response_values(graph, 1, bracket.col_strategy)
    assert np.abs(lower - bracket.lower).max() <= 1e-11
    assert np.abs(upper - bracket.upper).max() <= 1e-11
    assert (upper - lower).max() <= 1e-10
    assert (upper - lower).min() >= -1e-12
    assert lower[root] <= 0.5 <= upper[root] + 1e-12


def test_epsilon_optimal_play_closes_the_bracket():
    # Hide or run: P1 runs home (wins) unless P2 throws the one snowball in the
    # same turn; a throw at a hiding P1 wastes it (P1 walks home). Value 1, but
    # only approached by running with a vanishing probability each turn.
    game = DictGame(
        {0: {(0, 0): [(1.0, 0)], (0, 1): [(1.0, WIN)], (1, 0): [(1.0, WIN)], (1, 1): [(1.0, LOSS)]}},
        ["hide/wait", "run/throw"],
    )
    graph = build_graph(game, np.array([0]))
    bracket = bracket_values(graph, strongly_connected_components(graph))
    assert bracket.upper[0] == pytest.approx(1.0, abs=1e-15)
    assert 1.0 - bracket.lower[0] <= 10 * GAP_TOL
    run = bracket.row_strategy[1]
    assert 0.0 < run < 1e-6
    assert best_response_values(graph, 0, bracket.row_strategy)[0] == pytest.approx(bracket.lower[0], abs=1e-15)


def test_slow_components_close_in_a_few_rounds():
    # On board SM at health 2, three cyclic components need one side to mix
    # with a vanishing probability. Aimed at the bracket's middle, each side
    # only halved its distance to the value a round (29-31 rounds each);
    # aimed past the sweeps' estimate of the value, they close in a few.
    graph, components, root = variant_graph("board=SM", "health=2", "bonus_cards=")
    bracket = bracket_values(graph, components)
    assert bracket.rounds.max() <= 5
    assert np.max(bracket.upper - bracket.lower) <= GAP_TOL
    lower = best_response_values(graph, 0, bracket.row_strategy)
    upper = best_response_values(graph, 1, bracket.col_strategy)
    assert np.abs(lower - bracket.lower).max() <= 1e-12 and np.abs(upper - bracket.upper).max() <= 1e-12


def test_a_retry_that_does_not_narrow_the_bracket_is_the_last(monkeypatch):
    # A component left wider than RETRY_GAP is retried after more sweeps; when
    # that retry ends no narrower, the longer retries after it are skipped.
    import solver.core.bracketing as bracketing

    game = DictGame(
        {0: {(0, 0): [(1.0, 0)], (0, 1): [(1.0, WIN)], (1, 0): [(1.0, WIN)], (1, 1): [(1.0, LOSS)]}},
        ["hide/wait", "run/throw"],
    )
    graph = build_graph(game, np.array([0]))
    real, widths, sweeps = bracketing.refine_by_best_responses, [], []

    def stuck(p1_game, values, **kwargs):
        refined = real(p1_game, values, **kwargs)
        lower = refined.upper - widths[len(sweeps)]  # pretend it ended this wide
        sweeps.append(len(sweeps))
        return refined._replace(lower=lower)

    monkeypatch.setattr(bracketing, "refine_by_best_responses", stuck)
    assert len(bracketing.RETRY_SWEEPS) == 2
    for first, then, calls in ((1e-6, 1e-6, 2), (1e-6, 1e-7, 3)):
        widths[:], sweeps[:] = [first, then, 1e-8], []
        bracket = bracket_values(graph, strongly_connected_components(graph))
        assert len(sweeps) == calls
        assert bracket.upper[0] - bracket.lower[0] == pytest.approx(widths[calls - 1] if first > then else first)


def scripted_rounds(monkeypatch, guarantees):
    """Run `refine_by_best_responses` where P1's strategy of round k guarantees
    guarantees[0][k - 1] and P2's guarantees[1][k - 1], and the value is
    estimated as the middle of the bounds; returns its result, the target of
    each stage re-solve in order (P1's, then P2's, per round) and the bounds
    each estimate started from."""
    import solver.core.bracketing as bracketing

    solved, targets, starts = [], [], []

    def middle(p1_graph, p2_graph, low, high):
        starts.append((low.copy(), high.copy()))
        return 0.5 * (low + high)

    def strategies(graph, target, preferred=None, side=None):
        solved.append(side)
        targets.append(np.array(target))
        return (f"row {len(solved)}", f"col {len(solved)}", None)

    def guarantee(graph, seat, strategy, guess=None):
        # Each best response starts from what the strategy was aimed at: the target of its stage re-solve.
        assert guess is not None
        assert np.array_equal(guess, [t for t, side in zip(targets, solved) if side == seat][-1])
        reply = f"reply to {strategy}"
        return np.asarray(guarantees[seat][solved.count(seat) - 1], np.float64), reply

    monkeypatch.setattr(bracketing, "stage_strategies", strategies)
    monkeypatch.setattr(bracketing, "best_response", guarantee)
    monkeypatch.setattr(bracketing, "_anchor", middle)
    return bracketing.refine_by_best_responses(None, np.zeros(2)), targets, starts


VALUE = np.array([0.3, 0.6])


def test_each_side_keeps_its_best_strategy_across_rounds(monkeypatch):
    # What a strategy guarantees does not depend on the other side's, so the
    # bracket pairs P1's strategy of round 1 with P2's of round 2 when each is
    # its side's best, instead of settling for the best single round.
    p1 = [VALUE - [1e-12, 0.0], VALUE - [1e-3, 1e-3]]  # good in round 1, worse in round 2
    p2 = [VALUE + [1e-3, 0.0], VALUE + [0.0, 1e-12]]  # the other way round
    (row, col, lower, upper, rounds, p1_reply, p2_reply), _, _ = scripted_rounds(monkeypatch, [p1, p2])
    assert rounds == 2
    assert (row, col) == ("row 1", "col 4")
    assert (p1_reply, p2_reply) == ("reply to row 1", "reply to col 4")  # each kept with its strategy
    np.testing.assert_array_equal(lower, p1[0])
    np.testing.assert_array_equal(upper, p2[1])


def test_sweeps_start_from_the_tightest_bounds_found_state_by_state(monkeypatch):
    # No single round brackets both states, but together the rounds pin the
    # value at each: the third round's sweeps start from those state-wise
    # bounds, and each side aims a nudge past the estimate they give.
    from solver.core.bracketing import NUDGE

    p1 = [VALUE - [0.0, 2e-4], VALUE - [2e-4, 0.0], VALUE - 1e-12]
    p2 = [VALUE + [0.0, 2e-4], VALUE + [2e-4, 0.0], VALUE + 1e-12]
    (row, col, lower, upper, rounds, _, _), targets, starts = scripted_rounds(monkeypatch, [p1, p2])
    assert rounds == 3 and (row, col) == ("row 5", "col 6")
    np.testing.assert_array_equal(starts[0][0], p1[0])  # round 2: round 1's guarantees, the only ones then
    np.testing.assert_array_equal(starts[1][0], VALUE)  # round 3: the largest of P1's guarantees ...
    np.testing.assert_array_equal(starts[1][1], VALUE)  # ... and the smallest of P2's, state by state
    np.testing.assert_array_equal(targets[4], VALUE)  # aimed past the estimate, kept within the bounds
    np.testing.assert_array_equal(targets[5], VALUE)
    np.testing.assert_array_equal(targets[2], np.maximum(p1[0], 0.5 * (p1[0] + p2[0]) - NUDGE))


def test_seat_swapped_twins_are_copied_and_still_certify():
    graph, components, root = variant_graph(*RAY)
    rules = apply_overrides(RuleSet(), list(RAY))
    twin = seat_mirror(graph, ChargeSparkGame(rules).swap(graph.states))
    assert twin is not None and np.array_equal(twin[twin], np.arange(graph.num_states))
    mirrored = bracket_values(graph, components, mirror=twin)
    assert np.count_nonzero(mirrored.rounds == 0) > 0  # some cyclic components were copied
    lower = best_response_values(graph, 0, mirrored.row_strategy)
    upper = best_response_values(graph, 1, mirrored.col_strategy)
    assert (upper - lower).max() <= 1e-10
    np.testing.assert_allclose(lower + upper[twin], 1.0, atol=1e-10)
    # Every state's strategies are its twin's seen from the other seat, also in
    # components that are their own twin (P2 there plays P1's strategy mirrored).
    assert mirrors_strategies(graph, twin, mirrored.row_strategy, mirrored.col_strategy)
    np.testing.assert_allclose(mirrored.upper, 1.0 - mirrored.lower[twin], atol=1e-14)
    plain = bracket_values(graph, components)
    np.testing.assert_allclose(0.5 * (lower + upper), 0.5 * (plain.lower + plain.upper), atol=1e-10)


def test_no_mirror_without_a_symmetric_game():
    game = DictGame({0: {(0, 0): [(1.0, WIN)], (1, 0): [(1.0, 0)]}}, ["win", "wait"])
    graph = build_graph(game, np.array([0]))
    assert seat_mirror(graph, None) is None
    assert seat_mirror(graph, np.array([0])) is None  # P1 has two actions, P2 one: not a twin


def _every_state_sweeps(graph, states, values, sweeps, tol):
    """Gauss-Seidel sweeps that solve every state every time, with the same stage kernel."""
    buffer = np.empty(max_cells(graph))
    arrays = (graph.unending_payoff, graph.row_ptr, graph.col_ptr, graph.cell_ptr, graph.out_ptr, graph.out_next,
              graph.out_prob, graph.terminal_payoff)
    change = np.inf
    for _ in range(sweeps):
        change = 0.0
        for i in states:
            v = _solve_stage(int(i), values, *arrays, buffer)[0]
            change = max(change, abs(v - values[i]))
            values[i] = v
        if change <= tol:
            break
    return change


@pytest.mark.parametrize("seed", range(8))
def test_sweeps_that_skip_unchanged_states_give_what_solving_every_state_gives(seed):
    # A state none of whose successors changed since it was last solved is skipped: its stage
    # game, and so its value, would be the same; a state solved again first tries its last
    # supports. The values are those of solving every state by the simplex, to round-off, over
    # part of a game (the rest read, not changed), and the long run settles where it does.
    rng = np.random.default_rng(5000 + seed)
    graph = random_graph(rng, int(rng.integers(20, 60)), max_actions=3, max_outcomes=3,
                         p_terminal=float(rng.choice([0.02, 0.1])))
    states = rng.permutation(graph.num_states)[: int(0.8 * graph.num_states)]
    others = np.setdiff1d(np.arange(graph.num_states), states)
    start = rng.random(graph.num_states)
    for sweeps, tol in ((3, 0.0), (500, 1e-13)):
        skipping, every = start.copy(), start.copy()
        change = shapley_sweeps(graph, states, skipping, sweeps, tol)
        every_change = _every_state_sweeps(graph, states, every, sweeps, tol)
        np.testing.assert_allclose(skipping, every, rtol=0.0, atol=1e-12)
        np.testing.assert_array_equal(skipping[others], start[others])
    assert change <= 1e-13 and every_change <= 1e-13  # the long run settled
    assert bellman_residual(graph, skipping)[states].max() <= 1e-12  # at the fixed point
