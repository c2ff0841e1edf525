"""The page of a report still running: a full-size report takes hours, and a
designer can read its headline, card usage and the first further solves long
before the rest is done."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from ..core.files import write_text_atomically


class PartialReport:
    """Written beside the finished report, never over it (an earlier finished
    report stays whole until the new one is done); rewritten at most every
    `every` seconds, the first time at once; removed once the report is done."""

    def __init__(self, path: Path, note: Callable[[str], None], every: float = 10.0) -> None:
        self.path, self.note, self.every = path, note, every
        self.written_at: float | None = None

    @classmethod
    def beside(cls, finished: Path, note: Callable[[str], None], every: float = 10.0) -> PartialReport:
        """The partial page of the report to be written at `finished`: NAME.partial.html."""
        return cls(finished.with_name(f"{finished.stem}.partial{finished.suffix or '.html'}"), note, every)

    def due(self) -> bool:
        return self.written_at is None or time.monotonic() - self.written_at >= self.every

    def write(self, html: str) -> None:
        first = self.written_at is None
        write_text_atomically(self.path, html)
        self.written_at = time.monotonic()
        if first:
            self.note(f"the report so far: {self.path} (rewritten as parts finish)")

    def remove(self) -> None:
        """Once the finished report is written: its partial page, of this run or an interrupted one, goes."""
        self.path.unlink(missing_ok=True)
