"""The start summary of a solved rule set: outcome split by win type, game length."""

from __future__ import annotations

import numpy as np
import pytest

from rules.charge_spark.config import RuleSet, apply_overrides
from solver.core.outcome import Seat
from solver.summary import UNENDING, summarise_start
from solver.tables import solved_table

SMALL = apply_overrides(RuleSet(), ["board=S*M", "health=1"])


@pytest.fixture(scope="module")
def small_summary(tmp_path_factory):
    table = solved_table(SMALL, tmp_path_factory.mktemp("tables"))
    return table, summarise_start(table, max_turns=400)


def test_outcomes_are_split_by_win_type_and_add_up(small_summary):
    _, summary = small_summary
    assert set(summary.outcomes) == {
        "P1 wins by knock-out", "P1 wins at the moon", "P2 wins by knock-out", "P2 wins at the moon", UNENDING,
    }
    assert sum(summary.outcomes.values()) == pytest.approx(1.0, abs=1e-9)
    # The value is P(P1 wins) + half of P(unending), whatever the split.
    assert summary.wins(Seat.P1) + 0.5 * summary.outcomes[UNENDING] == pytest.approx(summary.value, abs=1e-9)


def test_symmetric_start_splits_evenly_by_seat(small_summary):
    _, summary = small_summary
    assert summary.value == pytest.approx(0.5, abs=1e-9)
    assert summary.wins(Seat.P1) == pytest.approx(summary.wins(Seat.P2), abs=1e-9)


def test_length_distribution_matches_the_ending_probability(small_summary):
    _, summary = small_summary
    ends = 1.0 - summary.outcomes[UNENDING]
    assert summary.length_pmf.sum() + summary.length_beyond == pytest.approx(1.0, abs=1e-12)
    assert summary.length_pmf.sum() <= ends + 1e-12
    turns = np.arange(1, summary.length_pmf.size + 1)
    # The mean of the truncated pmf approaches the exact expectation from below.
    partial = float((turns * summary.length_pmf).sum() / summary.length_pmf.sum())
    assert summary.expected_length >= 1.0
    assert partial == pytest.approx(summary.expected_length, rel=1e-3)


def test_summary_of_a_cached_table_rebuilds_the_same_length(small_summary, tmp_path_factory):
    table, summary = small_summary
    reloaded = solved_table(SMALL, table.path.parent)
    assert reloaded.reused and reloaded.result.graph is None
    again = summarise_start(reloaded, max_turns=400)
    assert again.expected_length == pytest.approx(summary.expected_length, rel=1e-12)
    np.testing.assert_allclose(again.length_pmf, summary.length_pmf, atol=1e-15)


def test_play_holds_what_optimal_play_reaches_and_gives_the_whole_graphs_length(small_summary):
    from rules.charge_spark.game import ChargeSparkGame
    from solver.core.absorption import expected_length_and_distribution
    from solver.core.graph import build_graph
    from solver.core.play import play_from

    table, summary = small_summary
    game = ChargeSparkGame(table.rules)
    play = play_from(game, table.result, table.start)
    assert 1 < play.states.size < table.result.num_states
    assert np.all(np.isin(play.states, table.result.states))
    whole = build_graph(game, table.result.states)
    expected, pmf = expected_length_and_distribution(
        whole, table.result.row_strategy, table.result.col_strategy, table.result.index_of(table.start), 400
    )
    assert summary.expected_length == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(summary.length_pmf, pmf, atol=1e-15)


def test_figures_alone_are_read_from_the_table_without_following_play(small_summary, monkeypatch):
    import solver.summary

    table, summary = small_summary

    def no_following(*args, **kwargs):
        raise AssertionError("followed play through the table")

    monkeypatch.setattr(solver.summary, "play_from", no_following)
    figures = summarise_start(table, max_turns=0)
    assert figures.value == summary.value and figures.outcomes == summary.outcomes
    assert figures.expected_length == pytest.approx(summary.expected_length, rel=1e-12)
    assert figures.length_pmf.size == 0 and figures.length_beyond == 1.0
