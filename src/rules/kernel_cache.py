"""numba's on-disk cache of compiled kernels: where it lives, and how processes share it.

Both packages' kernels are compiled once and kept on disk. Solves run side by
side in processes (a report's further solves, a test suite's workers, Dask
workers on one machine), each of which may compile a kernel for a new type
signature and save it at the same time. numba's save reads a function's index,
picks the first free data-file number and writes both back, unlocked
(numba/numba#10128): two processes saving two signatures of one function
together can both take number 1, and the index of one then names the other's
machine code. Loading it fails ("can't unbox array") or, where the types are
alike, runs code compiled for other arrays. Saves are therefore made one at a
time here, under a lock on the cache directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.abc
import importlib.machinery
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

STALE_CACHE_DAYS = 30
"""A compiled cache of another source version unused this long is removed."""

LOCK_NAME = ".saving.lock"
"""The file in a cache directory whose lock a process holds while it saves there."""

_CACHING = "numba.core.caching"


def pin_numba_cache() -> None:
    """Key numba's on-disk cache by the source of both packages, and make its
    saves one at a time.

    numba invalidates a cached function only when its own file changes, not
    when a kernel it calls from another module does; a cache directory per
    source digest makes a stale compiled twin impossible. Set through the
    environment, read when numba is first imported (also by worker processes),
    so that importing the packages does not import numba: a query answered from
    a stored table never compiles anything and should not pay for it.
    """
    serialise_cache_saves()
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    src = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(src.glob("*/**/*.py")):
        digest.update(path.relative_to(src).as_posix().encode())
        digest.update(path.read_bytes())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    cache_dir = str(base / "charge-spark" / "numba" / digest.hexdigest()[:16])
    _prune_stale_caches(Path(cache_dir))
    os.environ["NUMBA_CACHE_DIR"] = cache_dir
    if "numba" in sys.modules:  # imported first by someone else: its config is already read
        sys.modules["numba"].config.CACHE_DIR = cache_dir


def _prune_stale_caches(keep: Path) -> None:
    """Mark `keep` as used now and remove its siblings (other source versions'
    caches, tens of MB each) unused for `STALE_CACHE_DAYS`: each version leaves
    one behind, and nothing reads it once that source is gone."""
    cutoff = time.time() - STALE_CACHE_DAYS * 86400
    try:
        keep.mkdir(parents=True, exist_ok=True)
        os.utime(keep)
        for entry in keep.parent.iterdir():
            if entry != keep and re.fullmatch(r"[0-9a-f]{16}", entry.name) and entry.stat().st_mtime < cutoff:
                shutil.rmtree(entry, ignore_errors=True)
    except OSError:
        pass  # an unwritable cache is numba's to report when it compiles, not a reason to fail an import


def serialise_cache_saves() -> None:
    """Make numba's cache saves in this process wait for those of every other
    process in the same directory: now if numba's cache module is loaded,
    else as soon as it is (without importing numba here)."""
    if _CACHING in sys.modules:
        _lock_saves(sys.modules[_CACHING])
    elif not any(isinstance(finder, _LockSavesOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _LockSavesOnImport())


class _LockSavesOnImport(importlib.abc.MetaPathFinder):
    """Finds numba's cache module as the path finder does, and locks its saves once it has run."""

    def find_spec(self, fullname, path, target=None):
        if fullname != _CACHING:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run_module = spec.loader.exec_module

        def run_and_lock(module: ModuleType) -> None:
            run_module(module)
            _lock_saves(module)

        spec.loader.exec_module = run_and_lock  # type: ignore[method-assign]
        return spec


def _lock_saves(caching: ModuleType) -> None:
    """Wrap the index-and-data writes of `caching.IndexDataCacheFile` (a
    numba version without it is left as it is)."""
    index_file = getattr(caching, "IndexDataCacheFile", None)
    if index_file is None or getattr(index_file, "_saves_locked", False):
        return
    for name in ("save", "flush"):  # flush rewrites the index too (a stale one, emptied)
        unlocked = getattr(index_file, name, None)
        if unlocked is not None:
            setattr(index_file, name, _under_lock(unlocked))
    index_file._saves_locked = True


def _under_lock(write):
    def locked(self, *args, **kwargs):
        with cache_directory_locked(getattr(self, "_cache_path", None)):
            return write(self, *args, **kwargs)

    locked.__doc__ = write.__doc__
    return locked


@contextlib.contextmanager
def cache_directory_locked(directory: str | os.PathLike[str] | None) -> Iterator[None]:
    """Hold the lock of `directory` (a cache directory) for the block; where
    it cannot be had (no such directory yet, no file locks on this system),
    the block runs unlocked, as numba's own saves do."""
    try:
        import fcntl
    except ImportError:  # no POSIX file locks: numba's unlocked save
        yield
        return
    if directory is None:
        yield
        return
    try:
        os.makedirs(directory, exist_ok=True)
        handle = open(os.path.join(directory, LOCK_NAME), "a")  # noqa: SIM115 - held across the yield
    except OSError:
        yield  # an unwritable cache: numba reports it when it saves
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
