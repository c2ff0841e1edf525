"""What this machine gives a solve: cores, memory, and how many states fit in it.

Kept apart from the solve itself so that asking costs no compiled kernels: a
query or a report's plan reads these long before (or without ever) solving.
"""

from __future__ import annotations

import os

import psutil

GRAPH_BYTES_PER_STATE = 1700  # peak while solving, measured on S*M health 2: 1.7 GB for 1,023,145 states
LAYERED_BYTES_PER_STATE = 176
"""Peak memory a state, solving rank by rank (see `layered`), with a tenth to spare: the
figures every worker shares (hurried play's buzzer values and guarantees included, the
guarantees as float32 offsets) and the workers' rank graphs; measured on the printed rules,
7.9 GB for 49,383,601 states on two workers (160 bytes a state; docs/performance.md)."""

FOLLOW_PLAY_BYTES_PER_STATE = 200
"""Memory a state of the table that following play from the start for its length
distribution and stalls (`analysis.stalls.followed_length_and_stalls`) takes at its peak:
340 bytes a state play reaches (traced, board S*M health 2, 2026-12-03: docs/performance.md),
and the printed rules' play reaches 42% of their table (143 bytes a state of it); 200 holds
rule sets whose play reaches up to 59% of theirs."""

MEMORY_SHARE = 0.9
"""A solve plans for this share of the memory available, leaving the rest to the system."""


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


def bytes_per_state(game: object, hurried: bool = True) -> int:
    """Peak memory a solve of `game` needs per state (rank by rank when the game ranks its
    states; `hurried=False`: a solve of values alone)."""
    if not hasattr(game, "progress_rank"):
        return GRAPH_BYTES_PER_STATE
    return LAYERED_BYTES_PER_STATE if hurried else LAYERED_VALUE_BYTES_PER_STATE


def states_that_fit(per_state: int = GRAPH_BYTES_PER_STATE) -> int | None:
    """How many states a solve at `per_state` bytes a state can hold in the memory available now."""
    available = available_memory()
    return None if available is None else int(MEMORY_SHARE * available / per_state)
