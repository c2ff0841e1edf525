"""Arrays that forked workers share, backed by a file on disk where there is
room, so that what a process has finished with costs no resident memory.

A large layered solve holds a handful of figures for every state (about 100
bytes a state: five gigabytes at the printed rules). Each worker reads only
the states its layer exits to and writes its own, yet anonymous shared
memory keeps every page resident, and counted in each process that touched
it, for the whole solve. Mapped from an (unlinked) file instead, the pages
are page cache: `SharedArrays.release` drops them from this process's
memory once a step is done with them, the kernel writes them back and may
reclaim them under pressure, and the next read brings back only the pages
it needs. The answer is the same either way: all processes see one file.

The file should be on disk (a tmpfs directory is memory all the same). With
no room on the disk for it, an array falls back to anonymous shared memory.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
import weakref

import numpy as np
import numpy.typing as npt

FILE_PREFIX = "charge-spark-figures-"


class SharedArrays:
    """Allocates zeroed arrays shared with forked children, each backed by
    its own unlinked file in `directory` (default: the system's temporary
    directory), and lets go of their resident pages on request."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = os.fspath(directory) if directory is not None else tempfile.gettempdir()
        # Weak references: dropping an array still frees its mapping (and the file's space).
        self._file_backed: list[weakref.ReferenceType[mmap.mmap]] = []

    def array(self, shape: tuple[int, ...], dtype: npt.DTypeLike) -> np.ndarray:
        """A zeroed array of `shape` and `dtype`, shared with processes forked after this call."""
        count = int(np.prod(shape))
        size = max(1, count * np.dtype(dtype).itemsize)
        buffer = self._file_mapping(size)
        if buffer is None:
            buffer = mmap.mmap(-1, size)  # MAP_SHARED | MAP_ANONYMOUS, zeroed
        else:
            self._file_backed.append(weakref.ref(buffer))
        return np.frombuffer(buffer, dtype, count=count).reshape(shape)

    def _file_mapping(self, size: int) -> mmap.mmap | None:
        """A shared mapping of a new file of `size` bytes, its blocks reserved
        now (a full disk met later, in a write through the mapping, would kill
        the process); None when the disk has no room or the directory is not usable."""
        try:
            fd, path = tempfile.mkstemp(prefix=FILE_PREFIX, dir=self.directory)
        except OSError:
            return None
        try:
            os.unlink(path)  # the space is freed when the last mapping goes, however the processes end
            os.posix_fallocate(fd, 0, size)
            return mmap.mmap(fd, size)
        except OSError:
            return None
        finally:
            os.close(fd)

    @property
    def file_backed(self) -> int:
        """How many live arrays are backed by a file."""
        return sum(ref() is not None for ref in self._file_backed)

    def release(self) -> None:
        """Drop this process's resident pages of every file-backed array: the
        data stays in the file (and the page cache), read back when next touched."""
        if not hasattr(mmap, "MADV_DONTNEED"):
            return
        for ref in self._file_backed:
            buffer = ref()
            if buffer is not None and not buffer.closed:
                buffer.madvise(mmap.MADV_DONTNEED)


def release_pages(a: np.ndarray) -> None:
    """Drop this process's resident pages under the memory-mapped array `a`
    (an `np.memmap` or a contiguous view of one, such as one block of it;
    anything else is left alone). A read-only or flushed mapping loses
    nothing: its pages are read back from the file when next touched, from
    the page cache if they are still there."""
    mapping = getattr(a, "_mmap", None)
    if mapping is None or a.nbytes == 0 or not hasattr(mmap, "MADV_DONTNEED"):
        return
    with contextlib.suppress(OSError, ValueError, BufferError):  # a closed mapping has nothing to drop
        base = np.frombuffer(mapping, np.uint8).__array_interface__["data"][0]
        start = a.__array_interface__["data"][0] - base
        if not a.flags.contiguous or start < 0 or start + a.nbytes > len(mapping):
            mapping.madvise(mmap.MADV_DONTNEED)  # not a plain range of the mapping: all of it
            return
        first = start - start % mmap.PAGESIZE  # the page under its first byte, shared or not: read back if needed
        mapping.madvise(mmap.MADV_DONTNEED, first, start + a.nbytes - first)
