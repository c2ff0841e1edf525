"""A solve started from the values of another game with the same state codes
(a variant of the rules, a restricted game) gives the cold solve's answer:
the estimates only change how soon each bracket closes, never what it certifies."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rules.charge_spark.config import RuleSet, apply_overrides, canonical_mapping, fingerprint
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.analysis.restricted import RestrictedJob, WithoutRowAction, value_without
from solver.analysis.sensitivity import Variant, VariantJob, summarise_variant
from solver.core.solve import solve_from
from solver.core.table_file import save_table, table_path
from solver.storage import TABLE_FORMAT
from solver.tables import WarmTable, solved_table, warm_start, warm_table_of

SMALL = ["board=S*M", "health=1"]  # 214,123 states
RULES = apply_overrides(RuleSet(), SMALL)
VARIANT = apply_overrides(RULES, ["cost.lightning.battery=3"])  # a cost: the same state codes
OTHER_ENCODING = apply_overrides(RULES, ["board=SM"])  # one move to the moon: codes of another meaning
CARD = "lightning"
TOL = 1e-9  # both answers are certified to ~1e-11

# Health 2 and two bonus cards on small tiles: cycles at every rank, solved in a second or two.
TINY = apply_overrides(RuleSet(), ["board=S*M", "health=2", "battery_tiles=2", "disc_tiles=2", "bonus_cards=ray,copy"])


def _start(rules: RuleSet) -> tuple[ChargeSparkGame, int]:
    game = ChargeSparkGame(rules)
    return game, game.encode(initial_position(rules))


def _solve(rules: RuleSet, warm=None, restricted_to: str | None = None):
    game, start = _start(rules)
    if restricted_to is not None:
        game = WithoutRowAction(game, game.action_labels.index(restricted_to))
    return solve_from(game, [start], show_progress=False, warm=warm)


def _assert_same_answer(warm, cold) -> None:
    np.testing.assert_array_equal(warm.states, cold.states)
    assert np.abs(warm.values - cold.values).max() <= TOL
    assert warm.max_exploitability <= TOL and cold.max_exploitability <= TOL


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """The small rules' table stored, as the printed rules' is for a report."""
    directory = tmp_path_factory.mktemp("tables")
    solved_table(RULES, directory)
    return directory


@pytest.fixture(scope="module")
def warm_table(cache) -> WarmTable:
    table = warm_table_of(RULES, cache)
    assert table is not None and table.key == fingerprint(RULES)
    return table


def test_only_a_stored_table_is_offered(tmp_path, warm_table):
    assert warm_table_of(RULES, tmp_path) is None
    assert warm_table_of(VARIANT, Path(warm_table.path).parent) is None


def test_games_share_an_encoding_when_only_costs_or_effects_differ():
    layout = ChargeSparkGame(RULES).encoding_layout()
    assert hash(layout) == hash(ChargeSparkGame(VARIANT).encoding_layout())
    assert layout == ChargeSparkGame(VARIANT).encoding_layout()
    assert layout != ChargeSparkGame(OTHER_ENCODING).encoding_layout()
    assert layout != ChargeSparkGame(apply_overrides(RULES, ["bonus_cards=ray"])).encoding_layout()
    game = ChargeSparkGame(RULES)
    assert WithoutRowAction(game, 0).encoding_layout() == layout  # the wrapper keeps the codes


def test_a_variant_solved_warm_has_the_cold_answer_at_every_state(tmp_path, warm_table):
    table = solved_table(VARIANT, tmp_path, warm=warm_table)
    assert table.warm_started and not table.reused
    _assert_same_answer(table.result, _solve(VARIANT))


@pytest.fixture(scope="module")
def restricted_cold():
    return _solve(RULES, restricted_to=CARD)


@pytest.mark.slow  # a minute; the warm solve's answers are checked by the variant's test, the restricted job's use of the table by its own
def test_a_restricted_game_solved_warm_has_the_cold_answer_at_every_state(cache, warm_table, restricted_cold):
    game, _ = _start(RULES)
    seed = warm_start(warm_table, WithoutRowAction(game, game.action_labels.index(CARD)))
    assert seed is not None
    _assert_same_answer(_solve(RULES, seed, CARD), restricted_cold)
    # Barring a card can only lower P1's value: the table's values bound the restricted game's from above.
    base = solved_table(RULES, cache, mapped=True).result
    assert np.all(restricted_cold.values <= base.values[np.searchsorted(base.states, restricted_cold.states)] + TOL)


def test_the_restricted_job_uses_the_warm_table(tmp_path):
    solved_table(TINY, tmp_path)
    cold = value_without(RestrictedJob(TINY, CARD))
    warm = value_without(RestrictedJob(TINY, CARD, warm_from=warm_table_of(TINY, tmp_path)))
    assert warm.error is None and warm.warm_started and not cold.warm_started
    assert warm.value == pytest.approx(cold.value, abs=TOL)


def test_a_table_of_another_encoding_is_not_used(tmp_path, warm_table):
    assert warm_start(warm_table, ChargeSparkGame(OTHER_ENCODING)) is None
    table = solved_table(OTHER_ENCODING, tmp_path, warm=warm_table)
    assert not table.warm_started
    _assert_same_answer(table.result, _solve(OTHER_ENCODING))
    variant = Variant("board SM (S*M)", "--set board=SM", OTHER_ENCODING, key="board", step=-1)
    summary = summarise_variant(VariantJob(variant, str(tmp_path / "jobs"), warm_from=warm_table))
    assert not summary.warm_started
    assert summary.value == pytest.approx(table.result.values[table.result.index_of(_start(OTHER_ENCODING)[1])], abs=TOL)


def test_a_missing_table_means_a_cold_start(tmp_path):
    assert warm_start(WarmTable(str(tmp_path / "none.npz"), fingerprint(RULES)), ChargeSparkGame(RULES)) is None
    assert warm_start(None, ChargeSparkGame(RULES)) is None


@pytest.fixture(scope="module")
def tiny_cold():
    return _solve(TINY)


@pytest.mark.parametrize("guess", [0.0, 1.0, 0.5, -3.0])
def test_wrong_estimates_still_give_the_exact_answer(tiny_cold, guess):
    """What makes a warm start safe: every guarantee is computed exactly, so even
    estimates that are all wrong (or out of range) change nothing certified."""
    warm = _solve(TINY, lambda codes: np.full(len(codes), guess))
    _assert_same_answer(warm, tiny_cold)


def test_partial_estimates_start_the_rest_cold(tiny_cold):
    def every_other(codes):
        estimates = np.array(tiny_cold.values[np.searchsorted(tiny_cold.states, codes)])
        estimates[::2] = np.nan
        return estimates

    _assert_same_answer(_solve(TINY, every_other), tiny_cold)


def test_a_stored_table_of_wrong_values_still_gives_the_exact_answer(tmp_path, tiny_cold):
    """A sound file whose values are all 1 (as if P1 won everywhere), through the job's path."""
    key = fingerprint(TINY)
    wrong = replace(tiny_cold, values=np.ones_like(tiny_cold.values))
    save_table(table_path(tmp_path / "wrong", key), wrong, key, {"fingerprint": key, "rules": canonical_mapping(TINY)}, fmt=TABLE_FORMAT)
    rules = apply_overrides(TINY, ["cost.ray.disc=0"])
    variant = Variant("ray costs 0 disc (1)", "--set cost.ray.disc=0", rules, key="cost.ray.disc", step=-1)
    job = VariantJob(variant, str(tmp_path / "solved"), warm_from=warm_table_of(TINY, tmp_path / "wrong"))
    summary = summarise_variant(job)
    assert summary.warm_started and not summary.reused
    assert not (tmp_path / "solved").exists() or not any((tmp_path / "solved").iterdir())  # no table stored
    cold = _solve(rules)
    assert cold.max_exploitability <= TOL
    assert summary.value == pytest.approx(cold.values[cold.index_of(_start(rules)[1])], abs=TOL)


def test_each_layer_asks_for_the_estimates_of_its_own_states(tiny_cold):
    asked = []

    def recorded(codes):
        asked.append(np.array(codes))
        return np.full(len(codes), np.nan)

    _assert_same_answer(_solve(TINY, recorded), tiny_cold)
    assert asked and all(np.all(np.diff(codes) > 0) for codes in asked)  # sorted, each once
    every = np.sort(np.concatenate(asked))
    assert np.all(np.diff(every) > 0) and np.all(np.isin(every, tiny_cold.states))
    assert every.size < tiny_cold.num_states  # the seat-swapped twins are copied, not solved


def test_forked_workers_read_the_stored_table(tmp_path, tiny_cold):
    solved_table(TINY, tmp_path)
    variant = apply_overrides(TINY, ["damage.spark=2"])
    game, start = _start(variant)
    seed = warm_start(warm_table_of(TINY, tmp_path), game)
    assert seed is not None
    warm = solve_from(game, [start], show_progress=False, warm=seed, workers=2)
    _assert_same_answer(warm, _solve(variant))


def test_the_bench_times_both_starts_and_checks_the_answers():
    from solver.bench import _cold_and_warm, bench_warm_start

    lines = bench_warm_start(["board=S*M", "health=2", "battery_tiles=2", "disc_tiles=2", "bonus_cards=ray,copy"])
    assert len(lines) == 4 and "the rules' own table" in lines[1]
    for line in lines[2:]:
        assert "cold" in line and "warm" in line and "ratio" in line and "DISAGREE" not in line
    assert "no warm start" in _cold_and_warm("board SM", ChargeSparkGame(OTHER_ENCODING), 0, None)


def test_estimates_read_through_the_tables_index_are_the_stored_values(warm_table):
    """A warm start of an indexed table holds no copy of its codes: each
    layer's states are looked up block by block. The estimates are the
    stored values where the table holds a state, nan elsewhere, whatever
    the order the codes come in."""
    from solver.core.boundary import Boundary
    from solver.core.table_reader import TableReader

    reader = TableReader(Path(warm_table.path), warm_table.key, TABLE_FORMAT)
    assert reader.indexed
    stored = reader.take("states", 0, reader.num_states)
    values = reader.take("values", 0, reader.num_states)
    rng = np.random.default_rng(7)
    held = rng.choice(stored, 5_000, replace=False)
    absent = np.setdiff1d(rng.integers(0, stored.max() + 10, 5_000), stored)
    absent = np.concatenate([absent, [stored.min() - 1, stored.max() + 1]])
    codes = rng.permutation(np.concatenate([held, absent]))
    estimates = warm_start(warm_table, ChargeSparkGame(VARIANT))(codes)
    expected = np.full(codes.size, np.nan)
    inside = np.isin(codes, stored)
    expected[inside] = values[np.searchsorted(stored, codes[inside])]
    np.testing.assert_array_equal(estimates, expected)
    np.testing.assert_array_equal(estimates, Boundary.of_stored(reader).estimates(codes))
