"""Progress of a long phase on stderr, with the time left from the measured rate.

On a terminal a tqdm bar; elsewhere (a log, a pipe, CI) one line every
`LINE_EVERY` seconds, so a phase of minutes is never silent and a short one
prints nothing. The application names the lines (`PROGRAM`)."""

from __future__ import annotations

import io
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

from tqdm import tqdm

LINE_EVERY = 30.0  # seconds between two lines when stderr is not a terminal
KNOWN_SHARE = 0.02
"""The share of a phase done before its time left is given: until then the rate
is that of a few steps, and the printed rules' solve foretold 16.5 h at 0.1%
where it took 20 min."""
PROGRAM = ""  # set by the application: a line reads "PROGRAM: label: ..."


def rounded_duration(seconds: float) -> str:
    """'under 10 s', 'about 30 s', 'about 4 min', 'about 1.5 h': rounded up."""
    if seconds < 10:
        return "under 10 s"
    if seconds < 60:
        return f"about {math.ceil(seconds / 10) * 10} s"
    if seconds < 3600:
        return f"about {math.ceil(seconds / 60)} min"
    return f"about {math.ceil(seconds / 1800) / 2:g} h"


def seconds_left(total: int, done: int, now: float, started: float, first: tuple[float, int] | None) -> float | None:
    """Seconds until `done` reaches `total` at the rate since the first step done
    (`first`: when, and how many it made done), or since `started` while that step
    is the only one (a phase of a few long steps); None before any step.

    Not since the start: before the first step a solve's processes start and
    their compiled kernels load (or compile, the first time), which is no part
    of the rate. From the start, the printed rules' solve in a fresh install
    foretold 29 min at 6% where 7 min were left (70 s went by before its first
    layer was done)."""
    if first is None or done <= 0:
        return None
    since, before = first if done > first[1] and now > first[0] else (started, 0)
    rate = (done - before) / max(now - since, 1e-9)
    return (total - done) / rate if rate > 0 else None


def draws_bars(stream: TextIO) -> bool:
    """Whether `stream` is a terminal a bar can be drawn on. A pseudo-terminal
    opened without a size (`script`, some containers' `-t`) has 0 columns, and
    tqdm draws nothing there: such a stream gets the lines a log gets."""
    if not stream.isatty():
        return False
    try:
        return os.get_terminal_size(stream.fileno()).columns > 0
    except (OSError, ValueError, io.UnsupportedOperation):  # no size to be read: taken for a terminal
        return True


class PhaseProgress:
    """`update(done)` (or `advance(by)`) as a phase of `total` steps goes
    (None: not known ahead, as in an enumeration); `close()` at its end.
    `shown=False` says nothing at all."""

    def __init__(
        self, label: str, total: int | None, *, unit: str = "", shown: bool = True, stream: TextIO | None = None,
        terminal: bool | None = None, every: float | None = None, clock: Callable[[], float] = time.monotonic,
        delay: float = 0.0,
    ) -> None:
        self.label, self.total, self.unit, self.clock = label, total, unit, clock
        self.every = LINE_EVERY if every is None else every
        self.shown = shown
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = draws_bars(self.stream) if terminal is None else terminal
        self.started = self.last_line = clock()
        self.first: tuple[float, int] | None = None  # when the first step was done, and how many it made done
        self.bar = (tqdm(total=total, desc=label, file=self.stream, unit=unit, delay=delay)
                    if shown and self.terminal else None)
        self.done = 0
        self._lock = threading.Lock()

    def __enter__(self) -> PhaseProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def advance(self, by: int) -> None:
        """`by` more steps done; safe from several threads at once (the table's assembly)."""
        with self._lock:
            self.update(self.done + by)

    def update(self, done: int) -> None:
        if self.bar is not None:
            self.bar.update(done - self.done)
        self.done = done
        if not self.shown or self.bar is not None:
            return
        now = self.clock()
        if self.first is None and done > 0:
            self.first = (now, done)
        if now - self.last_line >= self.every and (self.total is None or done < self.total):
            self.last_line = now
            print(f"{PROGRAM}: {self.line(now)}" if PROGRAM else self.line(now), file=self.stream, flush=True)

    def line(self, now: float) -> str:
        """'{label}: 1,200 of 17,373 (6.9%), about 2.5 h left', the rate measured since the
        first step done (`seconds_left`; the time left not known yet below `KNOWN_SHARE`
        done); without a total, '{label}: 12,345,678 so far, in about 4 min'."""
        elapsed = now - self.started
        if self.total is None:
            return f"{self.label}: {self.done:,}{self.unit} so far, in {rounded_duration(elapsed)}"
        share = self.done / self.total if self.total else 1.0
        left = seconds_left(self.total, self.done, now, self.started, self.first) if share >= KNOWN_SHARE else None
        told = "time left not known yet" if left is None else f"{rounded_duration(left)} left"
        return f"{self.label}: {self.done:,} of {self.total:,}{self.unit} ({100 * share:.1f}%), {told}"

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
