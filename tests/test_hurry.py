"""Hurried optimal play: the reported strategies end games as soon as optimal play can.

Interactions covered: hide or run (only epsilon-optimal strategies for the
side that must act), a standoff (Move against Move cancels, nothing attacks),
a loser that could stall, the buzzer's independence of eta, and the values
and certificates against the value solve's own choice.
"""

from __future__ import annotations

import numpy as np
import pytest

import solver.core.hurry as hurry_module
import solver.core.layered as layered
from dict_game import LOSS, WIN, DictGame
from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.analysis.stalls import median_length
from solver.core.absorption import expected_length_and_distribution
from solver.core.hurry import Hurried, fallback_marks
from solver.core.play import play_from
from solver.core.solve import solve_from

HIDE_OR_RUN = DictGame(
    {0: {(0, 0): [(1.0, 0)], (0, 1): [(1.0, WIN)], (1, 0): [(1.0, WIN)], (1, 1): [(1.0, LOSS)]}},
    ["hide/wait", "run/throw"],
)


def test_hide_or_run_ends_in_one_turn_and_p1_keeps_its_guarantee():
    """P1 runs home (wins) unless P2 throws the one snowball in the same turn;
    a throw at a hiding P1 wastes it. Value 1, approached only by running with
    a vanishing probability. The value solve's tie-break (discounted towards
    1/2) had P2 mostly wait: here it threw with probability 1/63 a turn, 63
    turns on average (the regression this guards: the length grows as the
    inverse of whatever small number sets P2's pace). P2 throwing ends it at
    once, and costs it nothing: it loses anyway."""
    result = solve_from(HIDE_OR_RUN, [0], show_progress=False)
    assert result.expected_length(0) <= 1.0 + 1e-6
    assert result.p1_guarantee[0] >= 1.0 - 1e-9
    assert result.col_strategy[1] == pytest.approx(1.0)  # P2 throws
    assert 0.0 < result.row_strategy[1] < 1e-6  # P1 still runs with a vanishing probability
    assert result.max_exploitability <= 1e-9
    assert result.strict_exploitability.max() <= 1e-9
    assert result.fallback_states == 0


STANDOFF = DictGame({0: {(0, 0): [(1.0, 0)], (0, 1): [(1.0, 0)], (1, 0): [(1.0, 0)], (1, 1): [(1.0, 0)]}}, ["move", "charge"])


def test_a_standoff_never_ends_and_its_value_depends_on_how_endless_play_is_scored():
    result = solve_from(STANDOFF, [0], show_progress=False)
    assert result.values[0] == pytest.approx(0.5)
    assert result.unending_probability[0] == pytest.approx(1.0)
    assert np.isnan(result.expected_length(0))
    # Scored as P1's loss the value is 0, as P2's 1: it depends on the scoring by 1/2.
    assert result.unending_dependence[0] == pytest.approx(0.5)
    assert result.strict_exploitability.max() <= 1e-9


# State 0: P1 has won already in value terms (attack wins at once) but may also
# wait; P2 can only stall. The value solve may let P1 wait forever at no cost
# in the undiscounted value; hurried play attacks.
CONVERT = DictGame(
    {
        0: {(0, 0): [(1.0, 1)], (1, 0): [(1.0, WIN)]},
        1: {(0, 0): [(1.0, 0)], (1, 0): [(0.5, WIN), (0.5, 0)]},
    },
    ["wait", "attack"],
)


def test_a_won_position_is_converted_at_once():
    result = solve_from(CONVERT, [0, 1], show_progress=False)
    assert result.values == pytest.approx([1.0, 1.0])
    assert result.expected_length(0) == pytest.approx(1.0)
    assert result.expected_length(1) == pytest.approx(1.5)  # 1 + 1/2 * (the length from 0)
    assert result.strict_exploitability.max() <= 1e-9


# The Big Match, in P2's buzzer game. At 0 P2 has lost (P1 wins whatever it
# does) but would end the game soon: P1 "stays" (row 0) or "absorbs" (row 1);
# P2 plays L (col 0) or R (col 1). Stay against L wins, stay against R plays 0
# again, absorb against R wins, absorb against L goes to 1, where P1 may wait
# for ever. If P2 played L with a fixed chance q, P1 could stay, and P2 could
# then only end the game by the next L; so P2 must keep q small (absorbing
# against L ends nothing) but not zero (staying against R for ever ends
# nothing either). With the buzzer's chance eta a turn, P2's best q solves
# (1 - eta) q^2 + 2 eta q - eta = 0: about sqrt(eta).
BIG_MATCH = DictGame(
    {
        0: {(0, 0): [(1.0, WIN)], (0, 1): [(1.0, 0)], (1, 0): [(1.0, 1)], (1, 1): [(1.0, WIN)]},
        1: {(0, 0): [(1.0, 1)], (1, 0): [(1.0, WIN)]},
    },
    ["stay/L", "absorb/R"],
)


def test_the_big_match_creeps_one_round_at_a_time_and_settles_by_its_own_rule_all_the_same():
    """One sweep between exact evaluations takes P2's q from 1/n to about
    1/(n + 1) in round n (1/41 at the cap of 40 rounds, as on the printed
    rules' capped parts), 25 times the right chance. Sweeping twice as often
    each round as the last, the part settles by its own rule within the
    cap, at q within 1% of the exact sqrt-like root."""
    result = solve_from(BIG_MATCH, [0, 1], show_progress=False)
    assert "capped" not in result.hurried_rounds
    eta = hurry_module.BUZZER
    exact = (-eta + np.sqrt(eta * eta + (1.0 - eta) * eta)) / (1.0 - eta)
    assert result.col_strategy[0] == pytest.approx(exact, rel=0.01)  # P2's L at 0
    assert result.values == pytest.approx([1.0, 1.0])
    assert result.max_exploitability <= 1e-9


def _keep_the_value_solves_choice(p1_graph, p2_graph, lower, upper, row, col, exits, mirror=None, **_):
    n = p1_graph.num_states
    none, unknown = np.zeros(n, np.bool_), np.ones(n, np.bool_)  # stalls unknown: the scored guarantees are computed
    return Hurried(row, col, np.zeros(n), np.zeros(n), lower, upper, fallback_marks(none, none), unknown, unknown)


def _solve_start(overrides, monkeypatch=None, keep=False, eta=None):
    if keep:
        monkeypatch.setattr(layered, "hurry", _keep_the_value_solves_choice)  # both solve paths hurry there
    if eta is not None:
        monkeypatch.setattr(hurry_module, "BUZZER", eta)
    rules = apply_overrides(RuleSet(), list(overrides))
    game = ChargeSparkGame(rules)
    root = game.encode(initial_position(rules))
    result = solve_from(game, [root], show_progress=False)
    return game, root, result


def _lengths(game, root, result, turns=2000):
    play = play_from(game, result, root)
    ones = play.strategy
    mean, pmf = expected_length_and_distribution(play.graph, ones, ones, play.start, turns)
    return result.expected_length(result.index_of(root)), median_length(pmf)


SMALL = ("board=S*M", "health=1")


SMALL_PARTS: list = []  # each hurried part of `small_hurried`'s solve: (buzzer graph, side, its answer)


@pytest.fixture(scope="module")
def small_hurried():
    """`SMALL` solved from its start with hurried play at the default buzzer; what
    each part's hurried play answered is kept in `SMALL_PARTS`."""
    original = hurry_module.hurried_side

    def recorded(graph, guarantee, strategy, buzzer, side, eta):
        out = original(graph, guarantee, strategy, buzzer, side, eta)
        SMALL_PARTS.append((buzzer, side, out))
        return out

    SMALL_PARTS.clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hurry_module, "hurried_side", recorded)
        return _solve_start(SMALL)


def test_values_are_the_value_solves_and_both_certificates_hold(monkeypatch, small_hurried):
    """Hurried play changes the strategies, never the values. It is robust, not
    cooperative (it assumes the opponent stalls), so where the value solve's
    choice happened to end sooner with the opponent's help it can be a little
    longer: on this board 5.060 turns from the start against 5.021 (a lost
    position ended by a sure two-turn win instead of a one-turn attack the
    loser could block); it never leaves a game to stall."""
    game, root, hurried = small_hurried
    with monkeypatch.context() as patch:
        _, _, kept = _solve_start(SMALL, patch, keep=True)
    np.testing.assert_array_equal(hurried.states, kept.states)
    assert np.abs(hurried.values - kept.values).max() <= 1e-12
    assert hurried.max_exploitability <= 1e-9
    assert hurried.strict_exploitability.max() <= 1e-9
    assert hurried.fallback_states == 0
    i = hurried.index_of(root)
    assert hurried.expected_length(i) <= 1.01 * kept.expected_length(i)
    assert hurried.unending_probability.max() <= 1e-12


@pytest.mark.parametrize("overrides", [SMALL, pytest.param(("board=S*M", "health=2"), marks=pytest.mark.slow)])
def test_lengths_do_not_depend_on_the_buzzer(monkeypatch, overrides, request):
    figures = []
    for eta in (1e-5, 1e-6):
        if overrides == SMALL and eta == hurry_module.BUZZER:
            game, root, result = request.getfixturevalue("small_hurried")
        else:
            with monkeypatch.context() as patch:
                game, root, result = _solve_start(overrides, patch, eta=eta)
        figures.append(_lengths(game, root, result))
    (mean_a, median_a), (mean_b, median_b) = figures
    assert mean_a == pytest.approx(mean_b, rel=0.01)
    assert median_a == median_b


def test_hurried_play_runs_to_its_own_stopping_rule_and_a_cap_reached_is_reported(monkeypatch, small_hurried):
    """At the default cap every part's strategy iteration settles by its own
    rule (no strategy changes, or a round gains less than a hundredth of a
    turn), so the figures are the rule's fixed point; a part stopped at the
    cap is counted, and `solve` says so in a warning line."""
    _, _, result = small_hurried
    assert result.hurried_rounds and "capped" not in result.hurried_rounds
    assert max(int(k) for k in result.hurried_rounds) <= hurry_module.MAX_ROUNDS
    with monkeypatch.context() as patch:
        patch.setattr(hurry_module, "MAX_ROUNDS", 1)
        _, _, capped = _solve_start(SMALL)
    assert capped.hurried_rounds.get("capped", 0) > 0
    assert sum(capped.hurried_rounds.values()) == sum(result.hurried_rounds.values())  # the same parts
    assert np.abs(capped.values - result.values).max() <= 1e-12  # the cap moves the strategies, never the values


def test_a_position_keeps_its_stage_strategy_unless_another_ends_the_game_sooner():
    """Hurried play's switching rule: of several stage strategies that end the
    game equally soon, the one held stays (no tie flips from round to round);
    one that gains more than `gain` in the buzzer game replaces it."""
    from solver.core.graph import build_graph

    game = DictGame({0: {(0, 0): [(1.0, WIN)], (1, 0): [(1.0, WIN)]}}, ["a", "b"])  # both P1 actions win at once
    graph = build_graph(game, np.array([0], np.int64))
    buzzer = hurry_module.buzzer_graph(graph, np.ones(graph.terminal_payoff.shape[0], np.bool_),
                                       np.zeros(graph.terminal_payoff.shape[0]), 1e-6, 1.0)
    values = np.ones(graph.num_states)
    for held in ([1.0, 0.0], [0.0, 1.0]):
        strategy = np.array(held)
        out, _, _ = hurry_module.improve_strategy(graph, values, buzzer, np.zeros(graph.num_states), 0, strategy, 1e-8)
        np.testing.assert_array_equal(out, held)


@pytest.mark.parametrize("off", [0.0, 1e-13], ids=["the very strategy", "a strategy 1e-13 from it"])
def test_a_held_strategy_at_the_only_optimal_one_needs_no_lp_in_later_rounds(off):
    """Matching pennies: P1's only optimal strategy is (1/2, 1/2). Held there,
    or within round-off of it (the value solve's strategy, whose own tie-break
    was skipped, can differ from the tie-break LP's answer in the last bits),
    it is kept, and the state is marked so that later rounds skip its LPs."""
    from solver.core.graph import build_graph

    game = DictGame({0: {(0, 0): [(1.0, WIN)], (0, 1): [(1.0, LOSS)], (1, 0): [(1.0, LOSS)], (1, 1): [(1.0, WIN)]}},
                    ["a", "b"])
    graph = build_graph(game, np.array([0], np.int64))
    ends = np.ones(graph.terminal_payoff.shape[0], np.bool_)
    buzzer = hurry_module.buzzer_graph(graph, ends, np.zeros(ends.size), 1e-6, 1.0)
    held = np.array([0.5 + off, 0.5 - off])
    memo = hurry_module.StageMemo.fresh(graph.num_states)
    out, _, _ = hurry_module.improve_strategy(
        graph, np.full(graph.num_states, 0.5), buzzer, np.zeros(graph.num_states), 0, held, 1e-8, memo=memo,
    )
    np.testing.assert_array_equal(out, held)
    assert memo.lone[0] == hurry_module.ONLY_OPTIMAL


def test_what_a_round_keeps_of_the_stage_games_changes_nothing(monkeypatch, small_hurried):
    """Hurried play's rounds keep each state's cap and lone pure action, and
    where the side has one optimal strategy in A they keep it (`StageMemo`),
    instead of solving the same stage game A again: the strategies and
    lengths are bit for bit those of solving it every round."""
    _, root, kept = small_hurried
    improve = hurry_module.improve_strategy

    def forgetting(*args, memo=None, **kwargs):
        # What the rounds learn of A (the caps, the lone actions) dropped: a fresh memo each round, which
        # knows only A's value and optimal strategies, found once before the rounds (`stage_optima`),
        # and which of the strategies held the tie-break gave.
        memo = memo if memo is not None else args[9]
        fresh = hurry_module.StageMemo.known(memo.value, memo.row, memo.col)
        fresh.answered[:] = memo.answered
        out = improve(*args[:9], memo=fresh, **kwargs)
        memo.answered[:] = fresh.answered
        return out

    with monkeypatch.context() as patch:
        patch.setattr(hurry_module, "improve_strategy", forgetting)
        _, _, fresh = _solve_start(SMALL, patch)
    np.testing.assert_array_equal(fresh.row_strategy, kept.row_strategy)
    np.testing.assert_array_equal(fresh.col_strategy, kept.col_strategy)
    np.testing.assert_array_equal(fresh.ending_turns, kept.ending_turns)
    assert fresh.hurried_rounds == kept.hurried_rounds


def test_each_part_reports_the_buzzer_values_its_strategy_really_has(small_hurried):
    """Hurried play goes component by component of the buzzer game (states on
    no cycle settled by one stage solve, cycles iterated with their exits
    final); what it reports as each state's buzzer value is, within the
    hundredth of a turn its stopping rule allows, the exact value of the
    strategy it reports against the stalling opponent's best response."""
    from solver.core.best_response import best_response_values

    assert len(SMALL_PARTS) > 1
    for buzzer, side, (strategy, values, rounds) in SMALL_PARTS:
        sign = 1.0 if side == 0 else -1.0
        exact = sign * best_response_values(buzzer, side, strategy)
        assert np.abs(values - exact).max() <= 1e-2 * hurry_module.BUZZER + 1e-12
        assert not rounds.capped


def test_a_held_answer_of_the_tie_break_is_not_replaced_by_another_for_a_hair_in_a():
    """The tie-break LP keeps A's cap only to its certificate's tolerance, so two
    of its answers can differ in A by more than the 1e-12 the switching rule
    allows the value solve's strategy. A strategy held that the tie-break gave
    (`StageMemo.answered`) is therefore compared with a new answer in B only:
    flipping to an answer worse in B left a buzzer value the strategy does not
    guarantee, and a part of the printed rules at health 2 then flipped back
    and forth until its cap of rounds. Here P1 may loop (row 0, worth a hair
    more in A) or win at once (row 1): held at row 1 by the tie-break, it stays;
    held there by the value solve, A decides."""
    from solver.core.graph import build_graph

    game = DictGame({0: {(0, 0): [(1.0, 0)], (1, 0): [(1.0, WIN)]}}, ["loop", "win"])
    graph = build_graph(game, np.array([0], np.int64))
    ends = np.ones(graph.terminal_payoff.shape[0], np.bool_)
    buzzer = hurry_module.buzzer_graph(graph, ends, np.zeros(ends.size), 1e-6, 1.0)
    values = np.array([1.0 + 5e-12])  # A: loop 1 + 5e-12, win 1
    held = np.array([0.0, 1.0])
    for answered, expected in ((True, held), (False, [1.0, 0.0])):
        memo = hurry_module.StageMemo.fresh(graph.num_states)
        memo.answered[0] = answered
        out, _, _ = hurry_module.improve_strategy(graph, values, buzzer, np.zeros(1), 0, held, 1e-8, memo=memo)
        np.testing.assert_array_equal(out, expected)
