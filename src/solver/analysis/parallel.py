"""How many solves may run side by side on this machine, by memory.

They run through `solver.core.jobs.run_jobs` (local processes or a Dask cluster);
this module only sizes a local run."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..core import resources

DEFAULT_WORKERS = 2


def default_workers() -> int:
    """Two processes at most by default: each solve holds its whole graph in memory."""
    return max(1, min(DEFAULT_WORKERS, os.cpu_count() or 1))


def solves_at_once(estimates: Sequence[float], per_state: int, requested: int | None = None) -> int:
    """How many of the solves of `estimates` states each may run side by side:
    `requested` (default `default_workers()`), fewer when that many of the
    largest would not fit in memory together, and at least one."""
    requested = requested or default_workers()
    fit = resources.states_that_fit(per_state)
    if fit is None or not estimates:
        return requested
    return max(1, min(requested, int(fit // max(max(estimates), 1))))
