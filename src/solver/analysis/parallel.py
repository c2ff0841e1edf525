"""How many solves may run side by side on this machine, by memory.

They run through `solver.jobs.run_jobs` (local processes or a Dask cluster);
this module only sizes a local run."""

from __future__ import annotations

import os
from collections.abc import Sequence

DEFAULT_WORKERS = 2


def default_workers() -> int:
    """Two processes at most by default: each solve holds its whole graph in memory."""
    return max(1, min(DEFAULT_WORKERS, os.cpu_count() or 1))


def memory_available() -> int | None:
    """Bytes of memory that new work can have now (MemAvailable: file cache,
    a memory-mapped table say, counts as reclaimable, as it is)."""
    from ..core.solve import available_memory

    return available_memory()


def states_that_fit(per_state: int) -> int | None:
    """How many states a solve at `per_state` bytes a state can hold in 90% of `memory_available()`."""
    available = memory_available()
    return None if available is None else int(0.9 * available / per_state)


def solves_at_once(estimates: Sequence[float], per_state: int, requested: int | None = None) -> int:
    """How many of the solves of `estimates` states each may run side by side:
    `requested` (default `default_workers()`), fewer when that many of the
    largest would not fit in memory together, and at least one."""
    requested = requested or default_workers()
    fit = states_that_fit(per_state)
    if fit is None or not estimates:
        return requested
    return max(1, min(requested, int(fit // max(max(estimates), 1))))
