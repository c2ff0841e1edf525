"""The report's analyses on tiny rule sets: restricted play, card usage, draw
values, simple policies, sensitivity variants, and the charts' drawing aids."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dict_game import LOSS, WIN, DictGame
from reference import skill_gap
from rules.charge_spark.cards import Card
from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import held_bonus_counts, initial_position
from solver.analysis.card_status import card_flags, legal_row_actions
from solver.analysis.draws import draw_values, table_draw_values
from solver.analysis.policy_play import PolicyPlay, play_figures, table_policy
from solver.analysis.policy_ranks import policy_games
from solver.analysis.positions import annotated_positions
from solver.analysis.restricted import RestrictedJob, WithoutRowAction, cards_p1_plays, unplayed_values, value_without
from solver.analysis.sensitivity import longer_board, sensitivity_variants, shorter_board, summary_from
from solver.analysis.skill_gap import greedy_policy, play_mirrors, table_skill_gap, uniform_policy
from solver.analysis.usage import CardStatus, card_usage, statuses, table_card_usage
from solver.core.chain import chain_of_play, expected_visits, play_chain
from solver.core.graph import build_graph
from solver.core.play import play_from
from solver.core.solve import solve_from
from solver.report.charts import bar_chart, heat_map, nice_ticks
from solver.tables import SolvedTable

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
        assert value_without(RestrictedJob(rules, card)).value <= result.values[start] + 1e-9


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
    (row,) = skill_gap(g, result.terminal_outcomes, start, result.row_strategy, result.col_strategy, uniform)
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


def test_a_chart_of_changes_at_rounding_level_still_draws():
    # A symmetric variant's value differs from the baseline's by a rounding or two
    # (1e-14): the ticks must stay apart, not collapse onto one value.
    ticks = nice_ticks(-1.1e-12, 0.0)
    assert len(set(ticks)) == len(ticks) >= 2 and ticks[0] <= -1.1e-12
    svg = bar_chart("change", ["a", "b"], [-1.1e-12, 0.0], "pp", signed=True)
    assert svg.count("<line") >= 2


def test_charts_escape_their_text():
    svg = bar_chart("<b>&", ["<script>x</script>"], [1.0], "axis \"q\"")
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "&lt;b&gt;&amp;" in svg
    svg = heat_map("t", ["r<"], ["c>"], [[0.5]], "rows", "cols", "unit")
    assert "r&lt;" in svg and "c&gt;" in svg


def test_a_variant_whose_solve_fails_is_left_out_with_the_reason(monkeypatch):
    import solver.analysis.sensitivity as sensitivity

    def solve_fails(job):
        raise RuntimeError("component is numerically closed")

    monkeypatch.setattr(sensitivity, "_summary", solve_fails)
    variants, _ = sensitivity_variants(apply_overrides(RuleSet(), TINY))
    answers = [sensitivity.summarise_variant(sensitivity.VariantJob(v, None)) for v in variants[:2]]
    assert [a.label for a in answers] == [v.label for v in variants[:2]]
    assert all("the solve failed: RuntimeError: component is numerically closed" in a.reason for a in answers)


def test_a_restricted_game_that_fails_gives_nan_and_the_reason(monkeypatch):
    import solver.analysis.restricted as restricted

    def fails(job):
        raise RuntimeError("numerically closed")

    monkeypatch.setattr(restricted, "_value_without", fails)
    answer = restricted.value_without(RestrictedJob(apply_overrides(RuleSet(), TINY), "spark"))
    assert np.isnan(answer.value) and answer.error == "RuntimeError: numerically closed"


def test_barring_a_card_keeps_the_rank_by_rank_solve(solved):
    rules, game, result, start = solved
    wrapped = WithoutRowAction(game, int(Card.SPARK))
    assert hasattr(game, "progress_rank") == hasattr(wrapped, "progress_rank")


# ---- the same figures without the whole graph (what the report does on large tables)


@pytest.fixture(scope="module")
def played(solved):
    """The table of `solved` as the report sees a stored one (no graph), play from its start, and the visits."""
    rules, game, result, _ = solved
    table = SolvedTable(rules, replace(result, graph=None), Path("unused.npz"), reused=True)
    play = play_from(game, table.result, table.start)
    return table, play, expected_visits(chain_of_play(play.graph), play.start)


def test_play_usage_and_draws_equal_the_whole_graphs(solved, played):
    rules, game, result, start = solved
    table, play, visits = played
    assert 1 < play.states.size < result.num_states  # play reaches only part of the table
    whole = card_usage(result.graph, result.values, result.row_strategy, result.col_strategy, start)
    streamed = table_card_usage(game, table.result, play)
    assert streamed.cards == whole.cards and streamed.status == whole.status
    assert np.allclose(streamed.overall, whole.overall, rtol=0, atol=1e-12)
    assert np.allclose(streamed.by_turn, whole.by_turn, rtol=0, atol=1e-12)
    assert np.allclose(streamed.alive, whole.alive, rtol=0, atol=1e-12)

    kinds = tuple(c.label for c in game.codec.bonus_kinds)
    whole_draws = draw_values(result.graph, result.values, result.row_strategy, result.col_strategy, start,
                              held_bonus_counts(game.codec, result.states), kinds)
    streamed_draws = table_draw_values(game, table.result, play, visits, chunk=53)
    for a, b in zip(streamed_draws, whole_draws, strict=True):
        assert a.card == b.card
        assert a.gain == pytest.approx(b.gain, abs=1e-12) and a.draws_per_game == pytest.approx(b.draws_per_game, abs=1e-12)

    whole_visits = expected_visits(play_chain(result.graph, result.row_strategy, result.col_strategy), start)
    assert np.allclose(whole_visits[play.index], visits, rtol=0, atol=1e-12)
    outside = np.ones(result.num_states, bool)
    outside[play.index] = False
    assert not whole_visits[outside].any()


@pytest.mark.parametrize("rule_set", [TINY, ["board=SM", "health=2", "battery_tiles=2", "disc_tiles=2", "bonus_cards="]],
                         ids=["tiny", "no-bonus"])
def test_card_status_streamed_in_chunks_equals_the_whole_graphs(rule_set):
    rules = apply_overrides(RuleSet(), rule_set)
    game = ChargeSparkGame(rules)
    code = game.encode(initial_position(rules))
    result = solve_from(game, [code], show_progress=False)
    graph = build_graph(game, result.states)
    whole = card_usage(graph, result.values, result.row_strategy, result.col_strategy, result.index_of(code))
    played_states = np.flatnonzero(expected_visits(play_chain(graph, result.row_strategy, result.col_strategy),
                                                   result.index_of(code)) > 0)
    flags = card_flags(game, result, result.states[played_states], chunk=97)  # many chunks, some split mid-way
    legal = np.flatnonzero(flags.legal)
    assert tuple(game.action_labels[a] for a in legal) == whole.cards
    assert statuses(flags, legal, whole.cards) == whole.status


def test_positions_from_play_equal_the_whole_graphs(solved, played):
    rules, game, result, start = solved
    table, play, visits = played
    answer = lambda code: result.answer(code, game)  # noqa: E731
    whole_visits = expected_visits(play_chain(result.graph, result.row_strategy, result.col_strategy), start)
    whole = annotated_positions_whole(rules, result, whole_visits, answer)
    streamed = annotated_positions(rules, table.result, play.states, visits, answer, chunk=101)
    assert [(a.title, a.code) for a in streamed] == [(a.title, a.code) for a in whole]
    assert [a.frequency for a in streamed] == pytest.approx([a.frequency for a in whole], abs=1e-12)
    # Where play never reaches a kind: the table's first position of it, found chunk by chunk.
    never = annotated_positions(rules, table.result, play.states, np.zeros_like(visits), answer, chunk=101)
    first = annotated_positions_whole(rules, result, np.zeros(result.num_states), answer)
    assert [(a.title, a.code, a.frequency) for a in never] == [(a.title, a.code, 0.0) for a in first]
    assert len({a.code for a in first}) == len(first) > 3


def annotated_positions_whole(rules, result, visits, answer):
    """The positions as picked over every state at once (the report's former way)."""
    from rules.charge_spark.state import PositionCodec, player_digits
    from solver.analysis.positions import AnnotatedPosition, situations

    codec = PositionCodec(rules)
    p1, p2 = player_digits(codec, result.states, 0), player_digits(codec, result.states, 1)
    shown, taken = [], np.zeros(result.num_states, bool)
    for situation in situations(rules):
        where = np.nonzero(situation.test(p1, p2) & ~taken)[0]
        if where.size:
            i = int(where[np.argmax(visits[where])])
            taken[i] = True
            shown.append(AnnotatedPosition(situation.title, situation.why, int(result.states[i]), float(visits[i]),
                                           answer(int(result.states[i]))))
    return shown


def test_skill_gap_by_policy_games_equals_the_whole_graphs(solved):
    rules, game, result, start = solved
    g = result.graph
    strength = np.array([rules.damage_of(card) for card in Card])
    fallback = [int(Card.CHARGE), int(Card.BARRIER), int(Card.MOVE)]
    whole = skill_gap(g, result.terminal_outcomes, start, result.row_strategy, result.col_strategy, {
        "uniform": (uniform_policy(g.row_ptr), uniform_policy(g.col_ptr)),
        "greedy": (greedy_policy(g.row_ptr, g.row_actions, strength, fallback),
                   greedy_policy(g.col_ptr, g.col_actions, strength, fallback)),
    })
    policies = {
        "uniform": lambda codes, ptr, actions: uniform_policy(ptr),
        "greedy": lambda codes, ptr, actions: greedy_policy(ptr, actions, strength, fallback),
    }
    code = int(result.states[start])
    table = replace(result, graph=None)
    assert play_mirrors(game, table, code)
    for mirrored, solves in ((False, 2), (True, 0)):
        labels = []

        def play(label, policy_game, labels=labels):
            labels.append(label)
            return play_figures(policy_game, code, show_progress=False)

        def play_both(name, policy, mirrored=mirrored):
            games = policy_games(game, table, policy, code)
            assert games.mirrored  # the pass finds what the whole table's check finds
            return games if mirrored else replace(games, mirrored=False)

        streamed = table_skill_gap(game, table, policies, play_both, play)
        assert len(labels) == solves
        assert all(label.startswith("optimal play against") for label in labels)
        for a, b in zip(streamed, whole):
            assert a.name == b.name
            for name in ("win_vs_optimal", "win_vs_best_response", "value_vs_best_response", "optimal_win_vs_policy"):
                assert getattr(a, name) == pytest.approx(getattr(b, name), abs=1e-9), (a.name, mirrored, name)


def test_optimal_play_mirrors_a_policys_play_only_where_the_table_and_the_start_do(solved):
    rules, game, result, start = solved
    table = replace(result, graph=None)
    code = int(result.states[start])
    assert play_mirrors(game, table, code, chunk=7)  # chunks of any size
    # A start whose twin differs is no mirror image of itself.
    lopsided = next(int(s) for s in result.states if int(game.swap(np.array([s]))[0]) != int(s))
    assert not play_mirrors(game, table, lopsided)
    # P2's strategy at one state of several actions no longer P1's at the twin.
    state = int(np.flatnonzero(np.diff(result.col_ptr) > 1)[0])
    col = result.col_strategy.copy()
    lo, hi = result.col_ptr[state], result.col_ptr[state + 1]
    col[lo:hi] = np.full(hi - lo, 1.0 / (hi - lo)) if not np.allclose(col[lo:hi], 1.0 / (hi - lo)) else np.eye(hi - lo)[0]
    assert not play_mirrors(game, replace(table, col_strategy=col), code)
    # A game that does not swap seats (a policy fixed on one side).
    assert not play_mirrors(PolicyPlay(game, lambda c, ptr, actions: uniform_policy(ptr)), table, code)


def test_figures_kept_before_p2_wins_was_kept_are_solved_again(solved):
    _, game, result, start = solved
    table = replace(result, graph=None)
    code = int(result.states[start])
    labels = []

    def play(label, policy_game):
        labels.append(label)
        return play_figures(policy_game, code, show_progress=False)

    def play_both(name, policy):
        games = policy_games(game, table, policy, code)
        return replace(games, against_optimal=replace(games.against_optimal, p2_win=None))  # as an earlier version kept it

    table_skill_gap(game, table, {"uniform": lambda codes, ptr, actions: uniform_policy(ptr)}, play_both, play)
    assert labels == ["optimal play against uniform"]


def test_a_policy_game_gives_the_fixed_player_one_action_and_weights_its_outcomes(solved):
    _, game, result, _ = solved
    codes = result.states[:50]
    plain = game.expand(codes)
    fixed = PolicyPlay(game, lambda c, ptr, actions: uniform_policy(ptr)).expand(codes)
    assert np.all(fixed.row_count == 1) and np.array_equal(fixed.col_count, plain.col_count)
    assert np.add.reduceat(fixed.out_prob, _starts(fixed.out_count)) == pytest.approx(np.ones(int(fixed.col_count.sum())))
    both = PolicyPlay(game, lambda c, ptr, actions: uniform_policy(ptr), table_policy(result, 1)).expand(codes)
    assert np.all(both.row_count == 1) and np.all(both.col_count == 1)
    assert np.add.reduceat(both.out_prob, _starts(both.out_count)) == pytest.approx(np.ones(codes.size))


def test_a_policy_games_cells_hold_each_next_state_once_with_the_policies_weights(solved):
    """Each new cell's outcomes, computed cell by cell from the game's own stage
    games: sum over the fixed sides' actions of weight x policy weight."""
    _, game, result, _ = solved
    codes = result.states[::3][:40]
    plain = game.expand(codes)
    ptr = lambda counts: np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)  # noqa: E731
    m, n = np.asarray(plain.row_count), np.asarray(plain.col_count)
    row_ptr, col_ptr, cell_ptr = ptr(m), ptr(n), ptr(m * n)
    out_ptr = ptr(plain.out_count)
    p1 = lambda c, local_ptr, actions: uniform_policy(local_ptr)  # noqa: E731
    p2 = table_policy(result, 1)
    x, y = p1(codes, row_ptr, plain.row_actions), p2(codes, col_ptr, plain.col_actions)
    for fix_row, fix_col in ((True, False), (False, True), (True, True)):
        wrapped = PolicyPlay(game, p1 if fix_row else None, p2 if fix_col else None).expand(codes)
        new_ptr = ptr(wrapped.out_count)
        cell = 0
        for i in range(codes.size):
            for new_r in range(1 if fix_row else m[i]):
                for new_c in range(1 if fix_col else n[i]):
                    expected = {}
                    for r in range(m[i]) if fix_row else [new_r]:
                        for c in range(n[i]) if fix_col else [new_c]:
                            w = (x[row_ptr[i] + r] if fix_row else 1.0) * (y[col_ptr[i] + c] if fix_col else 1.0)
                            k = cell_ptr[i] + r * n[i] + c
                            for j in range(out_ptr[k], out_ptr[k + 1]):
                                if w > 0:
                                    nxt = int(plain.out_next[j])
                                    expected[nxt] = expected.get(nxt, 0.0) + w * plain.out_prob[j]
                    got = wrapped.out_next[new_ptr[cell]:new_ptr[cell + 1]]
                    assert len(set(got.tolist())) == got.size, "a next state listed twice in one cell"
                    assert dict(zip(got.tolist(), wrapped.out_prob[new_ptr[cell]:new_ptr[cell + 1]])) == pytest.approx(expected)
                    cell += 1
        assert cell == wrapped.out_count.size


def _starts(counts):
    return np.concatenate([[0], np.cumsum(counts)[:-1]])


# ---- what the report's further solves compute


def _played_by_p1_on_the_whole_graph(game, result, start: int) -> set[int]:
    """The cards P1's strategy plays where its play reaches, read off the whole graph state by state (the reference)."""
    g = build_graph(game, result.states)
    seen, todo, played = {start}, [start], set()
    while todo:
        s = todo.pop()
        for r in range(g.row_ptr[s], g.row_ptr[s + 1]):
            if result.row_strategy[r] <= 0:
                continue
            played.add(int(g.row_actions[r]))
            n = g.col_ptr[s + 1] - g.col_ptr[s]
            first_cell = g.cell_ptr[s] + (r - g.row_ptr[s]) * n
            for cell in range(first_cell, first_cell + n):
                for nxt in g.out_next[g.out_ptr[cell] : g.out_ptr[cell + 1]]:
                    if nxt >= 0 and nxt not in seen:
                        seen.add(int(nxt))
                        todo.append(int(nxt))
    return played


def test_the_cards_p1_plays_are_those_of_the_whole_graph(solved):
    rules, game, result, start = solved
    played = cards_p1_plays(game, result, int(result.states[start]))
    assert set(np.flatnonzero(played)) == _played_by_p1_on_the_whole_graph(game, result, start)


# P1's "a" wins unless P2 answers "y", then wins 60%; "b" is a coin toss; "c" always loses, and is
# P1's only card after ("b", "y"), which P1 never plays. Optimal play: "a" (value 0.6), never "b" or "c".
DOMINATED = DictGame({
    0: {(0, 0): [(1.0, WIN)], (0, 1): [(1.0, 1)], (1, 0): [(0.5, WIN), (0.5, LOSS)], (1, 1): [(1.0, 2)],
        (2, 0): [(1.0, LOSS)], (2, 1): [(1.0, LOSS)]},
    1: {(0, 0): [(0.6, WIN), (0.4, LOSS)], (2, 0): [(1.0, LOSS)]},
    2: {(2, 0): [(0.5, WIN), (0.5, LOSS)]},
}, ["a", "b", "c"])


def test_a_card_p1_never_plays_is_not_solved_and_has_the_restricted_games_value():
    result = solve_from(DOMINATED, [0], show_progress=False)
    unplayed = unplayed_values(DOMINATED, result, 0, ["a", "b", "c"])
    assert [v.card for v in unplayed] == ["b", "c"] and all(v.unplayed for v in unplayed)
    for shortcut in unplayed:
        barred = solve_from(WithoutRowAction(DOMINATED, DOMINATED.action_labels.index(shortcut.card)), [0],
                            show_progress=False)
        assert shortcut.value == result.values[0] == pytest.approx(0.6, abs=1e-9)
        assert abs(barred.values[barred.index_of(0)] - shortcut.value) <= 1e-9, shortcut.card
    # The card P1 plays is solved, and barring it does change the value.
    barred = solve_from(WithoutRowAction(DOMINATED, 0), [0], show_progress=False)
    assert barred.values[barred.index_of(0)] == pytest.approx(0.5, abs=1e-9)


def test_every_card_of_the_tiny_rules_is_played_by_p1_so_each_is_solved(solved):
    rules, game, result, start = solved
    cards = [game.action_labels[a] for a in legal_row_actions(result)]
    assert unplayed_values(game, result, int(result.states[start]), cards) == []


def _rule_set_variant(rules: RuleSet):
    """A variant of `rules` that is a rule set of its own (a cost one up)."""
    return next(v for v in sensitivity_variants(rules)[0] if v.key.startswith("cost.") and v.step > 0)


def test_a_variant_gives_its_tables_figures_and_stores_no_table(tmp_path):
    from solver.analysis.sensitivity import VariantJob, summarise_variant
    from solver.summary import LENGTH_TURNS, summarise_start
    from solver.tables import solved_table

    variant = _rule_set_variant(apply_overrides(RuleSet(), TINY))
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    plain = summarise_variant(VariantJob(variant, str(jobs)))
    with_length = summarise_variant(VariantJob(variant, str(jobs), length_turns=LENGTH_TURNS))
    assert list(jobs.iterdir()) == []  # neither stored a table
    table = solved_table(variant.rules, tmp_path / "tables")  # the path a variant took before: a stored table
    expected = summarise_start(table, LENGTH_TURNS)
    for got in (plain, with_length):
        assert not got.reused and got.states == table.result.num_states
        assert got.value == pytest.approx(expected.value, abs=1e-9)
        assert got.outcomes == pytest.approx(expected.outcomes, abs=1e-9)
        assert got.expected_length == pytest.approx(expected.expected_length, abs=1e-9)
    assert plain.length_pmf == ()
    np.testing.assert_allclose(with_length.length_pmf, expected.length_pmf, atol=1e-12)
    # A table stored already (by `solve`, or an earlier report) is read, not solved again.
    again = summarise_variant(VariantJob(variant, str(tmp_path / "tables"), length_turns=LENGTH_TURNS))
    assert again.reused and again.value == expected.value and again.length_pmf == tuple(expected.length_pmf)
