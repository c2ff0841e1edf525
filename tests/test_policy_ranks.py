"""A policy's games against optimal play and against its best response, in
one rank-by-rank pass (`policy_ranks`), checked against today's path: each
game solved by the solver as a policy game (`policy_play.play_figures`)."""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest

from dict_game import LOSS, WIN, DictGame
from rules.charge_spark.cards import Card
from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.analysis.policy_play import PolicyPlay, play_figures, table_policy
from solver.analysis.policy_ranks import PolicyGames, policy_games
from solver.analysis.skill_gap import greedy_policy, play_mirrors, uniform_policy
from solver.core.outcome import Seat
from solver.core.solve import solve_from

FIELDS = ("value", "p1_win", "p2_win")


def uniform(codes, ptr, actions):
    return uniform_policy(ptr)


def today(game, table, policy, start) -> PolicyGames:
    """Both games as the report solved them before: two rank-by-rank solves."""
    return PolicyGames(
        play_figures(PolicyPlay(game, policy, table_policy(table, Seat.P2)), start, show_progress=False),
        play_figures(PolicyPlay(game, policy, None), start, show_progress=False),
        play_mirrors(game, table, start),
    )


def assert_same_figures(new: PolicyGames, old: PolicyGames) -> None:
    for which in ("against_optimal", "against_best_response"):
        for name in FIELDS:
            assert getattr(getattr(new, which), name) == pytest.approx(getattr(getattr(old, which), name), abs=1e-9), (which, name)
    # Both games are played over the states P2 can reach against the policy: the best-response game's.
    assert new.against_best_response.states == old.against_best_response.states
    assert new.mirrored == old.mirrored


@pytest.fixture(scope="module", params=[
    ["board=SM", "health=1"],
    ["board=S*M", "health=1", "battery_tiles=2", "disc_tiles=2", "bonus_cards=ray,copy"],
], ids=["SM health 1", "tiny S*M"])
def solved(request):
    rules = apply_overrides(RuleSet(), request.param)
    game = ChargeSparkGame(rules)
    start = game.encode(initial_position(rules))
    return rules, game, solve_from(game, [start], show_progress=False), start


def test_the_uniform_policys_games_equal_todays(solved):
    """The uniform policy plays every action: its states are the table's, grouped by rank, none enumerated."""
    _, game, table, start = solved
    new = policy_games(game, table, uniform, start)
    assert_same_figures(new, today(game, table, uniform, start))
    assert new.states == table.num_states


def test_the_greedy_policys_games_equal_todays(solved):
    """The greedy policy plays one action a state: its states are enumerated, far fewer than the table's."""
    rules, game, table, start = solved
    strength = np.array([rules.damage_of(card) for card in Card])
    fallback = [int(Card.CHARGE), int(Card.BARRIER), int(Card.MOVE)]

    def greedy(codes, ptr, actions):
        return greedy_policy(ptr, actions, strength, fallback)

    new = policy_games(game, table, greedy, start)
    assert_same_figures(new, today(game, table, greedy, start))
    assert new.states < table.num_states


def test_two_workers_give_the_same_figures_bit_for_bit(solved):
    _, game, table, start = solved
    assert policy_games(game, table, uniform, start, workers=2) == policy_games(game, table, uniform, start)


class RankedDictGame(DictGame):
    """A `DictGame` whose states' codes are their progress ranks."""

    def progress_rank(self, codes):
        return np.asarray(codes, np.int64)


def test_of_several_best_responses_the_one_ending_play_is_reported():
    """P2 (columns) may stall forever or end the game at even odds: both hold
    P1 to 1/2, but only ending gives P1 a chance to win, and the solver's
    hurried play, which ends games soonest, reports that one. So does the pass:
    in each rank (state 1, then the start, which may stall or go on to 1)."""
    game = RankedDictGame({
        0: {(0, 0): [(1.0, 0)], (0, 1): [(1.0, 1)]},  # stall, or go on to state 1
        1: {(0, 0): [(1.0, 1)], (0, 1): [(0.5, WIN), (0.5, LOSS)]},  # stall, or toss a coin
    }, ["p1", "stall", "move"])
    table = solve_from(game, [0], show_progress=False)
    new = policy_games(game, table, uniform, 0)
    assert new.against_best_response.value == pytest.approx(0.5, abs=1e-12)
    assert new.against_best_response.p1_win == pytest.approx(0.5, abs=1e-12)
    assert_same_figures(new, today(game, table, uniform, 0))


def test_a_strategy_that_no_longer_mirrors_is_found(solved):
    """The table's strategies mirror between the seats (a folded solve); at
    one state P2's no longer does, and the pass, which meets every state,
    says so as the whole table's check does."""
    _, game, table, start = solved
    assert policy_games(game, table, uniform, start).mirrored
    state = int(np.flatnonzero(np.diff(table.col_ptr) > 1)[0])
    col = table.col_strategy.copy()
    lo, hi = table.col_ptr[state], table.col_ptr[state + 1]
    col[lo:hi] = np.eye(hi - lo)[0] if np.allclose(col[lo:hi], 1.0 / (hi - lo)) else np.full(hi - lo, 1.0 / (hi - lo))
    lopsided = replace(table, col_strategy=col)
    assert not play_mirrors(game, lopsided, start)
    assert not policy_games(game, lopsided, uniform, start).mirrored


def test_a_rank_that_fails_stops_the_pass_and_no_worker_waits_for_it(solved):
    """The highest rank fails in a worker: the error comes back, and the
    other worker, whose ranks wait for it, gives up instead of waiting forever."""
    _, game, table, start = solved
    ranks = game.progress_rank(np.asarray(table.states))
    if np.all(ranks == ranks[0]):
        pytest.skip("one rank: solved in this process")
    main = os.getpid()
    top = int(table.states[np.argmax(ranks)])

    def failing(codes, ptr, actions):
        if os.getpid() != main and top in codes:
            raise ValueError("this policy fails")
        return uniform_policy(ptr)

    with pytest.raises(ValueError, match="this policy fails"):
        policy_games(game, table, failing, start, workers=2)


def test_figures_survive_the_results_cache(solved):
    _, game, table, start = solved
    games = policy_games(game, table, uniform, start)
    assert PolicyGames.from_json(games.as_json()) == games
