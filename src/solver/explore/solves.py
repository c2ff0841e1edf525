"""The explorer's background solves: tables of rule sets a request names and
the cache does not hold, solved in one worker process, one at a time, in the
order they were asked for, while the server goes on answering.

The worker reports what it is doing (the phase, states found, states solved
of all, the time left at the pace so far); the server keeps the latest report
of each rule set for the progress page and the API's 202. A rule set too
large for the memory available is refused before anything is queued or
written. Stopping ends the worker and removes what its unfinished solve had
put in the cache (its lock file, kept ranks and temporary files), so the
cache is as it was.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import queue
import shutil
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rules.charge_spark.config import RuleSet, differences_from_default, fingerprint
from rules.charge_spark.size import estimate_reachable

from ..core.resources import layered_bytes_per_state, states_that_fit
from ..tables import resume_dir_of
from .answers import ExploreInputError
from .solve_worker import solve_tables

MAX_BOARD = 16
"""The longest board the explorer takes (the printed one has 6 squares)."""
MAX_HEALTH = 100
"""The most Health the explorer takes (the printed rules have 4)."""
SOLO_LIMIT = 12_000
"""`solo_states` past which a rule set is refused before its size is estimated: the estimate follows each
player's tiles, squares and hands, and past this takes tens of seconds (the printed rules have 2,400; a
game near the limit is far beyond any machine's memory)."""
STOP_WAIT = 10.0
"""Seconds the worker is given to end after it is told to, before it is killed."""


class TooLargeError(ExploreInputError):
    """A rule set whose table is not stored and that the explorer will not solve."""


def solo_states(rules: RuleSet) -> int:
    """A crude product of one player's ranges but Health: tiles, squares and the hands its draws can make."""
    stars = rules.board.count("*")
    hands = math.prod(min(count, stars + 1) + 1 for count in Counter(rules.bonus_cards).values())
    return (rules.battery_tiles + 1) * (rules.disc_tiles + 1) * len(rules.board) * hands


def refuse_unbounded(rules: RuleSet) -> None:
    """`TooLargeError`, at once, for rules too large to solve or even to estimate while a request waits: a
    board past `MAX_BOARD` squares, Health past `MAX_HEALTH`, or one player's ranges past `SOLO_LIMIT`."""
    why = None
    if len(rules.board) > MAX_BOARD:
        why = f"a board of {len(rules.board):,} squares (the explorer takes at most {MAX_BOARD})"
    elif rules.health > MAX_HEALTH:
        why = f"Health above {MAX_HEALTH}"
    elif solo_states(rules) > SOLO_LIMIT:
        why = (f"one player alone has up to {solo_states(rules):,} states of its tiles, squares and hands"
               f" (the explorer takes at most {SOLO_LIMIT:,})")
    if why is not None:
        raise TooLargeError(f"the rules [{fingerprint(rules)}] are too large to solve: {why}")


@dataclass
class SolveStatus:
    """Where the solve of one rule set stands."""

    fingerprint: str
    state: str  # "queued", "solving", "stored" or "failed"
    queued_at: float
    estimated_states: float
    changed: str  # the keys that differ from the printed rules
    progress: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def as_json(self, ahead: int = 0) -> dict:
        """The progress object the API's 202 carries."""
        return {"fingerprint": self.fingerprint, "estimated_states": round(self.estimated_states),
                "solves_ahead": ahead, **self.progress}


def too_large_for_memory(rules: RuleSet) -> float:
    """The estimated states of `rules`' table; `TooLargeError` when a solve of that many would not fit in the
    memory available (or when no machine could hold it)."""
    refuse_unbounded(rules)
    estimate = estimate_reachable(rules)
    fit = states_that_fit(layered_bytes_per_state())
    if fit is not None and estimate > fit:
        raise TooLargeError(f"the table of these rules [{fingerprint(rules)}] is not stored, and at about"
                            f" {estimate:,.0f} states its solve would not fit in the memory available (about"
                            f" {fit:,} states): nothing was queued")
    return estimate


class BackgroundSolves:
    """One worker process solving the tables asked for, in order. Safe to share between threads."""

    def __init__(self, cache_dir: str | None) -> None:
        self.cache_dir = cache_dir
        self._lock = threading.Lock()
        self._statuses: dict[str, SolveStatus] = {}
        self._order: list[str] = []  # fingerprints queued or solving, in order
        self._context = multiprocessing.get_context("spawn")  # no server threads or sockets copied into it
        self._jobs: Any = None
        self._reports: Any = None
        self._worker: Any = None
        self._reader: threading.Thread | None = None
        self._current: tuple[str, dict] | None = None  # the job being solved and what the cache held before it
        self._stopping = False

    def status(self, key: str) -> SolveStatus | None:
        with self._lock:
            return self._statuses.get(key)

    def ahead_of(self, key: str) -> int:
        """How many solves run or wait before the one of `key`."""
        with self._lock:
            return self._order.index(key) if key in self._order else 0

    def request(self, rules: RuleSet) -> SolveStatus:
        """The status of the solve of `rules`' table, queued now if it is not yet (`TooLargeError` at once,
        nothing queued or written, when it would not fit in memory)."""
        key = fingerprint(rules)
        with self._lock:
            known = self._statuses.get(key)
            if known is not None and known.state in ("queued", "solving", "failed"):
                return known
        estimate = too_large_for_memory(rules)
        with self._lock:
            if self._stopping:
                raise TooLargeError("the explorer is stopping: no solve is started")
            known = self._statuses.get(key)
            if known is not None and known.state in ("queued", "solving", "failed"):
                return known
            status = SolveStatus(key, "queued", time.time(), estimate, " ".join(differences_from_default(rules)),
                                 {"phase": "queued"})
            self._statuses[key] = status
            self._order.append(key)
            self._start_worker()
            self._jobs.put((key, rules))
            return status

    def forget(self, key: str) -> None:
        """Drop the status of a solve that has ended (its table stored, or its failure said)."""
        with self._lock:
            status = self._statuses.get(key)
            if status is not None and status.state in ("stored", "failed"):
                del self._statuses[key]

    def _start_worker(self) -> None:
        if self._worker is not None:
            return
        self._jobs = self._context.Queue()
        self._reports = self._context.Queue()
        self._worker = self._context.Process(target=solve_tables, args=(self._jobs, self._reports, self.cache_dir),
                                             name="charge-spark explore solver", daemon=True)
        self._worker.start()
        self._reader = threading.Thread(target=self._read_reports, name="solve reports", daemon=True)
        self._reader.start()

    def _read_reports(self) -> None:
        worker, reports = self._worker, self._reports
        while not self._stopping:
            try:
                report = reports.get(timeout=1.0)
            except queue.Empty:
                if not worker.is_alive() and not self._stopping:
                    self._worker_lost(worker)
                    return
                continue
            except (EOFError, OSError, ValueError):  # the channel closed: the server is stopping
                return
            self._take(report)

    def _take(self, report: tuple) -> None:
        kind, key, detail = report
        with self._lock:
            status = self._statuses.get(key)
            if status is None:
                return
            if kind == "started":
                self._current = (key, detail)
                status.state = "solving"
                status.progress = {"phase": "starting"}
            elif kind == "progress":
                status.progress = detail
            else:
                self._current = None
                if key in self._order:
                    self._order.remove(key)
                status.state = "stored" if kind == "stored" else "failed"
                status.error = detail if kind == "failed" else None

    def _worker_lost(self, worker: Any) -> None:
        """The worker ended by itself (killed for memory, say): its solves fail, a new one takes the next."""
        with self._lock:
            for key in self._order:
                self._statuses[key].state = "failed"
                self._statuses[key].error = f"the solving process ended unexpectedly (exit code {worker.exitcode})"
            self._order.clear()
            self._worker = None
        self._clean_unfinished(worker.pid)

    def stop(self) -> None:
        """End the worker (its solve unfinished) and leave the cache as it was before that solve."""
        with self._lock:
            self._stopping = True
            worker = self._worker
        if worker is None:
            return
        if worker.is_alive():
            worker.terminate()
            worker.join(STOP_WAIT)
            if worker.is_alive():
                worker.kill()
                worker.join()
        if self._reader is not None:
            self._reader.join(5.0)
        while True:  # what the worker said before it ended: the solve it had started, say
            try:
                self._take(self._reports.get(timeout=0.1))
            except (queue.Empty, EOFError, OSError, ValueError):
                break
        self._clean_unfinished(worker.pid)
        for channel in (self._jobs, self._reports):
            channel.close()
            channel.cancel_join_thread()

    def _clean_unfinished(self, pid: int) -> None:
        """Remove what the unfinished solve of the worker `pid` had added to the cache."""
        with self._lock:
            current, self._current = self._current, None
        if current is None:
            return
        _, before = current
        path = Path(before["path"])
        tmp = path.with_name(f".{path.name}.{pid}.tmp")
        tmp.unlink(missing_ok=True)
        if not before["lock"]:
            path.with_name(f".{path.name}.lock").unlink(missing_ok=True)
        resume = resume_dir_of(path)
        if not before["resume"]:
            shutil.rmtree(resume, ignore_errors=True)
        if not before["resume_parent"]:
            with contextlib.suppress(OSError):
                resume.parent.rmdir()
        if not before["cache"]:
            with contextlib.suppress(OSError):
                path.parent.rmdir()
