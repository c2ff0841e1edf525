"""One side's guarantees of a solved table stored alone (`core.guarantee_file`): what
is read back is what was written, and a damaged or foreign file is refused."""

from __future__ import annotations

import numpy as np
import pytest

from dict_game import LOSS, WIN, DictGame
from solver.core.guarantee_file import (
    GuaranteeTable,
    guarantee_bytes,
    guarantees_of,
    load_guarantees,
    save_guarantees,
)
from solver.core.solve import solve_from
from solver.core.table_file import BLOCK_BYTES, DamagedTableError, TableFormat, save_table

FMT = TableFormat("test guarantees", 1, "tests")


def _table(n: int, seed: int = 0) -> GuaranteeTable:
    rng = np.random.default_rng(seed)
    states = np.sort(rng.choice(10 * n, size=n, replace=False)).astype(np.int64) * 7
    return GuaranteeTable(states, rng.random(n), "p2_guarantee", 3e-11, "test")


def test_what_is_read_back_is_what_was_written_across_many_blocks(tmp_path):
    table = _table(3 * BLOCK_BYTES // 8 + 11)  # the states span four blocks, the last one part full
    path = tmp_path / "g.npz"
    save_guarantees(path, table, "k", {"rules": "x"}, fmt=FMT)
    back = load_guarantees(path, "k", fmt=FMT)
    np.testing.assert_array_equal(back.states, table.states)
    np.testing.assert_array_equal(np.asarray(back.guarantee), table.guarantee)
    assert isinstance(back.guarantee, np.memmap)  # read as needed, not loaded
    assert (back.side, back.max_exploitability, back.method) == ("p2_guarantee", 3e-11, "test")
    for i in (0, 1, BLOCK_BYTES // 8, table.num_states - 1):
        assert back.guarantee_at(int(table.states[i])) == table.guarantee[i]
    with pytest.raises(KeyError):
        back.guarantee_at(int(table.states[5]) + 1)  # codes are multiples of 7: this one is not held
    assert path.stat().st_size < guarantee_bytes(table) + 64 * 1024


def test_a_solved_tables_guarantees_are_its_own_not_a_copy():
    result = solve_from(_a_solvable_game(), [0], show_progress=False)
    table = guarantees_of(result, "p1_guarantee")
    assert table.guarantee is result.p1_guarantee and table.num_states == result.num_states == 2
    with pytest.raises(ValueError, match="side"):
        guarantees_of(result, "values")


@pytest.mark.parametrize("where", ["states", "guarantee", "header"])
def test_a_flipped_byte_anywhere_is_refused(tmp_path, where):
    table = _table(5000)
    path = tmp_path / "g.npz"
    save_guarantees(path, table, "k", fmt=FMT)
    raw = bytearray(path.read_bytes())
    marker = {"states": table.states[2500].tobytes(), "guarantee": table.guarantee[2500].tobytes(),
              "header": b'"max_exploitability"'}[where]
    at = bytes(raw).index(marker) + 1
    raw[at] ^= 0x01
    path.write_bytes(bytes(raw))
    with pytest.raises(DamagedTableError, match=str(path)):
        load_guarantees(path, "k", fmt=FMT)


def test_another_key_format_or_kind_of_file_is_refused(tmp_path):
    path = tmp_path / "g.npz"
    save_guarantees(path, _table(100), "k", fmt=FMT)
    with pytest.raises(DamagedTableError, match="expected 'other'"):
        load_guarantees(path, "other", fmt=FMT)
    with pytest.raises(DamagedTableError, match="not a solved table"):
        load_guarantees(path, "k", fmt=TableFormat("another format", 1, "tests"))
    (tmp_path / "junk.npz").write_bytes(b"not a zip at all")
    with pytest.raises(DamagedTableError, match="unreadable"):
        load_guarantees(tmp_path / "junk.npz", "k", fmt=FMT)
    with pytest.raises(FileNotFoundError):
        load_guarantees(tmp_path / "none.npz", "k", fmt=FMT)


def test_a_whole_table_is_not_taken_for_guarantees(tmp_path):
    game = _a_solvable_game()
    result = solve_from(game, [0], show_progress=False)
    path = tmp_path / "whole.npz"
    save_table(path, result, "k", fmt=FMT)
    with pytest.raises(DamagedTableError):
        load_guarantees(path, "k", fmt=FMT)  # it holds both sides' guarantees and no header naming one


def _a_solvable_game() -> DictGame:
    """Matching pennies that, on a mismatch, goes to a state that comes back half the time."""
    return DictGame({
        0: {(0, 0): [(1.0, WIN)], (1, 1): [(1.0, WIN)], (0, 1): [(1.0, 1)], (1, 0): [(1.0, 1)]},
        1: {(0, 0): [(0.5, 0), (0.5, LOSS)]},
    }, ["a", "b"])
