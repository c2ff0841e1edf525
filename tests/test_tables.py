"""Getting a rule set's table: memory-mapped reading (every block still
verified), and no new table stored where it would leave the disk short."""

from __future__ import annotations

import errno
from collections import namedtuple

import numpy as np
import pytest

import solver.core.solve as core_solve
from rules.charge_spark.config import RuleSet, apply_overrides, fingerprint
from solver import tables
from solver.core.result import ARRAY_FIELDS
from solver.core.table_file import DamagedTableError, load_table, table_path
from solver.core.table_reader import TableReader
from solver.storage import TABLE_FORMAT

SMALL = apply_overrides(RuleSet(), ["board=SM", "health=1", "bonus_cards="])
Usage = namedtuple("Usage", "total used free")


def test_a_mapped_table_holds_what_a_loaded_one_does(tmp_path):
    solved = tables.solved_table(SMALL, tmp_path)
    mapped = tables.solved_table(SMALL, tmp_path, mapped=True)
    loaded = load_table(solved.path, fingerprint(SMALL), fmt=TABLE_FORMAT)
    assert mapped.reused and isinstance(mapped.result.values, np.memmap)
    for name in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(mapped.result, name), getattr(loaded, name))


def test_a_damaged_table_is_refused_when_mapped_too(tmp_path):
    path = tables.solved_table(SMALL, tmp_path).path
    with open(path, "r+b") as f:  # a byte of the values, far from the zip's headers
        reader = TableReader(path, fingerprint(SMALL), TABLE_FORMAT)
        offset = reader._arrays["values"].offset + 8
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(DamagedTableError, match="checksum mismatch in values"):
        TableReader(path, fingerprint(SMALL), TABLE_FORMAT).mapped()
    warnings = []
    again = tables.solved_table(SMALL, tmp_path, mapped=True, warn=warnings.append)
    assert not again.reused and len(warnings) == 1 and "moved aside" in warnings[0]


def test_no_table_is_stored_where_the_disk_would_keep_too_little(tmp_path, monkeypatch):
    monkeypatch.setattr(tables.shutil, "disk_usage", lambda path: Usage(10**12, 0, tables.DISK_RESERVE_BYTES))
    warnings = []
    table = tables.solved_table(SMALL, tmp_path, warn=warnings.append)
    assert not table.stored and not table.path.exists()
    assert len(warnings) == 2 and not any("\n" in w for w in warnings)
    assert "will not be stored" in warnings[0] and "not storing the table" in warnings[1]
    assert table.result.values.size > 0  # the solve is still there to use


def test_a_solve_whose_table_the_disk_cannot_keep_says_so_before_it_starts(tmp_path, monkeypatch):
    said, solving = [], []

    real = core_solve.solve_from
    monkeypatch.setattr(core_solve, "solve_from", lambda *args, **kwargs: solving.append(len(said)) or real(*args, **kwargs))
    estimated = tables.estimate_reachable(SMALL) * tables.TABLE_BYTES_PER_STATE
    # One byte short: three times the table, as much again held by the solve until then (its
    # figures are files in the temporary directory, on this disk here), and the reserve.
    free = int(4 * estimated + tables.DISK_RESERVE_BYTES) - 1
    monkeypatch.setattr(tables.shutil, "disk_usage", lambda path: Usage(10**13, 0, free))
    tables.solved_table(SMALL, tmp_path, warn=said.append)
    assert solving == [1] and "will not be stored" in said[0] and str(tmp_path) in said[0]  # said before solving
    said.clear()
    monkeypatch.setattr(tables.shutil, "disk_usage", lambda path: Usage(10**13, 0, 10**13))
    tables.solved_table(SMALL, tmp_path / "roomy", warn=said.append)
    assert said == []


def test_an_unstored_table_asked_for_mapped_is_read_from_a_copy_deleted_at_once(tmp_path, monkeypatch):
    room = 10**12
    monkeypatch.setattr(tables, "room_to_store", lambda directory, size, held=0: False)
    monkeypatch.setattr(tables.shutil, "disk_usage", lambda path: Usage(room, 0, room))
    table = tables.solved_table(SMALL, tmp_path, mapped=True)
    assert not table.stored and isinstance(table.result.values, np.memmap)
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []  # neither kept nor left over
    reference = tables.solved_table(SMALL, tmp_path / "kept")
    for name in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(table.result, name), getattr(reference.result, name))


def test_room_to_store_needs_twice_the_size_and_the_reserve_left(tmp_path, monkeypatch):
    size = 10**9
    for free, room in ((3 * size + tables.DISK_RESERVE_BYTES, True), (3 * size + tables.DISK_RESERVE_BYTES - 1, False)):
        monkeypatch.setattr(tables.shutil, "disk_usage", lambda path, free=free: Usage(10**13, 0, free))
        assert tables.room_to_store(tmp_path, size) is room


def test_a_write_that_fails_leaves_the_stored_table_as_it_was(tmp_path, monkeypatch):
    first = tables.solved_table(SMALL, tmp_path)
    before = first.path.read_bytes()

    def disk_full(path, *args, **kwargs):
        partial = path.with_name(f".{path.name}.partial.tmp")
        partial.write_bytes(b"PK")  # the write got this far
        partial.unlink()
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tables, "save_table", disk_full)
    warnings = []
    again = tables.solved_table(SMALL, tmp_path, force=True, warn=warnings.append)
    assert not again.stored and len(warnings) == 1 and "No space left on device" in warnings[0]
    assert first.path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [first.path.name]
    assert table_path(tmp_path, fingerprint(SMALL)) == first.path


def test_a_table_solved_rank_by_rank_is_used_as_mapped_without_reading_it_back(tmp_path, monkeypatch):
    read_back = []
    monkeypatch.setattr(TableReader, "mapped", lambda self: read_back.append(self) or None)
    monkeypatch.setattr(tables, "_mapped_copy", lambda *args: read_back.append(args) or None)
    table = tables.solved_table(SMALL, tmp_path, mapped=True)
    assert read_back == [] and table.stored and not table.reused
    assert isinstance(table.result.values, np.memmap)  # the solve's own arrays, already mapped from its files
    monkeypatch.undo()
    stored = load_table(table.path, fingerprint(SMALL), fmt=TABLE_FORMAT)
    for name in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(table.result, name), getattr(stored, name))
