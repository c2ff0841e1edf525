"""CPU seconds a solve spends in each of its phases, for the solve-cost figure.

A phase's time is its own: while a phase nested inside it runs, the clock
charges the inner one. Each process keeps its own totals; a worker hands its
totals back with the layer it solved (`taken`), and the parent adds them up.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Iterator

STAGE_PASS = "Bellman residual"
"""The phase of each layer's Bellman residual: one pass of the stage kernel
(matrix from the successors' values, saddle check, simplex, value and
strategies) over the states the solve solved, timed inside the solve."""

_totals: defaultdict[str, float] = defaultdict(float)
_open: list[list] = []  # [name, CPU time it last resumed] of each running phase, innermost last


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Charge the CPU time spent inside the `with` to `name` (less that of phases nested in it)."""
    now = time.process_time()
    if _open:
        outer = _open[-1]
        _totals[outer[0]] += now - outer[1]
    _open.append([name, now])
    try:
        yield
    finally:
        now = time.process_time()
        inner = _open.pop()
        _totals[inner[0]] += now - inner[1]
        if _open:
            _open[-1][1] = now


def taken() -> dict[str, float]:
    """This process's totals since they were last taken, as a plain dict; the clock starts again from zero."""
    out = dict(_totals)
    _totals.clear()
    return out


def merge(more: dict[str, float]) -> None:
    """Add another process's `taken()` into this process's totals."""
    for name, seconds in more.items():
        _totals[name] += seconds
