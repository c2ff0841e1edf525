"""What a report cost to make: each part's wall time, its states, and whether
this run computed it or read it from the cache ("How this report was made").

Every report documents its own cost, so a designer can see where the time
goes and what a second run saves. A part read from the cache shows the time
it took in the run that computed it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

COMPUTED = "computed"
CACHED = "read from the cache"
TABLE_CACHED = "solved, its table read from the cache"


@dataclass(frozen=True)
class MadePart:
    part: str
    seconds: float | None
    """Wall time (None where a result kept by an earlier version has none)."""
    states: int | None
    """States the part's work covers: the table's, those play reaches, or the further game's."""
    source: str
    """`COMPUTED` in this run, `CACHED`, or `TABLE_CACHED` (a further game whose table was stored)."""
    group: str | None = None
    """The part it belongs to (its time is counted within that part's)."""


@dataclass(frozen=True)
class MadeTotals:
    computed_seconds: float
    """Wall time of the parts this run computed (groups counted once)."""
    cached_seconds: float
    """What the parts read from the cache took when they were computed."""
    computed_parts: int
    cached_parts: int


def made_totals(parts: Iterable[MadePart]) -> MadeTotals:
    """Sums over the top-level parts (a group's members are inside its time)."""
    top = [p for p in parts if p.group is None]
    return MadeTotals(
        computed_seconds=sum(p.seconds or 0.0 for p in top if p.source == COMPUTED),
        cached_seconds=sum(p.seconds or 0.0 for p in top if p.source != COMPUTED),
        computed_parts=sum(p.source == COMPUTED for p in top),
        cached_parts=sum(p.source != COMPUTED for p in top),
    )


def duration(seconds: float | None) -> str:
    """'-', '0.4 s', '52 s', '12 min 05 s' or '1 h 03 min'."""
    if seconds is None:
        return "-"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
