"""A solve that keeps only a start's figures (`solve_start_figures`) gives the
full solve's figures there, with or without hurried play."""

from __future__ import annotations

import numpy as np
import pytest

from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.analysis.restricted import WithoutRowAction
from solver.core.outcome import Seat
from solver.core.solve import solve_from, solve_start_figures

RULES = {
    "a-star-and-a-ray": ["board=S*M", "health=1", "bonus_cards=ray"],
    "longer-board-trap": ["board=S..M", "health=1", "bonus_cards=trap"],
}


def _game(overrides, banned: str | None = None):
    rules = apply_overrides(RuleSet(), overrides)
    game = ChargeSparkGame(rules)
    root = game.encode(initial_position(rules))
    if banned is not None:
        game = WithoutRowAction(game, game.action_labels.index(banned))
    return game, root


@pytest.fixture(scope="module", params=RULES.values(), ids=RULES.keys())
def solved(request):
    game, root = _game(request.param)
    return game, root, solve_from(game, [root], show_progress=False)


def test_hurried_figures_at_the_start_are_the_full_solves(solved):
    game, root, full = solved
    figures = solve_start_figures(game, [root], hurried=True)
    i = full.index_of(root)
    assert figures.num_states == full.num_states
    assert figures.values[0] == full.values[i]
    assert figures.p1_guarantee[0] == full.p1_guarantee[i]
    assert figures.p2_guarantee[0] == full.p2_guarantee[i]
    np.testing.assert_array_equal(figures.terminal_probability[0], full.terminal_probability[i])
    assert figures.ending_turns[0] == full.ending_turns[i]
    assert figures.win_probability(0, Seat.P1) == full.win_probability(i, Seat.P1)
    assert figures.max_exploitability == pytest.approx(full.max_exploitability, abs=1e-15)
    assert figures.hurried and figures.terminal_labels == full.terminal_labels


def test_value_figures_keep_the_value_and_the_certificate(solved):
    game, root, full = solved
    figures = solve_start_figures(game, [root], hurried=False)
    i = full.index_of(root)
    assert figures.values[0] == full.values[i]  # hurried play never moves a value
    assert figures.p1_guarantee[0] <= figures.values[0] <= figures.p2_guarantee[0]
    assert figures.max_exploitability <= 1e-9
    assert not figures.hurried and "no hurried play" in figures.method
    # The value solve's strategies end the game as surely as hurried play's, or stall: never more.
    assert figures.terminal_probability[0].sum() + figures.unending_probability[0] == pytest.approx(1.0, abs=1e-9)


def test_a_game_with_seats_unlike_on_two_workers_gives_the_same_figures():
    game, root = _game(RULES["a-star-and-a-ray"], banned="ray")  # P1 barred from Ray: no seat fold
    full = solve_from(game, [root], show_progress=False)
    figures = solve_start_figures(game, [root], hurried=False, workers=2)
    assert figures.values[0] == full.values[full.index_of(root)]
    assert figures.values[0] < 0.5  # P1 loses something by giving up a card
    assert figures.max_exploitability <= 1e-9


def test_a_root_that_is_not_solved_is_refused():
    game, root = _game(RULES["a-star-and-a-ray"])
    with pytest.raises(KeyError):
        solve_start_figures(game, [root], hurried=False).index_of(root + 1)
