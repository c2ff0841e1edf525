"""Giving the heap's freed memory back to the system.

glibc serves an allocation below its mmap threshold from the heap, and the
threshold rises to 32 MB once a large array has been freed: after that, the
chunk-sized arrays of a long pass (kept a while, freed among temporaries)
leave the heap full of free holes that stay resident. Following play at the
printed rules held 2.6 GB of them besides its 2.5 GB of live arrays.
`trim_heap` hands whole free pages back after such a pass."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.cache
def _malloc_trim():
    """glibc's `malloc_trim`, or None (another C library, another system)."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


def trim_heap() -> bool:
    """Return the heap's free pages to the system (glibc); False where the C library cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(ctypes.c_size_t(0))
    return True
