"""Solved tables on disk: round trip, and every kind of damage is detected,
reported and never loaded; an interrupted write leaves the old table intact."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import zipfile
from dataclasses import replace
from functools import cache

import numpy as np
import pytest

from rules.charge_spark.config import RuleSet, apply_overrides, fingerprint
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.core import table_file
from solver.core.outcome import terminal_outcomes
from solver.core.result import ARRAY_FIELDS
from solver.core.solve import solve_from
from solver.core.table_file import DamagedTableError, load_table, quarantine, save_table, table_path
from solver.storage import TABLE_FORMAT

SMALL = ["board=SM", "health=1", "bonus_cards="]


@cache
def small_solve():
    rules = apply_overrides(RuleSet(), SMALL)
    game = ChargeSparkGame(rules)
    root = game.encode(initial_position(rules))
    return fingerprint(rules), game, root, solve_from(game, [root], show_progress=False)


@pytest.fixture
def saved(tmp_path):
    key, game, root, result = small_solve()
    path = table_path(tmp_path, key)
    save_table(path, result, key, {"fingerprint": key}, fmt=TABLE_FORMAT)
    return path, key, game, root, result


def test_round_trip_keeps_every_array_and_the_answer(saved):
    path, key, game, root, result = saved
    loaded = load_table(path, key, fmt=TABLE_FORMAT)
    for name in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(loaded, name), getattr(result, name))
    assert loaded.graph is None
    assert loaded.answer(root, game) == result.answer(root, game)
    assert loaded.method == result.method and loaded.bellman_residual == result.bellman_residual
    assert loaded.terminal_outcomes == result.terminal_outcomes == terminal_outcomes(game)
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


def test_a_missing_table_is_not_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_table(tmp_path / "none.npz", "abc", fmt=TABLE_FORMAT)


def test_truncated_table_is_detected(saved):
    path, key, *_ = saved
    data = path.read_bytes()
    for keep in (0, 10, len(data) // 2, len(data) - 1):
        path.write_bytes(data[:keep])
        with pytest.raises(DamagedTableError, match=path.name):
            load_table(path, key, fmt=TABLE_FORMAT)


def test_every_flipped_byte_in_a_sample_is_detected(saved):
    path, key, *_ = saved
    data = path.read_bytes()
    rng = np.random.default_rng(0)
    for at in rng.choice(len(data), size=40, replace=False):
        damaged = bytearray(data)
        damaged[at] ^= 1 << int(rng.integers(8))
        path.write_bytes(bytes(damaged))
        with pytest.raises(DamagedTableError):
            load_table(path, key, fmt=TABLE_FORMAT)


def _rewrite_header(path, change):
    with np.load(path, allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    header = json.loads(arrays.pop("header").tobytes())
    change(header)
    np.savez(path, header=np.frombuffer(json.dumps(header).encode(), np.uint8), **arrays)


def test_table_of_other_rules_is_refused(saved):
    path, key, *_ = saved
    with pytest.raises(DamagedTableError, match="expected"):
        load_table(path, "0123456789ab", fmt=TABLE_FORMAT)


def test_other_format_version_is_refused(saved):
    path, key, *_ = saved
    _rewrite_header(path, lambda h: h.update(format_version=TABLE_FORMAT.version + 1))
    with pytest.raises(DamagedTableError, match="format"):
        load_table(path, key, fmt=TABLE_FORMAT)


def _rewrite_values(path, values):
    """Replace the values array, keeping the header (and its now stale checksum)."""
    with np.load(path, allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    arrays["values"] = values(arrays["values"])
    np.savez(path, **arrays)


def test_table_of_another_solver_version_is_refused(saved):
    path, key, *_ = saved
    _rewrite_header(path, lambda h: h.update(written_by="0.0.0-other"))
    with pytest.raises(DamagedTableError, match="written by solver 0.0.0-other"):
        load_table(path, key, fmt=TABLE_FORMAT)


def test_changed_array_with_a_stale_checksum_is_refused(saved):
    path, key, *_ = saved
    _rewrite_values(path, lambda v: v * 0.5)
    with pytest.raises(DamagedTableError, match="checksum"):
        load_table(path, key, fmt=TABLE_FORMAT)


def test_pickled_object_arrays_are_never_loaded(saved):
    path, key, *_ = saved
    _rewrite_values(path, lambda v: np.array([object()], dtype=object))
    with pytest.raises(DamagedTableError):
        load_table(path, key, fmt=TABLE_FORMAT)


def test_not_a_table_at_all(tmp_path):
    path = tmp_path / "x.npz"
    path.write_text("hello")
    with pytest.raises(DamagedTableError, match="unreadable"):
        load_table(path, "x", fmt=TABLE_FORMAT)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("other.npy", b"")
    with pytest.raises(DamagedTableError):
        load_table(path, "x", fmt=TABLE_FORMAT)


def test_quarantine_moves_the_file_aside(saved):
    path, *_ = saved
    moved = quarantine(path)
    assert not path.exists() and moved.exists() and moved.name.startswith(path.name + ".damaged")


def test_failed_write_leaves_the_old_table_and_no_temporary(saved, monkeypatch):
    path, key, *_ = saved
    before = path.read_bytes()

    chunks = table_file.byte_chunks

    def interrupted_after_some_arrays(a):
        if a.size > 100:  # the first large array: several have already been written
            raise KeyboardInterrupt
        yield from chunks(a)

    monkeypatch.setattr(table_file, "byte_chunks", interrupted_after_some_arrays)
    with pytest.raises(KeyboardInterrupt):
        save_table(path, small_solve()[3], key, fmt=TABLE_FORMAT)
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_kill_9_during_a_write_leaves_a_loadable_table(saved):
    path, key, *_ = saved
    # A child rewrites the table over and over with a big payload; kill it mid-write.
    script = textwrap.dedent(f"""
        import numpy as np, sys
        from dataclasses import replace
        sys.path[:0] = {sys.path!r}
        from solver.core.table_file import load_table, save_table
        from solver.storage import TABLE_FORMAT
        table = load_table({str(path)!r}, {key!r}, fmt=TABLE_FORMAT)
        big = replace(table, method="x" * 80_000_000)  # a slow write of a valid table
        print("ready", flush=True)
        while True:
            save_table({str(path)!r}, big, {key!r}, fmt=TABLE_FORMAT)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    load_table(path, key, fmt=TABLE_FORMAT)  # the old table or a complete new one, never half of one


def test_arrays_of_inconsistent_sizes_are_refused(saved):
    path, key, *_ = saved
    table = load_table(path, key, fmt=TABLE_FORMAT)
    from dataclasses import replace

    save_table(path, replace(table, values=table.values[:-1]), key, fmt=TABLE_FORMAT)
    with pytest.raises(DamagedTableError, match="values"):
        load_table(path, key, fmt=TABLE_FORMAT)


def test_a_memory_mapped_result_is_written_as_it_is_in_memory(saved, tmp_path):
    # Large solves hand over memory-mapped arrays; the stored file must not depend on it.
    _, key, _, _, result = saved
    in_memory, mapped = {}, {}
    for name in ARRAY_FIELDS:
        in_memory[name] = np.array(getattr(result, name))
        np.save(tmp_path / f"{name}.npy", in_memory[name])
        mapped[name] = np.load(tmp_path / f"{name}.npy", mmap_mode="r")
    assert isinstance(mapped["row_strategy"], np.memmap)
    one, other = tmp_path / "in-memory.npz", tmp_path / "mapped.npz"
    save_table(one, replace(result, **in_memory), key, fmt=TABLE_FORMAT)
    save_table(other, replace(result, **mapped), key, fmt=TABLE_FORMAT)
    assert one.read_bytes() == other.read_bytes()
    loaded = load_table(other, key, fmt=TABLE_FORMAT)
    for name in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(loaded, name), in_memory[name])


# --- the cache lock: held by a live solve only, and a wait that says so ----------------------------

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def python(script: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def lock_is_free(path) -> bool:
    import fcntl

    lock = path.with_name(f".{path.name}.lock")
    if not lock.exists():
        return True
    with open(lock, "rb") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
    return True


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except FileNotFoundError:
        return True


def wait_until(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def test_a_child_forked_under_the_lock_neither_holds_it_nor_outlives_its_parent(tmp_path):
    path = tmp_path / "x.npz"
    holder = python(f"""
        import os, time
        from solver.core.table_file import table_lock
        with table_lock({str(path)!r}):
            child = os.fork()
            if child == 0:
                time.sleep(120)
                os._exit(0)
            print(child, flush=True)
            time.sleep(120)
    """)
    child = int(holder.stdout.readline())
    assert not lock_is_free(path)
    holder.kill()  # kill -9: nothing of the parent runs
    holder.wait()
    assert wait_until(lambda: gone(child), 10), "the forked child outlived its parent"
    assert lock_is_free(path)


def test_a_waiting_solve_says_once_who_holds_the_lock(tmp_path):
    from solver.core.table_file import table_lock

    path = tmp_path / "x.npz"
    said: list[str] = []
    with table_lock(path):
        waiter = python(f"""
            from solver.core.table_file import table_lock
            with table_lock({str(path)!r}):
                print("got it", flush=True)
        """)
        time.sleep(3)
        assert waiter.poll() is None  # waits
    out, err = waiter.communicate(timeout=30)
    assert out == "got it\n"
    assert err.count("\n") == 1 and f"waiting for process {os.getpid()}, which holds the lock" in err, err
    with table_lock(path, said.append):
        pass
    assert said == []


def test_a_lock_held_in_the_name_of_a_dead_process_is_taken_over(tmp_path):
    import fcntl

    from solver.core.table_file import table_lock

    path = tmp_path / "x.npz"
    dead = subprocess.Popen(["true"])
    dead.wait()
    lock = path.with_name(f".{path.name}.lock")
    lock.write_text(f"{dead.pid} {os.uname().nodename}/{os.stat('/proc/self/ns/pid').st_ino}\n")
    with open(lock, "rb") as orphan:  # as an orphaned worker of an older version held it
        fcntl.flock(orphan, fcntl.LOCK_EX)
        said: list[str] = []
        started = time.monotonic()
        with table_lock(path, said.append):
            assert lock.read_text().split()[0] == str(os.getpid())
        assert time.monotonic() - started < 15
    assert len(said) == 2 and f"process {dead.pid}" in said[0] and "taking it over" in said[1], said


def test_kill_9_during_a_solve_takes_its_workers_with_it_and_frees_the_lock(private_table_cache):
    import psutil

    rules = apply_overrides(RuleSet(), ["board=S*M", "health=2"])
    path = table_path(private_table_cache, fingerprint(rules))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")]))}
    solve = subprocess.Popen([sys.executable, "-m", "solver.cli", "solve", "--set", "board=S*M", "--set", "health=2"],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        me = psutil.Process(solve.pid)
        # The layered solve's workers, forked once enumeration is done (the lock is held from the start).
        workers = wait_until(lambda: len(me.children()) >= 2, 120) and me.children()
        assert workers, "the solve started no workers"
        assert not lock_is_free(path)
    finally:
        solve.kill()
        solve.wait()
    assert wait_until(lambda: all(gone(worker.pid) for worker in workers), 10), "workers outlived the solve"
    assert lock_is_free(path)
