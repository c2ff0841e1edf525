"""Components where a side has no stationary optimal strategy (Everett's recursive games)."""

from __future__ import annotations

import numpy as np
import pytest

from dict_game import LOSS, WIN, DictGame
from rules.charge_spark.config import apply_overrides, rules_from_mapping
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.core.best_response import best_response_values
from solver.core.bracketing import _epsilon_optimal, component_games
from solver.core.everett import leaking_game
from solver.core.graph import build_graph
from solver.core.shapley import stage_strategies
from solver.core.solve import solve_from

HIDE_OR_RUN = DictGame(
    # P1 runs home (wins) unless P2 throws in the same turn; a throw at a hiding P1 is wasted
    # (P1 walks home). Value 1, approached only by running with a vanishing probability.
    {0: {(0, 0): [(1.0, 0)], (0, 1): [(1.0, WIN)], (1, 0): [(1.0, WIN)], (1, 1): [(1.0, LOSS)]}},
    ["hide/wait", "run/throw"],
)


def test_a_leaking_game_stops_each_turn_and_pays_each_state_its_own_stop_payoff():
    graph = build_graph(HIDE_OR_RUN, np.array([0]))
    leaking = leaking_game(graph, 1e-4, np.array([0.3]))
    assert leaking.terminal_payoff[-1] == 0.3
    for cell in range(leaking.num_cells):
        lo, hi = leaking.out_ptr[cell], leaking.out_ptr[cell + 1]
        assert leaking.out_prob[lo:hi].sum() == pytest.approx(1.0, abs=1e-15)
        assert leaking.out_next[hi - 1] == -1 - graph.terminal_payoff.size
        assert leaking.out_prob[hi - 1] == 1e-4
        kept = leaking.out_prob[lo : hi - 1]
        original = graph.out_prob[graph.out_ptr[cell] : graph.out_ptr[cell + 1]]
        assert np.array_equal(kept, (1.0 - 1e-4) * original)


def test_each_state_of_a_leaking_game_stops_to_its_own_payoff():
    game = DictGame({0: {(0, 0): [(1.0, 1)]}, 1: {(0, 0): [(1.0, 0)]}}, ["wait"])
    graph = build_graph(game, np.array([0, 1]))
    leaking = leaking_game(graph, 0.5, np.array([0.2, 0.9]))
    for state, stop in enumerate((0.2, 0.9)):
        last = leaking.out_ptr[leaking.cell_ptr[state + 1]] - 1  # the stop outcome of the state's one cell
        assert leaking.terminal_payoff[-1 - leaking.out_next[last]] == stop


def test_a_stalling_strategy_is_replaced_by_one_that_guarantees_nearly_the_value():
    # Stage-optimal at the value, P1 hides for ever (0.5 against a waiting P2): the
    # costly-delay strategy runs with a small probability and guarantees nearly
    # the value; what it guarantees is exact, and the estimate is the bracket's middle.
    graph = build_graph(HIDE_OR_RUN, np.array([0]))
    hide = np.array([1.0, 0.0])
    low = best_response_values(graph, 0, hide)
    col = stage_strategies(graph, np.ones(1), side=1)[1]
    high = best_response_values(graph, 1, col)
    assert low[0] == pytest.approx(0.5) and high[0] == pytest.approx(1.0)
    from solver.core import phase_clock

    phase_clock.taken()
    row, _, lower, upper, estimate = _epsilon_optimal(graph, graph, hide, col, low, high, 1e-11)
    assert phase_clock.taken().get("bracket: costly-delay rounds", 0.0) > 0.0  # the solve-cost figure's share
    assert 0.0 < row[1] < 0.01
    assert 1.0 - 3e-3 <= lower[0] <= 1.0 <= upper[0] + 1e-15
    assert lower[0] == pytest.approx(best_response_values(graph, 0, row)[0], abs=1e-15)
    assert lower[0] <= estimate[0] <= upper[0]


@pytest.mark.slow
def test_spark_dealing_two_with_recovery_is_bracketed_and_stated_not_certified():
    # Board S*M, health 1, Spark dealing 2: a 6,155-state component where P1's
    # stage-optimal strategies at the value stall (0.5 short), which failed the
    # certificate at 0.25. Now every value lies between both sides' exact
    # guarantees, at most a few thousandths apart, and the value is the Shapley
    # fixed point (its Bellman residual within that epsilon).
    rules = apply_overrides(rules_from_mapping({}), ["board=S*M", "health=1", "damage.spark=2"])
    game = ChargeSparkGame(rules)
    result = solve_from(game, [game.encode(initial_position(rules))])
    # Within the certificate's bound: where certified, a hurried guarantee may pass the
    # value solve's middle by the bracket's width (2e-11).
    assert np.all(np.asarray(result.p1_guarantee) <= np.asarray(result.values) + 1e-9)
    assert np.all(np.asarray(result.values) <= np.asarray(result.p2_guarantee) + 1e-9)
    assert 1e-9 < result.max_exploitability <= 1e-2
    assert result.bellman_residual <= 1e-2


def test_a_component_cut_out_keeps_its_exits_when_rescued():
    # The rescue reads the cut-out component's own graphs: exits pay each side
    # its guarantee, so what it certifies composes with the rest of the game.
    graph = build_graph(HIDE_OR_RUN, np.array([0]))
    local = np.zeros(1, np.int64)
    p1_game, p2_game = component_games(graph, np.array([0]), local, [np.zeros(1), np.ones(1)])
    hide = np.array([1.0, 0.0])
    col = stage_strategies(p2_game, np.ones(1), side=1)[1]
    low, high = best_response_values(p1_game, 0, hide), best_response_values(p2_game, 1, col)
    row, _, lower, upper, _ = _epsilon_optimal(p1_game, p2_game, hide, col, low, high, 1e-11)
    assert lower[0] == pytest.approx(best_response_values(p1_game, 0, row)[0], abs=1e-15)
    assert lower[0] >= 1.0 - 3e-3 and upper[0] == pytest.approx(1.0)
