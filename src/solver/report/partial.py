"""The page of a report still running: a full-size report takes hours, and a
designer can read its headline, card usage and the first further solves long
before the rest is done."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from html import escape
from pathlib import Path

from ..core.files import write_text_atomically, writes_through


class PartialReport:
    """Written beside the finished report, never over it (an earlier finished
    report stays whole until the new one is done); rewritten at most every
    `every` seconds, the first time at once; removed once the report is done."""

    def __init__(self, path: Path, note: Callable[[str], None], every: float = 10.0, wanted: bool = True) -> None:
        self.path, self.note, self.every, self.wanted = path, note, every, wanted
        self.written_at: float | None = None

    @classmethod
    def beside(cls, finished: Path, note: Callable[[str], None], every: float = 10.0) -> PartialReport:
        """The partial page of the report to be written at `finished`: NAME.partial.html (none where
        `finished` is a device or a pipe, whose folder is no place for a page)."""
        return cls(finished.with_name(f"{finished.stem}.partial{finished.suffix or '.html'}"), note, every,
                   wanted=not writes_through(finished))

    def due(self) -> bool:
        return self.wanted and (self.written_at is None or time.monotonic() - self.written_at >= self.every)

    def write(self, html: str) -> None:
        if not self.wanted:
            return
        first = self.written_at is None
        write_text_atomically(self.path, html)
        self.written_at = time.monotonic()
        if first:
            self.note(f"the report so far: {self.path} (rewritten as parts finish)")

    def mark_stopped(self, why: str) -> None:
        """Say at the top of the page written so far that the run stopped (`why`: "was interrupted", "failed: ...")
        and the page is incomplete; nothing is written when no page was."""
        if self.written_at is None:
            return
        try:
            html = self.path.read_text(encoding="utf-8")
        except OSError:
            return
        banner = (f'<div class="partial" id="stopped" role="alert"><strong>Incomplete: the report run {escape(why)}'
                  f" at {time.strftime('%Y-%m-%d %H:%M:%S')}</strong>. This page holds what it had found by then and"
                  " will not be updated; running the report again resumes from the parts kept.</div>\n")
        at = html.find("<body>")
        at = 0 if at < 0 else at + len("<body>\n")
        with contextlib.suppress(OSError):  # the run's own error is the one to report
            write_text_atomically(self.path, html[:at] + banner + html[at:])

    def remove(self) -> None:
        """Once the finished report is written: its partial page, of this run or an interrupted one, goes."""
        if not self.wanted:
            return
        self.path.unlink(missing_ok=True)
