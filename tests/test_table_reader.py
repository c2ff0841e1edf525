"""Reading a few states of a stored table without loading it: the same answers,
every block read is verified, damage is detected as by a full load."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

from rules.charge_spark.config import RuleSet, apply_overrides, fingerprint
from rules.charge_spark.game import ChargeSparkGame, ReferenceChargeSparkGame
from rules.charge_spark.state import initial_position
from solver import cache
from solver.cache import DamagedTableError, save_table, table_path
from solver.solve import solve_from
from solver.table_reader import TableReader
from solver.tables import stored_part

# Big enough that its arrays span several checksum blocks.
RULES = apply_overrides(RuleSet(), ["board=S*M", "health=1", "bonus_cards=ray"])


@lru_cache(maxsize=None)
def solved():
    game = ChargeSparkGame(RULES)
    root = game.encode(initial_position(RULES))
    return game, root, solve_from(game, [root], show_progress=False)


@pytest.fixture
def stored(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "BLOCK_BYTES", 1 << 14)  # many blocks in a small table
    monkeypatch.setattr("solver.table_reader.BLOCK_BYTES", 1 << 14)
    game, root, result = solved()
    key = fingerprint(RULES)
    path = table_path(tmp_path, key)
    save_table(path, result, key)
    return path, key, game, root, result


def test_a_part_answers_exactly_as_the_whole_table(stored):
    path, key, game, root, result = stored
    reference = ReferenceChargeSparkGame(RULES)
    rng = np.random.default_rng(2)
    for code in [root, *result.states[rng.choice(result.num_states, size=25, replace=False)]]:
        part = stored_part(path, key, int(code), reference)
        assert part is not None and part.num_states < 40
        assert part.answer(int(code), reference) == result.answer(int(code), game)
        assert part.table_states == result.num_states
        assert part.table_max_exploitability == pytest.approx(result.max_exploitability, rel=0, abs=0)


def test_reading_one_state_verifies_only_the_blocks_it_touches(stored):
    path, key, _, root, result = stored
    reader = TableReader(path, key)
    reader.part(np.array([root]))
    total = sum(len(b) for b in reader.header["blocks"].values())
    checked = sum(len(b) for b in reader._verified.values())
    assert total > 200 and checked < total / 4


def test_a_state_the_table_does_not_hold_is_none(stored):
    path, key, *_ = stored
    assert stored_part(path, key, 12345, ReferenceChargeSparkGame(RULES)) is None


def test_damage_in_a_block_a_query_reads_is_detected_and_moved_aside(stored):
    path, key, game, root, result = stored
    reader = TableReader(path, key)
    index = reader.index_of(root)
    # Flip a byte of the start state's value, found through the mapped array's offset.
    values = reader._arrays["values"]
    at = values.offset + index * 8
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(DamagedTableError, match="checksum mismatch in values"):
        TableReader(path, key).part(np.array([root]))
    warnings = []
    assert stored_part(path, key, root, ReferenceChargeSparkGame(RULES), warnings.append) is None
    assert not path.exists() and "moved aside" in warnings[0]


def test_truncated_or_foreign_files_are_refused_on_opening(stored):
    path, key, *_ = stored
    data = path.read_bytes()
    for keep in (0, 100, len(data) // 2, len(data) - 30):
        path.write_bytes(data[:keep])
        with pytest.raises(DamagedTableError):
            TableReader(path, key).part(np.array([int(solved()[2].states[-1])]))
    path.write_bytes(data)
    with pytest.raises(DamagedTableError, match="expected"):
        TableReader(path, "0123456789ab")
