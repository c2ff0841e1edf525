"""The lock that lets one process at a time compute a table, with the others
waiting for it.

It is an `flock` on a file beside the table, so the kernel lets it go when the
process holding it dies, however it dies. Children forked while it is held
share the lock (an `flock` belongs to the open file, which a fork shares);
they close their copy as soon as they start (`os.register_at_fork` below), so
workers that outlive a killed solve never keep it. The holder writes its pid
and host into the file: a process that has to wait says once who it waits
for, and a lock still held in the name of a process of this host that is gone
(locked by an older version's orphaned workers, say) is taken over: the file is
replaced, and anyone still waiting on the old one finds it replaced when it
gets it, and tries again.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from . import lifetime  # noqa: F401  (imported for its effect: forked children die with their parent)
from .files import CacheDirectoryError

POLL_SECONDS = 0.5
STALE_POLLS = 4
"""Polls in a row that must find the recorded holder gone before the lock is
taken over: a new holder writes its name within moments of getting it."""

_held: set[int] = set()  # descriptors of the locks this process holds


def _let_go_in_child() -> None:
    """In a forked child: close the inherited descriptors of the parent's locks (the parent keeps them)."""
    for descriptor in _held:
        with contextlib.suppress(OSError):
            os.close(descriptor)
    _held.clear()


os.register_at_fork(after_in_child=_let_go_in_child)


def lock_path_of(path: Path) -> Path:
    """The lock file of the table at `path`."""
    return path.with_name(f".{path.name}.lock")


def _say_on_stderr(message: str) -> None:
    print(f"charge-spark: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def exclusive_lock(path: Path, say: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the lock of the table at `path` for the block; a second process
    waits, and `say`s once who holds it (default: a line on stderr)."""
    say = say or _say_on_stderr
    lock = lock_path_of(Path(path))
    _made_directory(lock.parent)
    descriptor = _acquired(lock, say)
    _held.add(descriptor)
    try:
        yield
    finally:
        _held.discard(descriptor)
        os.close(descriptor)  # closing lets the flock go


def _made_directory(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CacheDirectoryError(f"cannot use the cache directory {folder}: {error.strerror or error}"
                                  " (choose another with --cache-dir)") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise CacheDirectoryError(f"cannot use the cache directory {folder}: permission denied"
                                  " (choose another with --cache-dir)")


def _opened(lock: Path) -> int:
    try:
        return os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    except OSError as error:
        raise CacheDirectoryError(f"cannot use the lock file {lock}: {error.strerror or error}"
                                  " (remove it, or choose another cache with --cache-dir)") from None


def _acquired(lock: Path, say: Callable[[str], None]) -> int:
    """A descriptor of `lock`, locked, with this process's name written in it."""
    said = False
    stale = 0
    while True:
        descriptor = _opened(lock)
        try:
            if not _try_lock(descriptor):
                holder = _holder(lock)
                if not said:
                    say(f"waiting for {_described(holder)}, which holds the lock on these rules' table ({lock});"
                        " its table will be reused")
                    said = True
                stale = stale + 1 if holder is not None and _gone(holder) else 0
                if stale >= STALE_POLLS:
                    say(f"{_described(holder)} is gone but its lock is still held: taking it over")
                    lock.unlink(missing_ok=True)
                    stale = 0
                os.close(descriptor)
                time.sleep(POLL_SECONDS)
                continue
            if not _still_named(descriptor, lock):  # taken over while this waited: lock the new file
                os.close(descriptor)
                continue
            _record_holder(descriptor)
            return descriptor
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(descriptor)
            raise


def _try_lock(descriptor: int) -> bool:
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False
        raise
    return True


def _still_named(descriptor: int, lock: Path) -> bool:
    """Whether `lock` is still the file open at `descriptor` (not replaced by a takeover)."""
    try:
        named = os.stat(lock, follow_symlinks=False)
    except FileNotFoundError:
        return False
    opened = os.fstat(descriptor)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def _here() -> str:
    """This host, and its process-id namespace: a pid means something only where both match (containers on
    one machine may share a cache and a host name, not their pids)."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        namespace = 0
    return f"{socket.gethostname()}/{namespace}"


def _record_holder(descriptor: int) -> None:
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, f"{os.getpid()} {_here()}\n".encode(), 0)


def _holder(lock: Path) -> tuple[int, str] | None:
    """The pid and the place (`_here`) written in `lock`, if it holds them."""
    try:
        with open(lock, "rb") as handle:
            pid, place = handle.read(300).decode("utf-8", "replace").split()
        return int(pid), place
    except (OSError, ValueError):
        return None


def _described(holder: tuple[int, str] | None) -> str:
    if holder is None:
        return "another process"
    pid, place = holder
    return f"process {pid}" + ("" if place == _here() else f" on {place.split('/')[0]}")


def _gone(holder: tuple[int, str]) -> bool:
    """Whether `holder` is a process of this host (and pid namespace) that no longer runs."""
    pid, place = holder
    if place != _here() or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # it runs, as another user
        return False
    return _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False
