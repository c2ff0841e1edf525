"""The whole solve path: exact values on hand-solvable games, and the game's
properties (symmetry, 1/2 at a symmetric start, certificates, no profitable
deviation, agreement with the plain per-state LP iteration)."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from dict_game import LOSS, WIN, DictGame
from reference import reference_values
from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.notation import parse_position
from rules.charge_spark.state import initial_position
from solver.core.graph import build_graph
from solver.core.solve import solve_from
from solver.core.stage import max_regret


def solved(game, root=0):
    result = solve_from(game, [root], show_progress=False)
    return result, result.answer(root, game)


# --- exact values on hand-solvable games -----------------------------------

def test_win_now_beats_waiting_in_a_won_position():
    # Action 0 wins, action 1 waits: both keep the value at 1 by the values alone,
    # but only winning certifies (waiting lets play run forever).
    game = DictGame({0: {(0, 0): [(1.0, WIN)], (1, 0): [(1.0, 0)]}}, ["win", "wait"])
    result, answer = solved(game)
    assert answer.value == pytest.approx(1.0, abs=1e-12)
    assert answer.row_strategy == {"win": pytest.approx(1.0), "wait": pytest.approx(0.0)}
    assert answer.terminal_probability["P1 wins"] == pytest.approx(1.0)
    assert answer.exploitability <= 1e-12


def test_loser_who_can_stall_forever_gets_a_draw():
    # P2 chooses between losing and stalling: play never ends, value 1/2.
    game = DictGame({0: {(0, 0): [(1.0, WIN)], (0, 1): [(1.0, 0)]}}, ["lose", "stall"])
    _, answer = solved(game)
    assert answer.value == pytest.approx(0.5, abs=1e-12)
    assert answer.unending_probability == pytest.approx(1.0)


def test_matching_with_chance_and_a_cycle_is_worth_two_thirds():
    # Match: P1 wins. Mismatch: coin -- P2 wins, or play again. v = (1 + v/2)/2.
    again = [(0.5, LOSS), (0.5, 0)]
    game = DictGame(
        {0: {(0, 0): [(1.0, WIN)], (1, 1): [(1.0, WIN)], (0, 1): again, (1, 0): again}},
        ["heads", "tails"],
    )
    _, answer = solved(game)
    assert answer.value == pytest.approx(2 / 3, abs=1e-12)
    assert answer.row_strategy["heads"] == pytest.approx(0.5, abs=1e-9)
    assert answer.col_strategy["heads"] == pytest.approx(0.5, abs=1e-9)
    assert answer.exploitability <= 1e-9


# --- Charge & Spark ----------------------------------------------------------

SMALL = {
    "SM-h1-no-bonus": ["board=SM", "health=1", "bonus_cards="],
    "S*M-h1-ray": ["board=S*M", "health=1", "bonus_cards=ray"],
    "S*M-h1-copy-trap-tiles2": [
        "board=S*M", "health=1", "bonus_cards=copy,trap", "battery_tiles=2", "disc_tiles=2",
    ],
}


@cache
def solved_variant(name):
    rules = apply_overrides(RuleSet(), SMALL[name])
    game = ChargeSparkGame(rules)
    root = game.encode(initial_position(rules))
    return rules, game, root, solve_from(game, [root], show_progress=False)


@pytest.mark.parametrize("name", SMALL)
def test_symmetric_start_is_worth_one_half(name):
    _, game, root, result = solved_variant(name)
    assert result.answer(root, game).value == pytest.approx(0.5, abs=1e-9)


@pytest.mark.parametrize("name", SMALL)
def test_swapping_seats_gives_one_minus_the_value(name):
    _, game, _, result = solved_variant(name)
    states = result.states
    rng = np.random.default_rng(3)
    sample = rng.choice(states.size, size=min(2000, states.size), replace=False)
    swapped = np.searchsorted(states, game.swap(states[sample]))
    np.testing.assert_allclose(result.values[sample] + result.values[swapped], 1.0, atol=1e-9)


def test_the_method_says_when_half_the_positions_were_copied_from_their_twins():
    from solver.core.solve import FOLDED_METHOD, LAYERED_METHOD

    rules, game, _, from_start = solved_variant("S*M-h1-ray")
    assert from_start.method == FOLDED_METHOD != LAYERED_METHOD
    lopsided = game.encode(parse_position("b1 rest=spark / rest=move", rules))  # its twin is not reachable
    assert solve_from(game, [lopsided], show_progress=False).method == LAYERED_METHOD


@pytest.mark.parametrize("name", SMALL)
def test_certificate_holds_at_every_state(name):
    _, _, _, result = solved_variant(name)
    assert result.max_exploitability <= 1e-9
    assert result.bellman_residual <= 1e-9
    assert np.all(result.p1_guarantee <= result.p2_guarantee + 1e-9)


@pytest.mark.parametrize("name", SMALL)
def test_no_profitable_pure_deviation(name):
    _, game, _, result = solved_variant(name)
    g = build_graph(game, result.states)
    for i in np.random.default_rng(5).choice(g.num_states, size=300, replace=False):
        matrix = g.stage_matrix(int(i), result.values)
        x = result.row_strategy[g.row_ptr[i] : g.row_ptr[i + 1]]
        y = result.col_strategy[g.col_ptr[i] : g.col_ptr[i + 1]]
        assert max_regret(matrix, x, y, result.values[i]) <= 1e-9


@pytest.mark.parametrize("name", SMALL)
def test_outcome_probabilities_sum_to_one(name):
    _, _, _, result = solved_variant(name)
    total = result.terminal_probability.sum(axis=1) + result.unending_probability
    np.testing.assert_allclose(total, 1.0, atol=1e-9)


def test_unstoppable_move_to_the_moon_wins_for_sure():
    # P2 has no Battery for an attack and no Trap: P1's Move cannot be stopped.
    # P1 has no Battery either, so Move is the only winning card.
    rules = apply_overrides(RuleSet(), ["board=S.M", "health=1", "bonus_cards="])
    game = ChargeSparkGame(rules)
    root = game.encode(parse_position("p1 b0 / b0 d0", rules))
    result = solve_from(game, [root], show_progress=False)
    answer = result.answer(root, game)
    assert answer.value == pytest.approx(1.0, abs=1e-12)
    assert answer.row_strategy["move"] == pytest.approx(1.0)
    assert answer.terminal_probability["P1 wins at the moon"] == pytest.approx(1.0)


PLAIN = {
    "43-states": ["board=SM", "health=1", "bonus_cards=", "battery_tiles=1", "disc_tiles=1", "start_battery=0"],
    "151-states": pytest.param(
        ["board=SM", "health=1", "bonus_cards=", "battery_tiles=1", "disc_tiles=2", "start_battery=0"],
        marks=pytest.mark.slow,
    ),
}


@pytest.mark.parametrize("overrides", PLAIN.values(), ids=PLAIN.keys())
def test_agrees_with_plain_per_state_lp_iteration(overrides):
    rules = apply_overrides(RuleSet(), overrides)
    game = ChargeSparkGame(rules)
    root = game.encode(initial_position(rules))
    result = solve_from(game, [root], show_progress=False)
    plain, _ = reference_values(build_graph(game, result.states), tol=1e-12)
    np.testing.assert_allclose(result.values, plain, atol=1e-9)


@pytest.mark.slow
def test_everett_stalemate_is_certified():
    # Both pawns one step from the moon: Move against Move cancels forever, so
    # the side that must stop the other has only epsilon-optimal strategies
    # (attack with a vanishing probability). The certificate must still close.
    rules = apply_overrides(RuleSet(), ["board=S.M", "health=2", "bonus_cards="])
    game = ChargeSparkGame(rules)
    root = game.encode(parse_position("p1 / b0 d0", rules))
    result = solve_from(game, [root], show_progress=False)
    assert result.max_exploitability <= 1e-9


@pytest.mark.slow
def test_a_component_too_closed_for_sparse_lu_is_solved_densely():
    # With Spark doing no damage, a 4,906-state loop exits with probabilities
    # below rounding against its own mass: sparse LU calls I - P singular, and
    # only the dense GTH elimination sees the exits.
    rules = apply_overrides(RuleSet(), ["board=S*M", "health=1", "damage.spark=0"])
    game = ChargeSparkGame(rules)
    root = game.encode(initial_position(rules))
    result = solve_from(game, [root], show_progress=False)
    assert result.answer(root, game).value == pytest.approx(0.5, abs=1e-9)
    assert result.max_exploitability <= 1e-9
