"""Many independent solves at once, on local processes, with progress.

One small function so that the back end (a process pool today) can be
swapped for another without touching its callers."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import TypeVar

from tqdm import tqdm

Job = TypeVar("Job")
Answer = TypeVar("Answer")

DEFAULT_WORKERS = 2


def default_workers() -> int:
    """Two processes at most by default: each solve holds its whole graph in memory."""
    return max(1, min(DEFAULT_WORKERS, os.cpu_count() or 1))


def memory_available() -> int | None:
    """Bytes of memory that new work can have now (MemAvailable: file cache,
    a memory-mapped table say, counts as reclaimable, as it is)."""
    from ..solve import available_memory

    return available_memory()


def states_that_fit(per_state: int) -> int | None:
    """How many states a solve at `per_state` bytes a state can hold in 90% of `memory_available()`."""
    available = memory_available()
    return None if available is None else int(0.9 * available / per_state)


def solves_at_once(estimates: Sequence[float], per_state: int, requested: int | None = None) -> int:
    """How many of the solves of `estimates` states each may run side by side:
    `requested` (default `default_workers()`), fewer when that many of the
    largest would not fit in memory together, and at least one."""
    requested = requested or default_workers()
    fit = states_that_fit(per_state)
    if fit is None or not estimates:
        return requested
    return max(1, min(requested, int(fit // max(max(estimates), 1))))


def run_all(
    work: Callable[[Job], Answer], jobs: Sequence[Job], *, workers: int | None = None,
    description: str = "solving", show_progress: bool = False,
    on_answer: Callable[[int, Answer], None] | None = None,
) -> list[Answer]:
    """`[work(job) for job in jobs]`, in up to `workers` processes, answers in job order.
    `on_answer(i, answer)` is called as each finishes (to keep it at once).

    `work` must be a module-level function (it is sent to the workers by name)."""
    keep = on_answer or (lambda i, answer: None)
    workers = workers or default_workers()
    answers: list = [None] * len(jobs)
    with tqdm(total=len(jobs), desc=description, unit=" solves", disable=not show_progress) as bar:
        if workers == 1 or len(jobs) <= 1:
            for i, job in enumerate(jobs):
                answers[i] = work(job)
                keep(i, answers[i])
                bar.update()
            return answers
        # spawn, not fork: the parent may hold threads (numba, tqdm) that fork would copy mid-state.
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
        try:
            futures = {pool.submit(work, job): i for i, job in enumerate(jobs)}
            for future in as_completed(futures):
                answers[futures[future]] = future.result()
                keep(futures[future], answers[futures[future]])
                bar.update()
        except BaseException:
            # Interrupted or failed: stop the solves in flight rather than wait for them.
            workers_running = list(getattr(pool, "_processes", {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for process in workers_running:
                process.terminate()
            raise
        pool.shutdown(wait=True)
    return answers
