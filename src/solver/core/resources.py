"""What this machine gives a solve: cores, memory, and how many states fit in it.

Kept apart from the solve itself so that asking costs no compiled kernels: a
query or a report's plan reads these long before (or without ever) solving.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import psutil

GRAPH_BYTES_PER_STATE = 1700  # peak while solving, measured on S*M health 2: 1.7 GB for 1,023,145 states
LAYERED_BYTES_PER_STATE = 176
"""Peak memory a state, solving rank by rank (see `layered`) with every figure in memory,
with a tenth to spare: the figures every worker shares (hurried play's buzzer values and
guarantees included, the guarantees as float32 offsets) and the workers' rank graphs;
measured on the printed rules, 7.9 GB for 49,383,601 states on two workers (160 bytes a
state; docs/performance.md). Where the shared figures go to a file on disk
(`figures_on_disk`), a solve keeps only `LAYERED_RESIDENT_BYTES_PER_STATE` of it in
memory: `layered_bytes_per_state` says which applies."""

LAYERED_RESIDENT_BYTES_PER_STATE = 69
"""Peak memory a state of a rank-by-rank solve whose shared figures go to a file on disk
(`figures_on_disk`; each process lets go of the pages of a rank once done with it), with a
tenth to spare: the state codes, the workers' rank graphs and the pages of the rank in
hand. Measured on the printed rules (`make solve` at 5855037: enumeration, the solve with
hurried play, assembly): 3.09 GB of PSS for the whole process tree, 62.6 bytes a state
(docs/performance.md). Of `LAYERED_BYTES_PER_STATE`, the other 107 are the figures (107
measured, a report's variant) that the file holds."""

FOLLOW_PLAY_BYTES_PER_STATE = 150
"""Memory a state of the table that following play from the start for its length
distribution and stalls (`analysis.stalls.followed_length_and_stalls`) takes at its peak:
the printed rules' peak RSS was 5.44 GB, 110 bytes a state of their table, 262 a state play
reaches (42% of the table; 2026-12-03, docs/performance.md). 150 holds rule sets whose play
reaches up to 57% of theirs."""

MEMORY_SHARE = 0.9
"""A solve plans for this share of the memory available, leaving the rest to the system."""


def processes_allowed(workers: int) -> int:
    """`workers`, or 1 in a daemonic process (the explorer's solver), which
    may start no process of its own: its work then stays in it."""
    import multiprocessing

    return 1 if multiprocessing.current_process().daemon else workers


def usable_cores() -> int:
    """Cores this process may run on (a container's or taskset's limit included)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def available_memory() -> int | None:
    """Bytes of memory a new allocation can have now without swapping: free
    memory plus the file cache the system would give back (MemAvailable: a
    memory-mapped table counts as reclaimable, as it is), or None if the
    system does not say."""
    try:
        return int(psutil.virtual_memory().available)
    except (OSError, RuntimeError, AttributeError):  # pragma: no cover - an unsupported system
        return None


LAYERED_VALUE_BYTES_PER_STATE = 140
"""The same for a rank-by-rank solve of values alone (no hurried play, no strategies kept:
`solve.solve_start_figures(hurried=False)`), with a tenth to spare (docs/performance.md)."""

_MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs"})


def figures_on_disk(figures: int, resident: int, directory: str | None = None) -> bool:
    """Whether a rank-by-rank solve's shared figures (`figures` bytes a state) go to a file
    that stays out of memory: the temporary directory (or `directory`) is not in memory, and
    its disk has room for the figures of as many states as fit in memory at `resident`
    bytes a state (else `shared_arrays` falls back to memory, and so must the plan)."""
    directory = directory or tempfile.gettempdir()
    if _filesystem_type(directory) in _MEMORY_FILESYSTEMS:
        return False
    try:
        free = shutil.disk_usage(directory).free
    except OSError:
        return False
    fit = states_that_fit(resident)
    return fit is None or free >= fit * figures


def layered_bytes_per_state(hurried: bool = True) -> int:
    """Memory a state of a rank-by-rank solve takes at its peak (`hurried=False`: values
    alone): less its shared figures where they go to a file on disk (`figures_on_disk`)."""
    full = LAYERED_BYTES_PER_STATE if hurried else LAYERED_VALUE_BYTES_PER_STATE
    resident = min(LAYERED_RESIDENT_BYTES_PER_STATE, full)
    return resident if figures_on_disk(full - resident, resident) else full


def _filesystem_type(directory: str) -> str | None:
    """The type of the filesystem `directory` is on (Linux's mount table), None if unknown."""
    try:
        path = os.path.realpath(directory)
        with open("/proc/self/mounts") as mounts:
            entries = [line.split()[1:3] for line in mounts if len(line.split()) >= 3]
    except OSError:
        return None
    best, kind = "", None
    for point, fs in entries:
        point = point.replace("\\040", " ")
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fs
    return kind


def bytes_per_state(game: object, hurried: bool = True) -> int:
    """Peak memory a solve of `game` needs per state (rank by rank when the game ranks its
    states; `hurried=False`: a solve of values alone)."""
    if not hasattr(game, "progress_rank"):
        return GRAPH_BYTES_PER_STATE
    return layered_bytes_per_state(hurried)


def states_that_fit(per_state: int = GRAPH_BYTES_PER_STATE) -> int | None:
    """How many states a solve at `per_state` bytes a state can hold in the memory available now."""
    available = available_memory()
    return None if available is None else int(MEMORY_SHARE * available / per_state)
