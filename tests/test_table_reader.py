"""Reading a few states of a stored table without loading it: the same answers,
every block read is verified, damage is detected as by a full load."""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest

from rules.charge_spark.config import RuleSet, apply_overrides, fingerprint
from rules.charge_spark.game import ChargeSparkGame, ReferenceChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.core.solve import solve_from
from solver.core.table_file import FIRST_CODES, DamagedTableError, save_table, table_path
from solver.core.table_reader import TableReader
from solver.storage import TABLE_FORMAT
from solver.tables import stored_part

# Big enough that its arrays span several checksum blocks.
RULES = apply_overrides(RuleSet(), ["board=S*M", "health=1", "bonus_cards=ray"])


@cache
def solved():
    game = ChargeSparkGame(RULES)
    root = game.encode(initial_position(RULES))
    return game, root, solve_from(game, [root], show_progress=False)


@pytest.fixture
def stored(tmp_path, monkeypatch):
    monkeypatch.setattr("solver.core.table_file.BLOCK_BYTES", 1 << 14)  # many blocks in a small table
    monkeypatch.setattr("solver.core.table_reader.BLOCK_BYTES", 1 << 14)
    game, root, result = solved()
    key = fingerprint(RULES)
    path = table_path(tmp_path, key)
    save_table(path, result, key, fmt=TABLE_FORMAT)
    return path, key, game, root, result


def test_a_part_answers_exactly_as_the_whole_table(stored):
    path, key, game, root, result = stored
    reference = ReferenceChargeSparkGame(RULES)
    rng = np.random.default_rng(2)
    for code in [root, *result.states[rng.choice(result.num_states, size=25, replace=False)]]:
        part = stored_part(path, key, int(code), reference)
        assert part is not None and part.num_states < 40
        assert part.answer(int(code), reference) == result.answer(int(code), game)
        assert part.terminal_outcomes == result.terminal_outcomes
        assert part.table_states == result.num_states
        assert part.table_max_exploitability == pytest.approx(result.max_exploitability, rel=0, abs=0)


def test_reading_one_state_verifies_only_the_blocks_it_touches(stored):
    path, key, _, root, result = stored
    reader = TableReader(path, key, TABLE_FORMAT)
    reader.part(np.array([root]))
    total = sum(len(b) for b in reader.header["blocks"].values())
    checked = sum(len(b) for b in reader._verified.values())
    assert total > 200 and checked < total / 4


def test_successors_read_for_their_values_alone_touch_fewer_blocks(stored):
    """A query reads every figure of its state, and only the values of the
    states its stage game leads to: exact values, the rest marked unread (nan)."""
    path, key, game, root, result = stored
    nxt = np.asarray(game.expand(np.array([root], np.int64)).out_next)
    codes = np.concatenate([[root], np.unique(nxt[nxt >= 0])])
    whole, lean = TableReader(path, key, TABLE_FORMAT), TableReader(path, key, TABLE_FORMAT)
    everything, values_only = whole.part(codes), lean.part(codes, detailed=np.array([root]))
    assert sum(map(len, lean._verified.values())) < sum(map(len, whole._verified.values()))
    assert np.array_equal(values_only.values, everything.values)
    at = values_only.index_of(root)
    assert values_only.p1_guarantee[at] == everything.p1_guarantee[at]
    others = np.arange(values_only.num_states) != at
    assert np.all(np.isnan(values_only.p1_guarantee[others])) and np.all(np.diff(values_only.row_ptr)[others] == 0)
    assert values_only.answer(root, game) == everything.answer(root, game)


def test_a_state_the_table_does_not_hold_is_none(stored):
    path, key, *_ = stored
    assert stored_part(path, key, 12345, ReferenceChargeSparkGame(RULES)) is None


def test_damage_in_a_block_a_query_reads_is_detected_and_moved_aside(stored):
    path, key, game, root, result = stored
    reader = TableReader(path, key, TABLE_FORMAT)
    index = reader.index_of(root)
    # Flip a byte of the start state's value, found through the mapped array's offset.
    values = reader._arrays["values"]
    at = values.offset + index * 8
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(DamagedTableError, match="checksum mismatch in values"):
        TableReader(path, key, TABLE_FORMAT).part(np.array([root]))
    warnings = []
    assert stored_part(path, key, root, ReferenceChargeSparkGame(RULES), warnings.append) is None
    assert not path.exists() and "moved aside" in warnings[0]


def test_truncated_or_foreign_files_are_refused_on_opening(stored):
    path, key, *_ = stored
    data = path.read_bytes()
    for keep in (0, 100, len(data) // 2, len(data) - 30):
        path.write_bytes(data[:keep])
        with pytest.raises(DamagedTableError):
            TableReader(path, key, TABLE_FORMAT).part(np.array([int(solved()[2].states[-1])]))
    path.write_bytes(data)
    with pytest.raises(DamagedTableError, match="expected"):
        TableReader(path, "0123456789ab", TABLE_FORMAT)


PER_BLOCK = (1 << 14) // 8  # codes in a block of `states`, with the fixture's blocks


def _rewrite_header(path, change):
    """Rewrite the table's header with `change` applied to it (the arrays kept as they are)."""
    with np.load(path) as npz:
        arrays = {name: npz[name] for name in npz.files}
    header = json.loads(arrays.pop("header").tobytes())
    change(header)
    np.savez(path, header=np.frombuffer(json.dumps(header).encode(), np.uint8), **arrays)


def _without_index(path):
    """`path` as written before the index: its header has no first codes."""
    _rewrite_header(path, lambda header: header.pop(FIRST_CODES))
    return path


def _probes(states: np.ndarray) -> np.ndarray:
    """Codes worth looking up: held ones at and around every block edge, a sample
    of the rest, and codes the table does not hold (between, below, above)."""
    edges = np.arange(0, states.size, PER_BLOCK)
    around = np.concatenate([edges - 1, edges, edges + 1, np.arange(0, states.size, 97), [states.size - 1]])
    at = np.unique(np.clip(around, 0, states.size - 1))
    held = states[at]
    return np.concatenate([held, held - 1, held + 1, [states[-1] + 10**6]])  # +-1: held or in a gap


def _looked_up(reader: TableReader, code: int) -> int | None:
    try:
        return reader.index_of(code)
    except KeyError:
        return None


def _old_copy(path, directory):
    """A copy of the table at `path` in `directory`, as written before the index."""
    directory.mkdir()
    copy = directory / path.name
    copy.write_bytes(path.read_bytes())
    _without_index(copy)
    return copy


def test_the_header_holds_the_first_code_of_each_block_of_states(stored):
    path, key, _, _, result = stored
    assert TableReader(path, key, TABLE_FORMAT).header[FIRST_CODES] == np.asarray(result.states)[::PER_BLOCK].tolist()


def test_the_index_finds_every_state_as_the_binary_search_does(stored, tmp_path):
    path, key, _, _, result = stored
    indexed, searched = TableReader(path, key, TABLE_FORMAT), TableReader(_old_copy(path, tmp_path / "old"), key, TABLE_FORMAT)
    assert indexed.indexed and not searched.indexed
    states = np.asarray(result.states)
    assert states.size > 10 * PER_BLOCK
    for code in _probes(states):
        at = int(np.searchsorted(states, code))
        expected = at if at < states.size and states[at] == code else None
        assert _looked_up(indexed, int(code)) == _looked_up(searched, int(code)) == expected
    sample = np.random.default_rng(5).choice(states.size, size=300, replace=False)  # unsorted, as a query's successors
    np.testing.assert_array_equal(indexed.indices_of(states[sample]), sample)
    np.testing.assert_array_equal(searched.indices_of(states[sample]), sample)
    np.testing.assert_array_equal(TableReader(path, key, TABLE_FORMAT).indices_of(states), np.arange(states.size))
    with pytest.raises(KeyError):
        indexed.indices_of(np.array([states[0], states[-1] + 1]))


def test_a_table_written_without_the_index_is_still_read(stored, tmp_path):
    path, key, game, root, result = stored
    old = _old_copy(path, tmp_path / "old")
    reference = ReferenceChargeSparkGame(RULES)
    part = stored_part(old, key, root, reference)
    assert not TableReader(old, key, TABLE_FORMAT).indexed
    assert part is not None and part.answer(root, reference) == result.answer(root, game)
    assert stored_part(old, key, 12345, reference) is None and old.exists()


def test_one_lookup_verifies_at_most_two_blocks_of_the_states(stored, tmp_path):
    path, key, _, root, result = stored
    states = np.asarray(result.states)
    for code in [root, *_probes(states)]:
        reader = TableReader(path, key, TABLE_FORMAT)
        _looked_up(reader, int(code))
        assert 1 <= len(reader._verified["states"]) <= 2
    reader = TableReader(path, key, TABLE_FORMAT)
    reader.index_of(int(states[PER_BLOCK + 5]))  # inside a block: that block alone
    assert reader._verified == {"states": {1}}
    searched = TableReader(_old_copy(path, tmp_path / "old"), key, TABLE_FORMAT)
    searched.index_of(int(states[PER_BLOCK + 5]))
    assert len(searched._verified["states"]) > 2  # what the index saves


@pytest.mark.parametrize("damage, message", [
    (lambda first: first.reverse(), "is not sorted"),
    (lambda first: first.pop(), "has 15 entries, expected 16"),
    (lambda first: first.append(first[-1] + 1), "has 17 entries, expected 16"),
    (lambda first: first.__setitem__(3, str(first[3])), "is not a list of whole numbers"),
    (lambda first: first.__setitem__(3, float(first[3])), "is not a list of whole numbers"),
    (lambda first: first.__setitem__(-1, 2**64), "holds a code out of the range of int64"),
])
def test_a_malformed_index_is_refused_on_opening(stored, damage, message):
    path, key, _, _, result = stored
    assert -(-result.num_states // PER_BLOCK) == 16
    _rewrite_header(path, lambda header: damage(header[FIRST_CODES]))
    with pytest.raises(DamagedTableError, match=f"index of the states {message}"):
        TableReader(path, key, TABLE_FORMAT)


def test_an_index_that_does_not_match_the_states_never_finds_a_wrong_state(stored):
    path, key, _, _, result = stored
    states = np.asarray(result.states)
    block = 5
    first, last_before = int(states[block * PER_BLOCK]), int(states[block * PER_BLOCK - 1])
    for moved in (first + 1, last_before + 1 if last_before + 1 < first else first - 1):  # still sorted, now wrong
        _rewrite_header(path, lambda header, moved=moved: header[FIRST_CODES].__setitem__(block, moved))
        reader = TableReader(path, key, TABLE_FORMAT)  # opens: the damage shows only against the block
        for code in (first, int(states[block * PER_BLOCK + 3])):
            with pytest.raises(DamagedTableError, match="index of the states does not match block 5"):
                TableReader(path, key, TABLE_FORMAT).index_of(code)
        with pytest.raises(DamagedTableError, match="does not match block 5"):
            reader.indices_of(states[::1000])
    warnings = []
    assert stored_part(path, key, first, ReferenceChargeSparkGame(RULES), warnings.append) is None
    assert not path.exists() and "does not match block 5" in warnings[0]


@pytest.mark.parametrize("read", ["rows", "take"])
def test_figures_copied_out_of_a_table_leave_none_of_its_pages_resident(stored, read):
    """A warm start or a boundary reads a stored table layer by layer: what it
    copied out must not stay resident in the solving process (the printed
    rules' report's variants held 0.9 GB of the rules' table that way)."""
    from resident import resident_bytes

    path, key, game, root, result = stored
    reader = TableReader(path, key, TABLE_FORMAT)
    mapped = reader._arrays["values"]
    np.array(mapped)  # a plain read through the mapping keeps its pages
    assert resident_bytes(mapped) > 0
    n = reader.num_states
    got = reader.rows("values", np.arange(0, n, 3)) if read == "rows" else reader.take("values", 0, n)
    assert np.array_equal(got, result.values[::3] if read == "rows" else result.values)
    assert resident_bytes(mapped) == 0


def test_a_mapped_table_is_verified_without_staying_resident(stored):
    """Opening a stored table mapped reads every block for its checksum: the
    pages must go as they are read (the printed rules' 12 GB table stayed
    resident in the process that opened it)."""
    from resident import resident_bytes

    path, key, game, root, result = stored
    reader = TableReader(path, key, TABLE_FORMAT)
    mapped = reader.mapped()
    assert np.array_equal(mapped.values, result.values) and np.array_equal(mapped.states, result.states)
    reader = TableReader(path, key, TABLE_FORMAT)
    reader.mapped()
    for name in ("values", "row_strategy", "row_ptr", "terminal_probability"):
        assert resident_bytes(reader._arrays[name]) == 0, name


@pytest.mark.parametrize("name, where", [("values", 0.5), ("row_strategy", 1.0), ("states", 0.0)])
def test_damage_anywhere_is_found_when_the_blocks_are_checked_side_by_side(stored, name, where):
    # Opening a table mapped checks every block, several at once (`table_file.hashing`):
    # a flipped byte in the first, a middle or the last block of an array is still found.
    path, key, game, root, result = stored
    a = TableReader(path, key, TABLE_FORMAT)._arrays[name]
    at = a.offset + min(int(where * a.nbytes), a.nbytes - 1)
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(DamagedTableError, match=f"checksum mismatch in {name}"):
        TableReader(path, key, TABLE_FORMAT).mapped()


def test_the_digests_written_are_those_of_each_block_in_order(stored):
    # Hashed side by side while the file is written, listed as the blocks come.
    from solver.core import table_file

    path, key, game, root, result = stored
    header = TableReader(path, key, TABLE_FORMAT).header
    raw = np.ascontiguousarray(result.row_strategy).view(np.uint8)
    size = table_file.BLOCK_BYTES
    expected = [table_file.block_digest(raw[i : i + size]) for i in range(0, raw.size, size)]
    assert len(expected) > 8 and header["blocks"]["row_strategy"] == expected
    assert table_file.block_digests(result.row_strategy) == expected
