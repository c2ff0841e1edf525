"""The report's analyses on tiny rule sets: restricted play, card usage, draw
values, simple policies, sensitivity variants, and the charts' drawing aids."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rules.charge_spark.cards import Card
from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import held_bonus_counts, initial_position
from solver.analysis.draws import draw_values
from solver.analysis.restricted import WithoutRowAction, value_without, _Job
from solver.analysis.sensitivity import longer_board, sensitivity_variants, shorter_board, summary_from
from solver.analysis.skill_gap import greedy_policy, skill_gap, uniform_policy
from solver.analysis.usage import CardStatus, card_usage
from solver.report.charts import bar_chart, heat_map, nice_ticks
from solver.graph import build_graph
from solver.solve import solve_from

TINY = ["board=S*M", "health=1", "battery_tiles=2", "disc_tiles=2", "bonus_cards=ray,copy"]


@pytest.fixture(scope="module")
def solved():
    rules = apply_overrides(RuleSet(), TINY)
    game = ChargeSparkGame(rules)
    code = game.encode(initial_position(rules))
    result = solve_from(game, [code], show_progress=False)
    # A rank-by-rank solve keeps no whole graph: the analyses get one built from the states.
    result = replace(result, graph=build_graph(game, result.states))
    return rules, game, result, result.index_of(code)


def test_without_a_card_p1_never_plays_it_unless_it_is_the_only_card(solved):
    rules, game, result, _ = solved
    wrapped = WithoutRowAction(game, int(Card.LIGHTNING))
    plain, cut = game.expand(result.states), wrapped.expand(result.states)
    assert np.array_equal(cut.col_count, plain.col_count)
    only = plain.row_count == 1
    assert np.array_equal(cut.row_count, np.where(only, 1, plain.row_count - _count_of(plain, Card.LIGHTNING)))
    kept = np.repeat(np.arange(len(result.states)), cut.row_count)
    assert not np.any((cut.row_actions == Card.LIGHTNING) & ~only[kept])
    assert cut.out_next.size == cut.out_prob.size == int(np.asarray(cut.out_count).sum())
    assert wrapped.swap(result.states) is None


def _count_of(expansion, card) -> np.ndarray:
    state = np.repeat(np.arange(expansion.row_count.size), expansion.row_count)
    return np.bincount(state[np.asarray(expansion.row_actions) == card], minlength=expansion.row_count.size)


def test_barring_a_card_never_helps_p1(solved):
    rules, _, result, start = solved
    for card in ("lightning", "move"):
        assert value_without(_Job(rules, card)).value <= result.values[start] + 1e-9


def test_card_usage_shares_are_distributions(solved):
    _, _, result, start = solved
    g = result.graph
    usage = card_usage(g, result.values, result.row_strategy, result.col_strategy, start)
    assert usage.overall.sum(axis=1) == pytest.approx([1.0, 1.0])
    assert usage.by_turn.sum(axis=2) == pytest.approx(np.ones(usage.by_turn.shape[:2]))
    assert usage.alive[0] == 1.0 and np.all(np.diff(usage.alive) <= 1e-12)
    assert set(usage.status) == set(usage.cards) and all(isinstance(s, CardStatus) for s in usage.status.values())


def test_draw_gains_balance_over_all_draws(solved):
    # Each draw is compared with the same draw at random, so the gains weighted by frequency sum to zero.
    _, game, result, start = solved
    held = held_bonus_counts(game.codec, result.states)
    kinds = tuple(c.label for c in game.codec.bonus_kinds)
    draws = draw_values(result.graph, result.values, result.row_strategy, result.col_strategy, start, held, kinds)
    assert [d.card for d in draws] == ["ray", "copy"]
    assert sum(d.gain * d.draws_per_game for d in draws) == pytest.approx(0.0, abs=1e-9)
    assert all(d.draws_per_game > 0 for d in draws)


def test_held_bonus_counts_match_decoded_positions(solved):
    _, game, result, _ = solved
    held = held_bonus_counts(game.codec, result.states[::97])
    for i, code in enumerate(result.states[::97]):
        position = game.decode(int(code))
        for seat, player in enumerate((position.p1, position.p2)):
            assert list(held[i, seat]) == [player.held_bonus()[k] for k in game.codec.bonus_kinds]


def test_greedy_policy_plays_the_strongest_legal_attack_else_the_first_fallback():
    ptr = np.array([0, 3, 5, 7])
    actions = np.array([0, 1, 3, 0, 2, 2, 5])
    strength = np.array([0, 1, 0, 2, 0, 0])
    chosen = greedy_policy(ptr, actions, strength, fallback=[0, 2])
    assert chosen.tolist() == [0, 0, 1, 1, 0, 1, 0]
    assert uniform_policy(ptr).tolist() == pytest.approx([1 / 3] * 3 + [0.5] * 4)


def test_optimal_play_beats_a_uniform_policy_and_best_responses_beat_it_harder(solved):
    _, _, result, start = solved
    g = result.graph
    uniform = {"uniform": (uniform_policy(g.row_ptr), uniform_policy(g.col_ptr))}
    (row,) = skill_gap(g, start, result.row_strategy, result.col_strategy, uniform)
    assert row.win_vs_best_response <= row.win_vs_optimal + 1e-9
    assert row.value_vs_best_response <= result.values[start] + 1e-9
    assert row.optimal_win_vs_policy >= 0.5


def test_sensitivity_variants_cover_the_designers_questions():
    variants, skipped = sensitivity_variants(RuleSet())
    settings = {v.setting for v in variants}
    for setting in ("--set cost.lightning.battery=3", "--set cost.lightning.battery=1", "--set damage.spark=2",
                    "--set start_battery=0", "--set board=S.**M", "--set board=S..*.*M", "--set recovery=battery"):
        assert setting in settings
    assert any(v.start == "h3 / " for v in variants) and not skipped
    _, skipped = sensitivity_variants(apply_overrides(RuleSet(), ["health=1"]))
    assert [(s.label, s.reason) for s in skipped] == [
        ("P1 starts with Health 0 (1)", "not possible: the rules start each player at Health 1")
    ]


def test_boards_one_space_shorter_and_longer():
    assert shorter_board("S.*.*M") == "S.**M" and shorter_board("S*M") == "SM" and shorter_board("SM") is None
    assert longer_board("S*M") == "S.*M"


def test_a_handicap_start_is_worth_less_to_p1():
    rules = apply_overrides(RuleSet(), ["board=SM", "health=2", "battery_tiles=2", "disc_tiles=2", "bonus_cards="])
    summary = summary_from(rules, "h1 / ")
    assert summary.value < 0.5
    assert sum(summary.outcomes.values()) == pytest.approx(1.0)


def test_ticks_are_round_and_cover_the_range():
    assert nice_ticks(0, 0.93) == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ticks = nice_ticks(-27.3, 0.0)
    assert ticks[0] <= -27.3 and ticks[-1] >= 0.0


def test_charts_escape_their_text():
    svg = bar_chart("<b>&", ["<script>x</script>"], [1.0], "axis \"q\"")
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "&lt;b&gt;&amp;" in svg
    svg = heat_map("t", ["r<"], ["c>"], [[0.5]], "rows", "cols", "unit")
    assert "r&lt;" in svg and "c&gt;" in svg


def test_a_variant_whose_solve_fails_is_left_out_with_the_reason(monkeypatch):
    import solver.analysis.sensitivity as sensitivity
    import solver.sweep as sweep

    def sweep_fails(*args, **kwargs):
        raise RuntimeError("a task failed on every retry")

    def solve_fails(job):
        raise RuntimeError("component is numerically closed")

    monkeypatch.setattr(sweep, "run_sweep", sweep_fails)
    monkeypatch.setattr(sensitivity, "_summary", solve_fails)
    variants, _ = sensitivity_variants(apply_overrides(RuleSet(), TINY))
    answers = sensitivity.summarise_variants(variants[:2], None, workers=1)
    assert [a.label for a in answers] == [v.label for v in variants[:2]]
    assert all("the solve failed: RuntimeError: component is numerically closed" in a.reason for a in answers)


def test_a_restricted_game_that_fails_gives_nan_and_the_reason(monkeypatch):
    import solver.analysis.restricted as restricted

    def fails(job):
        raise RuntimeError("numerically closed")

    monkeypatch.setattr(restricted, "_value_without", fails)
    answer = restricted.value_without(_Job(apply_overrides(RuleSet(), TINY), "spark"))
    assert np.isnan(answer.value) and answer.error == "RuntimeError: numerically closed"


def test_barring_a_card_keeps_the_rank_by_rank_solve(solved):
    rules, game, result, start = solved
    wrapped = WithoutRowAction(game, int(Card.SPARK))
    assert hasattr(game, "progress_rank") == hasattr(wrapped, "progress_rank")
