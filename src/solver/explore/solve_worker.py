"""What the explorer's worker process runs: each rule set taken from its
job queue solved and stored, as `solve` stores it, with its progress sent
back to the server (`solves.BackgroundSolves`) as the solve goes. The server
hands it one job at a time, and cancels the running one by ending it."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position

from ..core.lifetime import die_with_parent
from ..core.progress import seconds_left
from ..core.resources import FOLLOW_PLAY_BYTES_PER_STATE, states_that_fit
from ..core.table_file import table_path
from ..storage import default_cache_dir
from ..tables import solved_table
from ..user_errors import USER_ERRORS, one_line

REPORT_EVERY = 0.5
"""Seconds between two progress reports."""


def solve_tables(jobs: Any, reports: Any, cache_dir: str | None) -> None:
    """The worker: solve each rule set taken from `jobs` and store its table, reporting to `reports`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server ends it: Ctrl-C at a terminal reaches both
    die_with_parent(os.getppid(), by_signal=False)  # started from a server thread, which may end before the server
    while True:
        job = jobs.get()
        if job is None:
            return
        key, rules = job
        path = table_path(Path(cache_dir) if cache_dir else default_cache_dir(), key)
        reports.put(("started", key, None))  # what the cache held before, the server noted as it gave the job
        try:
            with reporting_progress(lambda progress, key=key: reports.put(("progress", key, progress))):
                table = solved_table(rules, cache_dir, workers=1)
            if not table.stored:
                reports.put(("failed", key, f"the table could not be stored in {path.parent}"))
                continue
            fit = states_that_fit(FOLLOW_PLAY_BYTES_PER_STATE)
            if not table.reused and (fit is None or table.result.num_states <= fit):
                # As `solve` does, where following play fits: a query of the start then reads it.
                from ..analysis.stalls import keep_length_and_stalls

                code = ChargeSparkGame(rules).encode(initial_position(rules))
                keep_length_and_stalls(rules, code, table.result, table.path.parent)
            reports.put(("stored", key, None))
        except (*USER_ERRORS, OSError) as error:
            reports.put(("failed", key, one_line(error)))


@contextlib.contextmanager
def reporting_progress(report: Callable[[dict], None]) -> Iterator[None]:
    """The solve's progress bars, while the block runs, replaced by `ProgressReport`s sent to `report`
    (the solve shows its progress only through its bars; this process runs nothing else)."""
    from ..core import solve

    started = time.monotonic()
    shown = {"phase": "enumerating", "states_found": 0, "states_solved": 0, "states_to_solve": None,
             "ranks_solved": 0, "elapsed_seconds": 0.0, "seconds_left": None}
    last = [0.0]

    def send(force: bool = False) -> None:
        now = time.monotonic()
        if force or now - last[0] >= REPORT_EVERY:
            last[0] = now
            shown["elapsed_seconds"] = round(now - started, 1)
            report(dict(shown))

    class ProgressBar:  # in place of the solve's `PhaseProgress`
        def __init__(self, desc: str = "", total: int | None = None, **_: Any) -> None:
            self.desc, self.total, self.n = desc, total, 0
            self.started = time.monotonic()
            self.first: tuple[float, int] | None = None  # the first step done: when, and how many
            if desc == "solving":
                shown.update(phase="solving", states_to_solve=total)
                send(force=True)

        def advance(self, count: int) -> None:
            self.update(self.n + count)

        def update(self, done: int) -> None:
            self.n = done
            if self.desc == "enumerating":
                shown["states_found"] = self.n
            elif self.desc == "solving":  # a rank-by-rank solve counts each rank as it finishes it
                shown["states_solved"] = self.n
                shown["ranks_solved"] += 1
                now = time.monotonic()
                if self.first is None and self.n > 0:
                    self.first = (now, self.n)
                if self.total:
                    left = seconds_left(self.total, self.n, now, self.started, self.first)
                    shown["seconds_left"] = None if left is None else round(left, 1)
            send()

        def __enter__(self) -> ProgressBar:
            return self

        def __exit__(self, *exc: object) -> None:
            if self.desc == "solving":
                shown.update(phase="storing", seconds_left=None)
                send(force=True)

    real = solve.PhaseProgress
    solve.PhaseProgress = ProgressBar  # type: ignore[misc, assignment]
    try:
        yield
    finally:
        solve.PhaseProgress = real
