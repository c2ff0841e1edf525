"""The report's analyses of play from one pass (`follow_play`: each reached
state expanded once) and one propagation (`turn_by_turn`) equal the figures
of today's separate paths, kept here as the reference: `play_from`,
`expected_visits`, `length_distribution`, `table_card_usage` (with
`card_flags` over the whole table), `table_draw_values` and `stall_chain`."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.analysis.card_status import card_flags, flags_for_statuses
from solver.analysis.draws import draw_sums_of, draws_from_play, table_draw_values
from solver.analysis.stalls import smallest_chosen, smallest_in_chunk, stall_chain, stall_chain_of_play, stalls
from solver.analysis.usage import choices_to_follow, statuses, table_card_usage, usage_from_play
from solver.core.absorption import length_distribution
from solver.core.chain import chain_of_play, expected_visits, turn_by_turn
from solver.core.play import follow_play, play_from
from solver.core.solve import solve_from

TOLERANCE = 1e-9
TINY = ["board=S*M", "health=1", "battery_tiles=2", "disc_tiles=2", "bonus_cards=ray,copy"]
NO_BONUS = ["board=SM", "health=2", "battery_tiles=2", "disc_tiles=2", "bonus_cards="]


def solved(rule_set: list[str]):
    rules = apply_overrides(RuleSet(), rule_set)
    game = ChargeSparkGame(rules)
    code = game.encode(initial_position(rules))
    result = solve_from(game, [code], show_progress=False)
    return game, replace(result, graph=None), code  # as the report sees a stored table


@pytest.fixture(scope="module", params=[TINY, NO_BONUS], ids=["tiny", "no-bonus"])
def table(request):
    return solved(request.param)


def assert_one_pass_equals_the_separate_paths(game, result, code, chunk: int = 1 << 16) -> None:
    """Every figure of the one pass against today's path, to `TOLERANCE` (the graph exactly)."""
    play = play_from(game, result, code)
    followed = follow_play(game, result, code, draw_sums_of(game, result), chunk=chunk)
    mine = followed.play
    assert np.array_equal(mine.states, play.states) and np.array_equal(mine.index, play.index)
    assert mine.start == play.start and mine.graph is None

    chain = chain_of_play(play.graph)
    assert_same_chain(followed.chain, chain)
    figures = turn_by_turn(followed.chain, mine.start, 200, choices_to_follow(followed),
                           len(game.action_labels))
    visits = expected_visits(chain, play.start)
    np.testing.assert_allclose(figures.visits, visits, rtol=0, atol=TOLERANCE)
    ones = play.strategy
    np.testing.assert_allclose(figures.length_pmf, length_distribution(play.graph, ones, ones, play.start, 200),
                               rtol=0, atol=TOLERANCE)

    usage, before = usage_from_play(game, result, followed, figures), table_card_usage(game, result, play, chain)
    assert usage.cards == before.cards and usage.status == before.status
    for name in ("overall", "by_turn", "alive"):
        np.testing.assert_allclose(getattr(usage, name), getattr(before, name), rtol=0, atol=TOLERANCE)

    draws, reference = draws_from_play(game, followed, figures.visits), table_draw_values(game, result, play, visits)
    assert [d.card for d in draws] == [d.card for d in reference]
    np.testing.assert_allclose([d.gain for d in draws], [d.gain for d in reference], rtol=0, atol=TOLERANCE)
    np.testing.assert_allclose([d.draws_per_game for d in draws], [d.draws_per_game for d in reference],
                               rtol=0, atol=TOLERANCE)

    found = stalls(stall_chain_of_play(followed, result), 0.0)
    assert found == stalls(stall_chain(play, result, chain), 0.0)
    # The stalls' own pass keeps no choices, only each state's smallest probability.
    lean = follow_play(game, result, code, smallest_in_chunk, chunk=chunk, keep_choices=False)
    assert lean.choices is None and np.array_equal(lean.gathered_at, np.arange(play.states.size))
    assert_same_chain(lean.chain, chain)
    assert np.array_equal(lean.gathered, smallest_chosen(followed.choices))
    assert stalls(stall_chain_of_play(lean, result, lean.gathered), 0.0) == found


def assert_same_chain(mine, reference) -> None:
    """The chain built from follow_play's kept edges equals `chain_of_play` of the graph, to the last bit."""
    for name in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(mine.transition, name), getattr(reference.transition, name)), name
    assert mine.transition.shape == reference.transition.shape
    assert np.array_equal(mine.ending, reference.ending)


def test_one_pass_equals_the_separate_paths(table):
    assert_one_pass_equals_the_separate_paths(*table)


def test_one_pass_in_small_chunks_equals_the_separate_paths(table):
    # Many chunks a frontier: the states, followed breadth first, are put back in the table's order.
    assert_one_pass_equals_the_separate_paths(*table, chunk=37)


def test_play_lets_go_of_the_tables_pages_every_few_chunks_and_once_at_the_end(table, monkeypatch):
    # Released after every chunk, a mapped table's pages were read again by the next chunk.
    import solver.core.play as play

    game, result, code = table
    released, trimmed, chunks = [], [], []
    monkeypatch.setattr(play, "LET_GO_EVERY", 3)
    monkeypatch.setattr(type(result), "release_mapped_pages", lambda self: released.append(1))
    monkeypatch.setattr(play, "trim_heap", lambda: trimmed.append(1))
    followed = follow_play(game, result, code, chunk=37, progress=chunks.append)
    assert len(chunks) > 6 and sum(chunks) == followed.play.states.size
    assert len(released) == len(chunks) // 3 + 1
    assert len(trimmed) >= len(released)  # the heap is trimmed with them (and as play is put in order)


@pytest.mark.parametrize("chunk", [37, 1 << 16])
def test_play_followed_on_two_processes_keeps_what_one_keeps_to_the_last_bit(table, chunk):
    # chunk 37: the workers are started and chunks go out before a turn is done; 1 << 16: play
    # never outgrows one chunk, and is followed here alone.
    game, result, code = table
    alone = follow_play(game, result, code, draw_sums_of(game, result), chunk=chunk)
    shared = follow_play(game, result, code, draw_sums_of(game, result), chunk=chunk, workers=2)
    assert np.array_equal(shared.play.states, alone.play.states) and shared.play.start == alone.play.start
    assert_same_chain(shared.chain, alone.chain)
    for mine, reference in zip(shared.choices, alone.choices):
        for name in ("ptr", "actions", "weights"):
            assert np.array_equal(getattr(mine, name), getattr(reference, name)), name
    assert np.array_equal(shared.gathered_at, alone.gathered_at) and np.array_equal(shared.gathered, alone.gathered)


@pytest.mark.slow
def test_one_pass_equals_the_separate_paths_on_a_full_small_board():
    assert_one_pass_equals_the_separate_paths(*solved(["board=S*M", "health=1"]))


def test_the_turns_followed_stop_where_the_chains_masses_do_and_the_length_runs_on(table):
    game, result, code = table
    play = play_from(game, result, code)
    chain = chain_of_play(play.graph)
    figures = turn_by_turn(chain, play.start, 200, alive_below=1e-3)
    alive = [mass.sum() for mass in chain.masses(play.start, 200, alive_below=1e-3)]
    np.testing.assert_allclose(figures.alive, alive, rtol=0, atol=1e-15)
    assert figures.chosen.shape == (0, len(alive), 0)
    assert figures.length_pmf.size == 200 and figures.length_pmf[len(alive):].sum() > 0


def test_card_statuses_where_no_card_is_played_from_the_start_equal_the_whole_tables(table):
    """With nothing played from the start, every status rests on the whole
    table: the cards P1 never plays are looked for as optimal replies."""
    game, result, _code = table
    nothing = np.zeros(len(game.action_labels), bool)
    flags, whole = flags_for_statuses(game, result, nothing, chunk=101), card_flags(game, result, np.zeros(0, np.int64))
    assert np.array_equal(flags.legal, whole.legal) and np.array_equal(flags.played, whole.played)
    legal = np.flatnonzero(whole.legal)
    cards = tuple(game.action_labels[a] for a in legal)
    assert statuses(flags, legal, cards) == statuses(whole, legal, cards)
    never = whole.legal & ~whole.played
    assert np.array_equal(flags.optimal_reply[never], whole.optimal_reply[never])


def test_following_play_over_a_stored_table_keeps_none_of_its_pages(tmp_path, table):
    """Play over a table mapped from disk reads its strategies chunk by chunk:
    what it read must not stay resident (the printed rules' table is 12 GB,
    of which play reads the strategies of 20.7 million states)."""
    from resident import resident_bytes
    from solver.core.table_file import save_table, table_path
    from solver.core.table_reader import TableReader
    from solver.storage import TABLE_FORMAT

    game, result, code = table
    path = table_path(tmp_path, "k")
    save_table(path, result, "k", fmt=TABLE_FORMAT)
    mapped = TableReader(path, "k", TABLE_FORMAT).mapped()
    followed = follow_play(game, mapped, code, chunk=64)
    assert np.array_equal(followed.play.states, follow_play(game, result, code).play.states)
    for name in ("row_strategy", "col_strategy", "row_ptr", "col_ptr"):
        assert resident_bytes(getattr(mapped, name)) == 0, name


def test_a_lookup_galloping_on_from_the_last_place_finds_what_a_binary_search_finds():
    from solver.core.absorption import sorted_positions

    rng = np.random.default_rng(5)
    for size in (0, 1, 7, 1000, 100_000):
        haystack = np.unique(rng.integers(0, 10 * size + 10, size))
        present = rng.choice(haystack, min(haystack.size, 300)) if haystack.size else np.zeros(0, np.int64)
        edges = [-1, 10 * size + 11] + ([haystack[0], haystack[-1], haystack[-1] + 1] if haystack.size else [])
        needles = np.unique(np.concatenate([present, rng.integers(-5, 10 * size + 15, 300), edges]))
        at = np.searchsorted(haystack, needles)
        found = (at < haystack.size) & (haystack[np.minimum(at, max(haystack.size - 1, 0))] == needles if haystack.size else False)
        np.testing.assert_array_equal(sorted_positions(haystack, needles), np.where(found, at, -1))
