"""A solve from another start of a game whose table is stored stops where play
reaches the table: same answer as the whole solve, from a handful of states."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner

from rules.charge_spark.config import RuleSet, apply_overrides, fingerprint
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.notation import parse_position
from rules.charge_spark.state import initial_position
from solver.cli import main
from solver.core.boundary import Boundary
from solver.core.solve import solve_from
from solver.core.table_file import table_path
from solver.storage import TABLE_FORMAT
from solver.tables import solved_table

# Health 2, so that P1 can start one Health down; a star, two bonus cards; solved in about a second.
OVERRIDES = ["board=S*M", "health=2", "battery_tiles=2", "disc_tiles=2", "bonus_cards=ray,copy"]
RULES = apply_overrides(RuleSet(), OVERRIDES)
GAME = ChargeSparkGame(RULES)
TOL = 1e-9  # both answers are certified to ~1e-11


@pytest.fixture(scope="module")
def table():
    return solve_from(GAME, [GAME.encode(initial_position(RULES))], show_progress=False)


STARTS = {  # not in the table: each is only a start, and play never comes back to a start (its rest zones are empty)
    "handicap": lambda: GAME.encode(parse_position("h1 / ", RULES)),
    "start battery 0": lambda: GAME.encode(initial_position(replace(RULES, start_battery=0))),
}


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("start", STARTS.values(), ids=STARTS.keys())
def test_a_start_solved_to_the_edge_of_the_table_has_the_whole_solves_answer(table, start, workers):
    code = start()
    assert not Boundary.of(table).holds(np.array([code]))[0]
    whole = solve_from(GAME, [code], show_progress=False)
    edge = solve_from(GAME, [code], show_progress=False, boundary=Boundary.of(table), workers=workers)
    a, b = whole.answer(code, GAME), edge.answer(code, GAME)
    assert b.value == pytest.approx(a.value, abs=TOL)
    assert b.p1_guarantee == pytest.approx(a.p1_guarantee, abs=TOL) and b.p2_guarantee == pytest.approx(a.p2_guarantee, abs=TOL)
    assert b.exploitability < 1e-10
    assert sum(b.terminal_probability.values()) + b.unending_probability == pytest.approx(1.0)
    # Only what lies between the start and the table is solved; the rest is read from it.
    solved = int(np.count_nonzero(np.diff(edge.row_ptr)))
    assert solved < whole.num_states / 100
    held = Boundary.of(table).holds(edge.states)
    assert np.all(np.diff(edge.row_ptr)[held] == 0)  # a state read from the table carries no strategy here
    at = np.searchsorted(table.states, edge.states[held])
    assert np.array_equal(edge.values[held], table.values[at])
    assert np.array_equal(edge.p1_guarantee[held], table.p1_guarantee[at])
    assert np.array_equal(edge.terminal_probability[held], table.terminal_probability[at])


def test_a_root_the_boundary_holds_is_solved_not_read(table):
    start = GAME.encode(initial_position(RULES))
    again = solve_from(GAME, [start], show_progress=False, boundary=Boundary.of(table))
    i = again.index_of(start)
    assert again.row_ptr[i + 1] > again.row_ptr[i]  # it has strategies: it was solved
    assert again.values[i] == pytest.approx(table.values[table.index_of(start)], abs=TOL)
    assert int(np.count_nonzero(np.diff(again.row_ptr))) == 1  # and only it: its successors are all in the table


def test_a_boundary_of_another_game_is_refused(table):
    other = replace(Boundary.of(table), terminal_labels=("P1 wins", "P2 wins"))
    with pytest.raises(ValueError, match="another game"):
        solve_from(GAME, [GAME.encode(parse_position("h1 / ", RULES))], show_progress=False, boundary=other)


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def _set(overrides):
    return [arg for item in overrides for arg in ("--set", item)]


def test_a_query_beyond_the_stored_table_is_solved_to_its_edge(tmp_path):
    stored, empty = tmp_path / "stored", tmp_path / "empty"
    assert run("solve", *_set(OVERRIDES), "--cache-dir", str(stored)).exit_code == 0
    plain = run("query", "h1 / ", *_set(OVERRIDES), "--cache-dir", str(empty), "--json", "--no-store")
    edge_text = run("query", "h1 / ", *_set(OVERRIDES), "--cache-dir", str(stored))
    edge = run("query", "h1 / ", *_set(OVERRIDES), "--cache-dir", str(stored), "--json")
    assert plain.exit_code == edge.exit_code == edge_text.exit_code == 0, edge_text.output
    assert "solved up to the states the stored table" in edge_text.stdout
    assert json.loads(edge.stdout)["value"] == pytest.approx(json.loads(plain.stdout)["value"], abs=TOL)
    assert "stored table" not in run("query", "h1 / ", *_set(OVERRIDES), "--cache-dir", str(empty), "--no-store").stdout


def test_other_starts_in_the_sensitivity_section_are_solved_to_the_edge_of_the_rules_table(tmp_path):
    from solver.analysis.sensitivity import VariantJob, sensitivity_variants, summarise_variant

    variants, _ = sensitivity_variants(RULES)
    starts = [v for v in variants if v.same_game_as is not None]
    assert sorted(v.label.split(" (")[0] for v in starts) == ["P1 starts with Health 1", "start battery 0"]
    assert all(v.same_game_as is None for v in variants if v.key not in ("", "start_battery"))
    without = [summarise_variant(VariantJob(v, str(tmp_path / "empty"))) for v in starts]
    solved_table(RULES, tmp_path / "stored")
    edge = [summarise_variant(VariantJob(v, str(tmp_path / "stored"))) for v in starts]
    for a, b in zip(without, edge):
        assert b.value == pytest.approx(a.value, abs=TOL)
        assert sum(b.outcomes.values()) == pytest.approx(1.0)
    # The start-battery variant is a rule set of its own: solved to the edge, no table of it is stored.
    battery = next(v for v in starts if v.key == "start_battery")
    assert not table_path(tmp_path / "stored", fingerprint(battery.rules)).exists()


def test_a_table_found_damaged_while_solving_to_its_edge_is_moved_aside_and_the_start_solved_whole(tmp_path):
    from solver.core.table_reader import TableReader

    cache = tmp_path / "stored"
    assert run("solve", *_set(OVERRIDES), "--cache-dir", str(cache)).exit_code == 0
    (table,) = cache.glob("*.npz")
    values = TableReader(table, fingerprint(RULES), TABLE_FORMAT)._arrays["values"]  # damage every block of the values, not the codes
    data = bytearray(table.read_bytes())
    for at in range(values.offset, values.offset + values.nbytes):
        data[at] ^= 0xFF
    table.write_bytes(bytes(data))
    result = run("query", "h1 / ", *_set(OVERRIDES), "--cache-dir", str(cache), "--json")
    assert result.exit_code == 0, result.output
    said, warned = result.stderr.strip().splitlines()  # the states it would add, then the damage found
    assert said.startswith("charge-spark: this position is outside the stored table") and "moved aside" in warned
    plain = run("query", "h1 / ", *_set(OVERRIDES), "--cache-dir", str(tmp_path / "empty"), "--json", "--no-store")
    assert json.loads(result.stdout)["value"] == pytest.approx(json.loads(plain.stdout)["value"], abs=TOL)
    assert len(list(cache.glob("*.damaged-*"))) == 1 and not table.exists()
