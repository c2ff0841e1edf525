"""Solving rank by rank agrees with solving the whole graph at once."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parse_overlaps import overlapping_parses
from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.core.components import strongly_connected_components
from solver.core.graph import build_graph, reachable_states
from solver.core.layered import (
    _OffsetColumn,
    _SharedFigures,
    _states_and_slots,
    enumerate_by_rank,
    solve_layers,
    solve_layers_at,
)
from solver.core.shared_arrays import SharedArrays
from solver.core.solve import _solve_graph

VARIANTS = {  # each with several ranks and cycles within them, and each solved in seconds
    "no-bonus": ["board=S.M", "health=1", "bonus_cards="],
    "a-star-and-a-ray": ["board=S*M", "health=1", "bonus_cards=ray"],
    "longer-board-trap": ["board=S..M", "health=1", "bonus_cards=trap"],
}


def _both(overrides):
    rules = apply_overrides(RuleSet(), overrides)
    game = ChargeSparkGame(rules)
    root = game.encode(initial_position(rules))
    layers = enumerate_by_rank(game, [root])
    whole = _solve_graph(build_graph(game, reachable_states(game, [root])), game, {}, show_progress=False)
    return game, root, layers, solve_layers(game, layers), whole


@pytest.fixture(scope="module", params=VARIANTS.values(), ids=VARIANTS.keys())
def solved_both_ways(request):
    return _both(request.param)


def test_no_transition_lowers_the_rank_or_changes_the_seat_order_within_one(solved_both_ways):
    game, _, layers, _, _ = solved_both_ways
    for layer in layers:
        e = game.expand(layer.states)
        nxt = e.out_next
        assert np.all(game.progress_rank(nxt[nxt >= 0]) >= layer.rank)
        assert np.all(game.progress_rank(layer.states) == layer.rank)
        # The seat order of each outcome's source state, beside that of the state it leads to.
        cells = np.repeat(np.arange(layer.states.size), e.row_count * e.col_count)
        source = np.repeat(cells, e.out_count)
        same = nxt >= 0
        same[same] = game.progress_rank(nxt[same]) == layer.rank
        order = game.seat_order(layer.states)
        np.testing.assert_array_equal(game.seat_order(nxt[same]), order[source[same]])
        assert np.unique(order).size == 1  # a layer holds one seat order


def test_layers_hold_exactly_the_reachable_states(solved_both_ways):
    game, _, layers, layered, whole = solved_both_ways
    ranks = [layer.rank for layer in layers]
    assert ranks == sorted(ranks)
    np.testing.assert_array_equal(layered.states, whole.states)
    # Folded: a rank's positions ahead for P2 are the twins of those ahead for P1, never expanded.
    for number, layer in enumerate(layers):
        if layer.twin_of is not None:
            source = layers[layer.twin_of]
            assert source.rank == layer.rank and number == layer.twin_of + 1
            np.testing.assert_array_equal(layer.states, np.sort(game.swap(source.states)))
            assert np.all(game.seat_order(source.states) == -1)
    assert any(layer.twin_of is not None for layer in layers)


def test_folding_by_seat_changes_nothing_but_the_work(solved_both_ways, monkeypatch):
    import solver.core.layered as layered_module

    game, root, layers, folded, _ = solved_both_ways
    monkeypatch.setattr(layered_module, "folds_by_seat", lambda game: False)
    plain_layers = enumerate_by_rank(game, [root])
    assert len(plain_layers) < len(layers) and all(layer.twin_of is None for layer in plain_layers)
    plain = solve_layers(game, plain_layers)
    np.testing.assert_array_equal(plain.states, folded.states)
    for name in ("middle", "p1_guarantee", "p2_guarantee"):
        np.testing.assert_allclose(getattr(folded, name), getattr(plain, name), atol=1e-10, err_msg=name)
    for name in ("row_ptr", "row_actions", "col_ptr", "col_actions"):
        np.testing.assert_array_equal(getattr(folded, name), getattr(plain, name), err_msg=name)


def test_roots_that_are_not_their_own_twins_are_not_folded():
    # From a position whose twin is not reachable, folding would solve states play never reaches.
    from rules.charge_spark.notation import parse_position

    rules = apply_overrides(RuleSet(), VARIANTS["a-star-and-a-ray"])
    game = ChargeSparkGame(rules)
    root = game.encode(parse_position("b1 rest=spark / rest=move", rules))
    layers = enumerate_by_rank(game, [root])
    assert all(layer.twin_of is None for layer in layers)
    np.testing.assert_array_equal(np.sort(np.concatenate([layer.states for layer in layers])), reachable_states(game, [root]))
    both = enumerate_by_rank(game, [root, int(game.swap(np.array([root]))[0])])
    assert any(layer.twin_of is not None for layer in both)


def test_many_roots_ranked_a_piece_at_a_time_give_the_same_layers(monkeypatch):
    # A wild table's roots are every open position: they are ranked in pieces, never all at once.
    import solver.core.layered as layered

    rules = apply_overrides(RuleSet(), VARIANTS["a-star-and-a-ray"])
    game = ChargeSparkGame(rules)
    roots = reachable_states(game, [game.encode(initial_position(rules))])[::5]
    at_once = enumerate_by_rank(game, roots)
    ranked: list[int] = []
    rank_of = game.progress_rank
    monkeypatch.setattr(game, "progress_rank", lambda codes: ranked.append(len(codes)) or rank_of(codes))
    monkeypatch.setattr(layered, "_SEED_PIECE", 97)
    in_pieces = enumerate_by_rank(game, roots)
    assert max(ranked) <= max(97, *(layer.states.size for layer in in_pieces))  # the roots: 97 at a time
    assert ranked[: -(-roots.size // 97)] == [97] * (roots.size // 97) + ([roots.size % 97] if roots.size % 97 else [])
    assert [(layer.rank, layer.twin_of) for layer in in_pieces] == [(layer.rank, layer.twin_of) for layer in at_once]
    for a, b in zip(in_pieces, at_once):
        np.testing.assert_array_equal(a.states, b.states)


def test_values_agree_with_the_whole_graph_solve(solved_both_ways):
    _, root, _, layered, whole = solved_both_ways
    np.testing.assert_allclose(layered.middle, whole.values, atol=1e-9)
    assert layered.middle[np.searchsorted(layered.states, root)] == pytest.approx(0.5, abs=1e-9)


def test_composed_certificate_matches_global_best_responses(solved_both_ways):
    # The per-rank guarantees, each composed with the guarantees of the states
    # it exits to, equal a best response computed over the whole graph.
    from solver.core.best_response import best_response_values

    game, _, _, layered, _ = solved_both_ways
    graph = build_graph(game, layered.states)
    np.testing.assert_array_equal(graph.row_ptr, layered.row_ptr)
    np.testing.assert_array_equal(graph.row_actions, layered.row_actions)
    np.testing.assert_array_equal(graph.col_actions, layered.col_actions)
    lower = best_response_values(graph, 0, layered.row_strategy)
    upper = best_response_values(graph, 1, layered.col_strategy)
    np.testing.assert_allclose(layered.p1_guarantee, lower, atol=1e-11)
    np.testing.assert_allclose(layered.p2_guarantee, upper, atol=1e-11)
    assert np.max(upper - lower) <= 1e-9
    assert layered.bellman_residual <= 1e-9


def test_composed_outcome_probabilities_and_length_match_the_whole_chain(solved_both_ways):
    # Each rank's exits carry the outcome chances and ending turns of where they
    # lead (the seat-swapped ranks their twins', seats swapped): composed, they
    # are those of the strategies' Markov chain over the whole graph.
    from solver.core.absorption import outcomes_and_ending_turns

    game, _, _, layered, _ = solved_both_ways
    graph = build_graph(game, layered.states)
    terminal, unending, turns = outcomes_and_ending_turns(
        graph, layered.row_strategy, layered.col_strategy, terminal_turns=np.zeros(len(graph.terminal_payoff)),
    )
    np.testing.assert_allclose(layered.terminal_probability, terminal, atol=1e-9)
    np.testing.assert_allclose(layered.unending_probability, unending, atol=1e-9)
    np.testing.assert_allclose(layered.ending_turns, turns, rtol=1e-9, atol=1e-9)
    assert np.all(layered.ending_turns >= terminal.sum(axis=1) - 1e-12)  # every game that ends lasts a turn


def test_a_rank_is_closed_under_its_own_cycles(solved_both_ways):
    # Every strongly connected component of the whole graph lies within one rank.
    game, _, _, layered, _ = solved_both_ways
    graph = build_graph(game, layered.states)
    comp_ptr, comp_states = strongly_connected_components(graph)
    ranks = game.progress_rank(layered.states)
    for lo, hi in zip(comp_ptr[:-1], comp_ptr[1:]):
        assert np.unique(ranks[comp_states[lo:hi]]).size == 1


def test_two_worker_processes_give_the_same_solution():
    game, root, layers, alone, _ = _both(VARIANTS["longer-board-trap"])
    together = solve_layers(game, layers, workers=2)
    for name in ("states", "row_ptr", "row_actions", "row_strategy", "col_strategy", "middle", "p1_guarantee",
                 "p2_guarantee", "terminal_probability", "unending_probability", "ending_turns"):
        np.testing.assert_array_equal(getattr(together, name), getattr(alone, name), err_msg=name)


def test_strategies_assembled_a_few_states_at_a_time_are_the_same(solved_both_ways, monkeypatch):
    """`_assemble` fills each side's strategy arrays a band of states at a time, reading every
    layer again for each band: seven bands or more give the table a single band does."""
    import solver.core.layered as layered_module

    game, _, layers, whole_bands, _ = solved_both_ways
    cut = []
    real_bands = layered_module._bands
    monkeypatch.setattr(layered_module, "ASSEMBLY_BAND_BYTES", whole_bands.row_strategy.nbytes // 7)
    monkeypatch.setattr(layered_module, "_bands", lambda *args: cut.append(real_bands(*args)) or cut[-1])
    banded = solve_layers(game, layers)
    assert len(cut) == 2 and min(len(bands) for bands in cut) >= 7  # one pass a side, its bands cut for the weights
    for bands in cut:  # the bands cover every state once, in order
        assert bands[0][0] == 0 and bands[-1][1] == whole_bands.states.size
        assert all(a[1] == b[0] for a, b in zip(bands[:-1], bands[1:]))
    for name in ("row_ptr", "row_actions", "row_strategy", "col_ptr", "col_actions", "col_strategy"):
        np.testing.assert_array_equal(getattr(banded, name), getattr(whole_bands, name), err_msg=name)


def test_the_assembly_threads_never_parse_two_npy_headers_at_once(monkeypatch):
    """numpy parses a .npy header with `ast.literal_eval`, which CPython 3.11 cannot run on
    two threads at once ("SystemError: AST constructor recursion depth mismatch", seen once
    at the end of a solve): the assembly's two threads take turns (`core.ast_parsing`). Each
    parse is slowed here, so that two threads that did not take turns would overlap."""
    import solver.core.layered as layered_module

    monkeypatch.setattr(layered_module, "usable_cores", lambda: 2)
    game, root, layers, alone, _ = _both(VARIANTS["no-bonus"])
    parses = overlapping_parses(monkeypatch)
    again = solve_layers(game, layers)
    assert len(parses.threads) >= 2  # the headers were parsed on both threads ...
    assert parses.most == 1  # ... never two at once
    for name in ("row_strategy", "col_strategy", "middle"):
        np.testing.assert_array_equal(getattr(again, name), getattr(alone, name), err_msg=name)


def test_the_figures_hold_each_layer_in_one_run_and_the_table_finds_its_states_there(solved_both_ways, tmp_path):
    """The shared figures hold the layers' states one layer after another, so that a layer
    writes one run of each array; `slot_of` finds the table's state i there."""
    game, _, layers, solved, _ = solved_both_ways
    states, slot_of = _states_and_slots(layers)
    np.testing.assert_array_equal(states, solved.states)  # the table's order: the codes'
    held = np.concatenate([layer.states for layer in layers])
    np.testing.assert_array_equal(held[slot_of], states)
    figures = _SharedFigures(states.size, len(game.terminal_payoff), True, tmp_path, slot_of,
                             [layer.states.size for layer in layers])
    runs = [figures.of_layer(number) for number in range(len(layers))]
    assert runs[0].start == 0 and runs[-1].stop == states.size
    assert all(a.stop == b.start for a, b in zip(runs[:-1], runs[1:]))
    for layer, run in zip(layers, runs):
        np.testing.assert_array_equal(held[run], layer.states)


def test_two_worker_processes_enumerate_the_same_layers():
    # Small chunks, so that each frontier is split among the workers.
    rules = apply_overrides(RuleSet(), VARIANTS["a-star-and-a-ray"])
    game = ChargeSparkGame(rules)
    root = game.encode(initial_position(rules))
    alone = enumerate_by_rank(game, [root], chunk=64)
    together = enumerate_by_rank(game, [root], chunk=64, workers=2)
    assert [(layer.rank, layer.exit_ranks) for layer in together] == [(layer.rank, layer.exit_ranks) for layer in alone]
    for a, b in zip(alone, together):
        np.testing.assert_array_equal(a.states, b.states)
    top = alone[-1].rank
    assert all(layer.exit_ranks and min(layer.exit_ranks) > layer.rank for layer in alone if layer.rank < top)


def test_a_killed_solve_leaves_no_working_files_behind_the_next_one(tmp_path):
    import subprocess
    import sys

    from solver.core.layered import _SPILL_PREFIX

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    abandoned = tmp_path / f"{_SPILL_PREFIX}{int(gone.stdout)}-x1y2"  # that process has exited
    abandoned.mkdir()
    (abandoned / "0.npz").write_bytes(b"left by a solve that was killed")
    alive = tmp_path / f"{_SPILL_PREFIX}{os.getpid()}-a1b2"  # a solve still running
    alive.mkdir()
    rules = apply_overrides(RuleSet(), VARIANTS["no-bonus"])
    game = ChargeSparkGame(rules)
    layers = enumerate_by_rank(game, [game.encode(initial_position(rules))])
    solve_layers(game, layers, scratch_dir=tmp_path)
    assert not abandoned.exists() and alive.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [alive.name]  # and its own was removed


def test_p2_guarantees_are_mirrored_from_p1s_not_recomputed(monkeypatch):
    # With a symmetric game every state's strategies mirror its twin's, so the
    # certificate of a layer holding both twins computes P1's best responses
    # only (of the value solve's strategies, where they are the ones reported);
    # the global best responses above check that the mirrored guarantees are exact.
    import solver.core.layered as layered_module
    from solver.core.bracketing import mirrors_strategies

    seats = []
    real = layered_module.best_response_values

    def counted(graph, seat, strategy, *start):
        seats.append(seat)
        return real(graph, seat, strategy, *start)

    rules = apply_overrides(RuleSet(), VARIANTS["a-star-and-a-ray"])
    game = ChargeSparkGame(rules)
    layers = enumerate_by_rank(game, [game.encode(initial_position(rules))])
    # Only the layers are solved here: the whole-graph solve calls the same best responses.
    monkeypatch.setattr(layered_module, "best_response_values", counted)
    # Without hurried play the value solve's strategies are the ones reported, and certified.
    solve_layers_at(game, layers, np.array([game.encode(initial_position(rules))]), hurried=False)
    # A layer of positions ahead for one seat has its twins in another layer (mirrored from
    # it, so not there yet): P2's best responses there are computed, elsewhere mirrored.
    twinned = {layer.twin_of for layer in layers if layer.twin_of is not None}
    assert twinned and seats.count(0) == len(layers) - len(twinned) and seats.count(1) == len(twinned)
    # With hurried play, its strategies are the ones certified (by their own best responses).
    seats.clear()
    layered = solve_layers(game, layers)
    assert seats == []
    graph = build_graph(game, layered.states)
    twin = np.searchsorted(layered.states, game.swap(layered.states))
    assert mirrors_strategies(graph, twin, layered.row_strategy, layered.col_strategy)


def test_distinct_codes_by_sorting_equal_numpys_unique():
    from solver.core.graph import distinct_sorted, merged_distinct

    rng = np.random.default_rng(7)
    for count in (1, 2, 5):
        parts = [np.unique(rng.integers(0, 500, rng.integers(0, 300))) for _ in range(count)]
        np.testing.assert_array_equal(merged_distinct(parts), np.unique(np.concatenate(parts)))
        mixed = rng.integers(-3, 1 << 40, 1000)
        np.testing.assert_array_equal(distinct_sorted(np.r_[mixed, mixed[:100]]), np.unique(mixed))
    assert merged_distinct([np.array([], np.int64), np.array([], np.int64)]).size == 0
    assert distinct_sorted(np.array([5], np.int64)).tolist() == [5]


def test_a_game_without_choices_is_solved_as_its_markov_chain(monkeypatch):
    # Both players fixed (uniform P1 against the table's P2): every layer is a
    # chain, solved by linear solves; the bracket on the same layers agrees.
    import solver.core.layered as layered_module
    from solver.analysis.policy_play import PolicyPlay, table_policy
    from solver.analysis.skill_gap import uniform_policy

    game, root, _, _, whole = _both(VARIANTS["a-star-and-a-ray"])
    fixed = PolicyPlay(game, lambda codes, ptr, actions: uniform_policy(ptr), table_policy(whole, 1))
    layers = enumerate_by_rank(fixed, [root])
    chain = solve_layers(fixed, layers)
    assert chain.rounds == 0
    monkeypatch.setattr(layered_module, "_no_choices", lambda graph: False)
    bracketed = solve_layers(fixed, layers)
    assert bracketed.rounds > 0  # the chain has cycles: the bracket had work to do
    for name in ("middle", "p1_guarantee", "p2_guarantee", "terminal_probability", "unending_probability",
                 "ending_turns"):
        np.testing.assert_allclose(getattr(chain, name), getattr(bracketed, name), atol=1e-10, err_msg=name)
    assert np.max(chain.p2_guarantee - chain.p1_guarantee) <= 1e-12
    assert chain.bellman_residual <= 1e-12


@settings(max_examples=200, deadline=None)
@given(
    middle=st.lists(st.floats(-2.0, 2.0, allow_nan=False), min_size=1, max_size=50),
    offsets=st.lists(st.one_of(st.floats(-1e-9, 1e-9), st.floats(-1.0, 1.0), st.just(0.0)), min_size=50, max_size=50),
)
def test_guarantees_kept_as_offsets_never_read_back_stronger(middle, offsets):
    """A guarantee kept as a float32 offset from the value reads back on its
    side's weaker end of the figure written, within a float32 step of the
    offset and a few float64 steps of the figure."""
    n = len(middle)
    base = np.asarray(middle)
    written = base + np.asarray(offsets[:n])
    for lower in (True, False):
        store = SharedArrays()
        column = _OffsetColumn(store, store.array((n,), np.float64), n, lower=lower)
        column.middle[:] = base
        column[np.arange(n)] = written
        back = column[np.arange(n)]
        assert np.all(back <= written) if lower else np.all(back >= written)
        slack = (np.abs(written - base) * 2.0**-22 + 8.0 * np.spacing(np.maximum(np.abs(base), np.abs(written)))
                 + 2.0**-148)  # float32's smallest step, where the offset is all but 0
        assert np.all(np.abs(back - written) <= slack)
        # An offset that float32 holds (a tie with the value, a simple fraction) is kept exactly:
        # a tie between two guarantees must stay a tie, or hurried play's choice among them moves.
        held = (written - base).astype(np.float32).astype(np.float64) + base == written
        assert np.all(back[held] == written[held])
