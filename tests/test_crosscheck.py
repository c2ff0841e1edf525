"""Independent cross-checks with Gambit and OpenSpiel (the `crosscheck` extra):
our exported stage games read back by both, and our generic solver against
OpenSpiel's value iteration on games we did not write."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.notation import format_position
from rules.charge_spark.state import initial_position
from solver.cli import main
from solver.core.nfg import read_nfg_payoffs, write_nfg
from solver.core.solve import solve_from

SMALL = ["--set", "board=SM", "--set", "health=1", "--set", "bonus_cards="]


def small_answers():
    rules = apply_overrides(RuleSet(), [a for a in SMALL if a != "--set"])
    game = ChargeSparkGame(rules)
    root = game.encode(initial_position(rules))
    result = solve_from(game, [root], show_progress=False)
    picks = result.states[np.random.default_rng(7).choice(result.num_states, 4, replace=False)]
    return [(format_position(game.decode(int(code)), rules), result.answer(int(code), game)) for code in [root, *picks]]


def exported(position, tmp_path, *extra):
    out = tmp_path / "stage.nfg"
    result = CliRunner().invoke(main, ["export-nfg", position, *SMALL, "-o", str(out), *extra])
    assert result.exit_code == 0, result.output
    return out.read_text()


def test_nfg_round_trip_without_other_tools():
    a = np.array([[0.25, 1.0, 0.0], [0.5, -0.125, 1.0]])
    for labels in (False, True):
        text = write_nfg(a, ["x", "y"], ["p", 'q "r"', "s"], 'title "quoted"', labels=labels)
        np.testing.assert_array_equal(read_nfg_payoffs(text), a)


def test_exported_stage_games_read_back_by_gambit_with_our_value(tmp_path):
    gbt = pytest.importorskip("pygambit", reason="the crosscheck extra (pygambit) is not installed")
    for position, answer in small_answers():
        for labels in ((), ("--labels",)):
            path = tmp_path / "g.nfg"
            path.write_text(exported(position, tmp_path, *labels))
            game = gbt.read_nfg(str(path))
            payoffs = np.asarray(game.to_arrays()[0], dtype=float)
            np.testing.assert_allclose(payoffs, np.array(answer.matrix), atol=1e-15)
            if labels:
                assert [s.label for s in list(game.players)[0].strategies] == list(answer.rows)
            value = gbt.nash.lp_solve(game, rational=False).equilibria[0].payoff("Player 1")
            assert value == pytest.approx(answer.value, abs=1e-9)


def test_exported_stage_games_read_back_by_openspiel(tmp_path):
    pyspiel = pytest.importorskip("pyspiel", reason="the crosscheck extra (open-spiel) is not installed")
    from open_spiel.python.egt.utils import game_payoffs_array

    for position, answer in small_answers():
        game = pyspiel.load_nfg_game(exported(position, tmp_path))
        np.testing.assert_allclose(game_payoffs_array(game)[0], np.array(answer.matrix), atol=1e-15)


GAMES = [
    "goofspiel(num_cards=3,imp_info=False,points_order=descending)",
    "goofspiel(num_cards=3,imp_info=False,points_order=random)",
    "goofspiel(num_cards=3,imp_info=False,points_order=random,returns_type=point_difference)",
    "goofspiel(num_cards=3,imp_info=False,points_order=ascending,returns_type=point_difference)",
    "oshi_zumo(coins=3,size=1,horizon=1000,min_bid=1)",
    "oshi_zumo(coins=4,size=1,horizon=1000,min_bid=1)",
    pytest.param("goofspiel(num_cards=4,imp_info=False,points_order=descending)", marks=pytest.mark.slow),
    pytest.param("goofspiel(num_cards=4,imp_info=False,points_order=random,returns_type=point_difference)",
                 marks=pytest.mark.slow),
    pytest.param("oshi_zumo(coins=5,size=2,horizon=1000,min_bid=1)", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("spec", GAMES)
def test_our_solver_matches_openspiel_value_iteration_at_every_state(spec):
    pytest.importorskip("pyspiel", reason="the crosscheck extra (open-spiel) is not installed")
    pytest.importorskip("cvxpy", reason="OpenSpiel's value iteration needs cvxpy (crosscheck extra)")
    from open_spiel.python.algorithms import value_iteration

    from solver.openspiel import OpenSpielGame, load_game

    spiel_game = load_game(spec)
    game = OpenSpielGame(spiel_game)
    result = solve_from(game, [game.root()], show_progress=False)
    theirs = value_iteration.value_iteration(spiel_game, depth_limit=-1, threshold=1e-10)
    ours = {str(game.state(code)): result.values[i] for i, code in enumerate(result.states)}
    # OpenSpiel's value iteration leaves out chance nodes (here: a chance start).
    chance = {str(game.state(code)) for code in result.states if game.state(code).is_chance_node()}
    assert [key for key in ours if key not in theirs] == sorted(chance)
    ours = {key: value for key, value in ours.items() if key not in chance}
    worst = max(abs(theirs[key] - value) for key, value in ours.items())
    assert worst <= 1e-6
    assert result.max_exploitability <= 1e-9


def test_solve_openspiel_command_prints_value_and_first_matrix():
    pytest.importorskip("pyspiel", reason="the crosscheck extra (open-spiel) is not installed")
    import json

    spec = "goofspiel(num_cards=3,imp_info=False,points_order=descending)"
    result = CliRunner().invoke(main, ["solve-openspiel", spec, "--json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["value"] == pytest.approx(0.0, abs=1e-12)  # a symmetric game
    matrix = np.array(answer["matrix"]["values"])
    assert matrix.shape == (3, 3) and np.allclose(matrix, -matrix.T)
    refused = CliRunner().invoke(main, ["solve-openspiel", "kuhn_poker"])
    assert refused.exit_code == 2 and "perfect information" in refused.stderr


def test_charge_spark_as_an_openspiel_game_matches_openspiel_value_iteration():
    pyspiel = pytest.importorskip("pyspiel", reason="the crosscheck extra (open-spiel) is not installed")
    pytest.importorskip("cvxpy", reason="OpenSpiel's value iteration needs cvxpy (crosscheck extra)")
    from open_spiel.python.algorithms import value_iteration

    import rules.charge_spark.openspiel_game  # noqa: F401 - registers the game
    from solver.openspiel import OpenSpielGame

    tiny = "board:SM;health:1;bonus_cards:;battery_tiles:1;disc_tiles:1;start_battery:0"
    spiel_game = pyspiel.load_game(f"charge_spark(overrides={tiny},horizon=6)")
    game = OpenSpielGame(spiel_game)
    result = solve_from(game, [game.root()], show_progress=False)
    theirs = value_iteration.value_iteration(spiel_game, depth_limit=-1, threshold=1e-10)
    worst = max(abs(theirs[str(game.state(code))] - result.values[i]) for i, code in enumerate(result.states))
    assert worst <= 1e-6
    # Same cards and the same first turn as the native engine.
    rules = apply_overrides(RuleSet(), tiny.replace(":", "=").split(";"))
    start = spiel_game.new_initial_state()
    native = ChargeSparkGame(rules).expand(np.array([ChargeSparkGame(rules).encode(initial_position(rules))]))
    assert start.legal_actions(0) == list(native.row_actions)


def test_charge_spark_openspiel_game_with_explicit_chance_for_bonus_draws():
    pyspiel = pytest.importorskip("pyspiel", reason="the crosscheck extra (open-spiel) is not installed")
    import rules.charge_spark.openspiel_game  # noqa: F401

    game = pyspiel.load_game("charge_spark(overrides=board:S*M;health:1,horizon=4)")
    state = game.new_initial_state()
    move = [a for a in state.legal_actions(0) if state.action_to_string(0, a) == "move"][0]
    state.apply_actions([move, move])  # both land on the star: a contested draw
    assert state.is_chance_node()
    probabilities = [p for _, p in state.chance_outcomes()]
    assert len(probabilities) > 1 and sum(probabilities) == pytest.approx(1.0)


def test_bad_game_and_bad_output_path_are_one_line_errors(tmp_path):
    unwritable = CliRunner().invoke(main, ["export-nfg", "start", *SMALL, "-o", str(tmp_path / "no" / "x.nfg")])
    assert unwritable.exit_code == 2 and unwritable.stderr.count("\n") == 1
    assert "cannot write" in unwritable.stderr and not list(tmp_path.iterdir())
    pytest.importorskip("pyspiel", reason="the crosscheck extra (open-spiel) is not installed")
    unknown = CliRunner().invoke(main, ["solve-openspiel", "no_such_game(x=1)"])
    assert unknown.exit_code == 2 and unknown.stderr.count("\n") == 1 and "Unknown game" in unknown.stderr
