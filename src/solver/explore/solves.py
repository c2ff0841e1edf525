"""The explorer's background solves: tables of rule sets a request names and
the cache does not hold, solved in one worker process, one at a time, in the
order they were asked for, while the server goes on answering.

The worker reports what it is doing (the phase, states found, states solved
of all, the time left at the pace so far); the server keeps the latest report
of each rule set for the progress page and the API's 202. A rule set too
large for the memory available is refused before anything is queued or
written. Cancelling a queued solve drops it; cancelling the running one, or
stopping, ends the worker and removes what its unfinished solve had put in
the cache (its lock file, kept ranks, temporary files, and its table and
results if it had got that far), so the cache is as it was.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import queue
import re
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
from ..storage import default_cache_dir
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
    """One worker process solving the tables asked for, in order, one job handed to it at a time (so a queued
    solve can be cancelled by dropping it, and the running one by ending the worker). Safe to share between
    threads."""

    def __init__(self, cache_dir: str | None) -> None:
        self.cache_dir = cache_dir
        self._lock = threading.Lock()
        self._statuses: dict[str, SolveStatus] = {}
        self._order: list[str] = []  # fingerprints queued or solving, in order
        self._rules: dict[str, RuleSet] = {}  # the rules of each of them
        self._context = multiprocessing.get_context("spawn")  # no server threads or sockets copied into it
        self._worker: _Worker | None = None
        self._current: tuple[str, set[str]] | None = None  # the job the worker has, and its cache entries before it
        self._cleaning: set[str] = set()  # jobs ended whose writes are being removed: not handed out meanwhile
        self._stopping = False

    def status(self, key: str) -> SolveStatus | None:
        with self._lock:
            return self._statuses.get(key)

    def ahead_of(self, key: str) -> int:
        """How many solves run or wait before the one of `key`."""
        with self._lock:
            return self._order.index(key) if key in self._order else 0

    def request(self, rules: RuleSet, estimate: float | None = None) -> SolveStatus:
        """The status of the solve of `rules`' table, queued now if it is not yet (`TooLargeError` at once,
        nothing queued or written, when it would not fit in memory). `estimate`: its states, if known."""
        key = fingerprint(rules)
        with self._lock:
            known = self._statuses.get(key)
            if known is not None and known.state in ("queued", "solving", "failed"):
                return known
        if estimate is None:
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
            self._rules[key] = rules
            self._dispatch()
            return status

    def forget(self, key: str) -> None:
        """Drop the status of a solve that has ended (its table stored, or its failure said)."""
        with self._lock:
            status = self._statuses.get(key)
            if status is not None and status.state in ("stored", "failed"):
                del self._statuses[key]

    def cancel(self, key: str) -> bool:
        """Cancel the solve of `key`: dropped from the queue, or, running, its worker ended and what it had
        written to the cache removed, so the cache is as it was before it; the next solve goes on in a new
        worker. Its status says "cancelled" (a page then asks before solving it again). False: it was not
        queued or solving."""
        with self._lock:
            status = self._statuses.get(key)
            if status is None or status.state not in ("queued", "solving") or key not in self._order:
                return False
            self._order.remove(key)
            self._rules.pop(key, None)
            status.state, status.error, status.progress = "cancelled", None, {"phase": "cancelled"}
            running = self._current is not None and self._current[0] == key
            if not running:
                return True
            worker, self._worker = self._worker, None
            current, self._current = self._current, None
            self._cleaning.add(key)
        try:
            if worker is not None:
                worker.end()
            assert current is not None
            self._restore(*current, None if worker is None else worker.process.pid)
        finally:
            with self._lock:
                self._cleaning.discard(key)
                self._dispatch()
        return True

    def _cache(self) -> Path:
        return Path(self.cache_dir) if self.cache_dir else default_cache_dir()

    def _dispatch(self) -> None:
        """Hand the next queued job to the worker (started if need be) when it has none. Under `_lock`."""
        if self._current is not None or self._stopping:
            return
        key = next((k for k in self._order if k not in self._cleaning), None)
        if key is None:
            return
        if self._worker is None:
            self._worker = _Worker.started(self._context, self.cache_dir)
            threading.Thread(target=self._read_reports, args=(self._worker,), name="solve reports",
                             daemon=True).start()
        self._current = (key, cache_entries(self._cache(), key))
        self._worker.jobs.put((key, self._rules[key]))

    def _read_reports(self, worker: _Worker) -> None:
        while True:
            with self._lock:
                if self._stopping or self._worker is not worker:
                    return
            try:
                report = worker.reports.get(timeout=1.0)
            except queue.Empty:
                if not worker.process.is_alive():
                    self._worker_lost(worker)
                    return
                continue
            except (EOFError, OSError, ValueError):  # the channel closed: the worker was ended
                return
            self._take(report, worker)

    def _take(self, report: tuple, worker: _Worker) -> None:
        kind, key, detail = report
        with self._lock:
            status = self._statuses.get(key)
            if self._worker is not worker or status is None or status.state not in ("queued", "solving"):
                return  # from a worker ended since, or of a solve cancelled
            if kind == "started":
                status.state = "solving"
                status.progress = {"phase": "starting"}
            elif kind == "progress":
                status.progress = detail
            else:
                self._current = None
                if key in self._order:
                    self._order.remove(key)
                self._rules.pop(key, None)
                status.state = "stored" if kind == "stored" else "failed"
                status.error = detail if kind == "failed" else None
                self._dispatch()

    def _worker_lost(self, worker: _Worker) -> None:
        """The worker ended by itself (killed for memory, say): its solve fails, a new one takes the next."""
        with self._lock:
            if self._worker is not worker:
                return
            self._worker = None
            current, self._current = self._current, None
            if current is not None:
                key = current[0]
                if key in self._order:
                    self._order.remove(key)
                self._rules.pop(key, None)
                self._statuses[key].state = "failed"
                self._statuses[key].error = (f"the solving process ended unexpectedly (exit code"
                                             f" {worker.process.exitcode})")
                self._cleaning.add(key)
        worker.end()
        if current is not None:
            try:
                self._restore(*current, worker.process.pid)
            finally:
                with self._lock:
                    self._cleaning.discard(current[0])
                    self._dispatch()

    def stop(self) -> None:
        """End the worker (its solve unfinished) and leave the cache as it was before that solve."""
        with self._lock:
            self._stopping = True
            worker, self._worker = self._worker, None
            current, self._current = self._current, None
        if worker is not None:
            worker.end()
        if current is not None:
            self._restore(*current, None if worker is None else worker.process.pid)

    def _restore(self, key: str, before: set[str], pid: int | None) -> None:
        """Remove what a solve of `key` ended unfinished (by the worker `pid`) had added to the cache
        (`before`: its entries then); another process's temporary files are left to it."""
        cache = self._cache()
        added = sorted(cache_entries(cache, key) - before, key=lambda entry: entry.count("/"), reverse=True)
        for entry in added:
            other = re.search(r"\.(\d+)\.tmp$", entry)
            if other is not None and int(other.group(1)) != pid:
                continue  # written by another process (a `solve` of the same rules, say)
            path = cache / entry if entry else cache
            with contextlib.suppress(OSError):
                if path.is_dir() and not path.is_symlink():
                    if key in path.name:
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        path.rmdir()  # a directory the solve made (resume, analysis, the cache): if empty
                else:
                    path.unlink()


CACHE_FOLDERS = ("", "resume", "analysis")
"""The folders of the cache a solve may create: the cache itself, its kept ranks' and its results'."""


def cache_entries(cache: Path, key: str) -> set[str]:
    """What the cache holds of the table `key` (paths relative to `cache`, "" the cache itself): its file,
    lock and temporary files, its kept ranks, its kept results, and which of `CACHE_FOLDERS` exist."""
    found = {folder for folder in CACHE_FOLDERS if (cache / folder).is_dir()}
    for folder in ("", "analysis"):
        with contextlib.suppress(OSError):
            found |= {str(Path(folder) / p.name) for p in (cache / folder).iterdir() if key in p.name}
    ranks = cache / "resume" / key
    with contextlib.suppress(OSError):
        if ranks.is_dir():
            found |= {str(p.relative_to(cache)) for p in [ranks, *ranks.rglob("*")]}
    return found


@dataclass
class _Worker:
    """The worker process and its two channels: jobs to it, reports from it."""

    process: Any
    jobs: Any
    reports: Any

    @classmethod
    def started(cls, context: Any, cache_dir: str | None) -> _Worker:
        jobs, reports = context.Queue(), context.Queue()
        process = context.Process(target=solve_tables, args=(jobs, reports, cache_dir),
                                  name="charge-spark explore solver", daemon=True)
        process.start()
        return cls(process, jobs, reports)

    def end(self) -> None:
        """End the process (told first, killed after `STOP_WAIT` s) and close its channels."""
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(STOP_WAIT)
            if self.process.is_alive():
                self.process.kill()
                self.process.join()
        for channel in (self.jobs, self.reports):
            channel.close()
            channel.cancel_join_thread()
