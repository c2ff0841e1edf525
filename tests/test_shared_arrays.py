"""The per-state figures a layered solve shares with its workers: backed by a
file on disk, visible across a fork, and let go of after each step."""

from __future__ import annotations

import multiprocessing
import os

import numpy as np
import pytest

from resident import resident_bytes
from solver.core.shared_arrays import FILE_PREFIX, SharedArrays, release_pages


def test_an_array_is_backed_by_an_unlinked_file_and_starts_at_zero(tmp_path):
    store = SharedArrays(tmp_path)
    a = store.array((1000, 3), np.float64)
    assert a.shape == (1000, 3) and not a.any()
    assert store.file_backed == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(FILE_PREFIX)]  # nothing left behind, even if killed


def _write_in_child(a: np.ndarray) -> None:
    a[::7] = np.arange(a[::7].size)


def test_what_a_forked_worker_writes_is_what_its_parent_reads(tmp_path):
    store = SharedArrays(tmp_path)
    a = store.array((100_000,), np.float64)
    child = multiprocessing.get_context("fork").Process(target=_write_in_child, args=(a,))
    child.start()
    child.join()
    assert child.exitcode == 0
    expected = np.zeros(100_000)
    expected[::7] = np.arange(expected[::7].size)
    assert np.array_equal(a, expected)


def test_release_lets_go_of_resident_pages_and_keeps_every_figure(tmp_path):
    store = SharedArrays(tmp_path)
    a = store.array((4_000_000,), np.float64)  # 32 MB
    a[:] = np.arange(a.size, dtype=np.float64)
    assert resident_bytes(a) >= 30_000_000
    store.release()
    assert resident_bytes(a) < 1_000_000
    assert np.array_equal(a, np.arange(a.size, dtype=np.float64))  # read back from the file


def test_without_a_usable_directory_arrays_fall_back_to_memory(tmp_path):
    store = SharedArrays(tmp_path / "no such folder")
    a = store.array((10,), np.int16)
    a[:] = 3
    assert store.file_backed == 0 and a.sum() == 30
    store.release()  # nothing to let go of, and no harm done
    assert a.sum() == 30


def test_a_dropped_array_frees_its_file(tmp_path):
    store = SharedArrays(tmp_path)
    a = store.array((10,), np.float64)
    assert store.file_backed == 1
    del a
    assert store.file_backed == 0
    store.release()


def test_release_pages_leaves_plain_arrays_alone():
    a = np.arange(10)
    release_pages(a)
    assert a.sum() == 45


def test_a_full_disk_keeps_the_figures_in_memory(tmp_path, monkeypatch):
    """The file's blocks are reserved up front: a disk without room means memory, never a
    write through the mapping that kills the process when the disk fills."""
    import errno

    import solver.core.shared_arrays as shared_arrays

    def no_room(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(shared_arrays.os, "posix_fallocate", no_room)
    store = SharedArrays(tmp_path)
    a = store.array((1000,), np.float64)
    a[:] = 1.0
    assert store.file_backed == 0 and a.sum() == 1000.0
    assert not list(tmp_path.iterdir())


def test_the_plan_counts_the_figures_out_of_memory_only_where_they_go_to_disk(tmp_path, monkeypatch):
    from solver.core import resources

    full, resident = resources.LAYERED_BYTES_PER_STATE, resources.LAYERED_RESIDENT_BYTES_PER_STATE
    figures = full - resident
    monkeypatch.setattr(resources, "available_memory", lambda: 10**9)
    assert resources.figures_on_disk(figures, resident, str(tmp_path))  # a test's folder is on disk here
    monkeypatch.setattr(resources, "_filesystem_type", lambda directory: "tmpfs")
    assert not resources.figures_on_disk(figures, resident, str(tmp_path))  # in memory all the same
    assert resources.layered_bytes_per_state() == full
    assert resources.layered_bytes_per_state(hurried=False) == resources.LAYERED_VALUE_BYTES_PER_STATE
    monkeypatch.setattr(resources, "_filesystem_type", lambda directory: "ext4")
    assert resources.layered_bytes_per_state() == resources.layered_bytes_per_state(hurried=False) == resident

    class Usage:
        free = resources.states_that_fit(resident) * figures - 1  # a byte short of the figures of all that fits

    monkeypatch.setattr(resources.shutil, "disk_usage", lambda directory: Usage)
    assert resources.layered_bytes_per_state() == full


def test_the_filesystem_of_a_folder_is_read_from_the_mount_table(tmp_path):
    from solver.core.resources import _filesystem_type

    assert _filesystem_type("/") is not None
    assert _filesystem_type(str(tmp_path)) is not None
    if os.path.ismount("/dev/shm"):
        assert _filesystem_type("/dev/shm") == "tmpfs"


def test_release_pages_of_a_block_lets_go_of_that_block_only(tmp_path):
    """A table's checksum pass reads block after block: each block's pages go
    once read, the rest of the mapping stays as it was."""
    from resident import resident_bytes

    path = tmp_path / "a.bin"
    np.arange(4_000_000, dtype=np.float64).tofile(path)  # 32 MB
    a = np.memmap(path, dtype=np.float64, mode="r", offset=8 * 1000)  # an offset inside the first page
    np.array(a)  # every page resident
    whole = resident_bytes(a)
    assert whole >= 30_000_000
    block = a.reshape(-1).view(np.uint8)[1 << 20 : 17 << 20]  # 16 MB in the middle
    release_pages(block)
    assert whole - resident_bytes(a) >= (16 << 20) - 2 * 4096
    assert resident_bytes(a) >= 14_000_000
    assert np.array_equal(block.view(np.float64), np.arange(4_000_000, dtype=np.float64)[1000:][1 << 17 : 17 << 17])


def test_trimming_the_heap_gives_its_free_holes_back():
    """Chunk-sized arrays kept among freed ones leave holes in the heap that
    stay resident until trimmed (glibc raises its mmap threshold once a large
    array is freed, so later ones come from the heap)."""
    from solver.core.heap import trim_heap

    if not trim_heap():
        pytest.skip("not glibc")
    np.ones(64 << 17)  # 64 MB freed: glibc serves arrays below that from the heap from now on
    arrays = [np.ones(1 << 17) for _ in range(200)]  # 1 MB each
    kept = arrays[::2]
    del arrays
    before = _anonymous_resident()
    assert trim_heap()
    assert before - _anonymous_resident() >= 50 << 20 and sum(a.sum() for a in kept) == 100 << 17


def _anonymous_resident() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("RssAnon:"))
