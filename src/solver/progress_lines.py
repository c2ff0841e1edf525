"""Progress of a long counted phase on stderr, with the time left from the measured rate.

On a terminal a tqdm bar; elsewhere (a log, a pipe, CI) one line every
`LINE_EVERY` seconds, so a phase of minutes is never silent and a short one
prints nothing."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import TextIO

from tqdm import tqdm

LINE_EVERY = 30.0  # seconds between two lines when stderr is not a terminal


def rounded_duration(seconds: float) -> str:
    """'under 10 s', 'about 30 s', 'about 4 min', 'about 1.5 h': rounded up."""
    if seconds < 10:
        return "under 10 s"
    if seconds < 60:
        return f"about {math.ceil(seconds / 10) * 10} s"
    if seconds < 3600:
        return f"about {math.ceil(seconds / 60)} min"
    return f"about {math.ceil(seconds / 1800) / 2:g} h"


class PhaseProgress:
    """`update(done)` as a phase of `total` steps goes; `close()` at its end."""

    def __init__(
        self, label: str, total: int, *, stream: TextIO | None = None, terminal: bool | None = None,
        every: float = LINE_EVERY, clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label, self.total, self.every, self.clock = label, total, every, clock
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = self.stream.isatty() if terminal is None else terminal
        self.started = self.last_line = clock()
        self.bar = tqdm(total=total, desc=label, file=self.stream, unit="") if self.terminal else None
        self.done = 0

    def update(self, done: int) -> None:
        if self.bar is not None:
            self.bar.update(done - self.done)
        self.done = done
        now = self.clock()
        if self.bar is None and now - self.last_line >= self.every and done < self.total:
            self.last_line = now
            print(f"charge-spark: {self.line(now)}", file=self.stream, flush=True)

    def line(self, now: float) -> str:
        """'{label}: 120 of 17,373 (0.7%), about 2.5 h left', the rate measured since the start."""
        share = self.done / self.total if self.total else 1.0
        elapsed = now - self.started
        left = "time left not known yet" if self.done == 0 else (
            f"{rounded_duration(elapsed * (self.total - self.done) / self.done)} left")
        return f"{self.label}: {self.done:,} of {self.total:,} ({100 * share:.1f}%), {left}"

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
