"""Many independent jobs, one function each, run on local processes or on a
Dask cluster, their answers handed on as they come.

`run_jobs(work, jobs, ...)` is `[work(job) for job in jobs]`: in this process
when there is one worker, in a pool of local processes, or on a Dask cluster
given a connected `distributed.Client` (from `dask_client`: an existing
scheduler's, or a local cluster's). It knows jobs, answers and workers, not
what the jobs compute; the report's further solves and the rule sweep both
run through it, and this module is the only one that starts worker pools or
Dask clients for them.

A worker that dies:
- local processes: the pool breaks, so `WorkersLostError` hands back which
  jobs got no answer (those answered before are kept); the caller decides
  whether to run them here, one at a time.
- Dask: the scheduler reruns a lost worker's jobs on the other workers (a
  worker killed by its nanny, or by the system, is lost); a job that has
  killed more workers than `distributed.scheduler.allowed-failures` allows
  (3 by default) is given up, and `WorkersLostError` names it once the other
  jobs are answered. No job is run here instead: a client of a cluster is
  usually the machine that cannot hold the job. With no worker left at all,
  the jobs wait for one to join, as Dask does.

Every process this package forks or spawns for its jobs dies with the one
that started it (`lifetime.die_with_parent`): a solve killed with `kill -9`
leaves no workers behind to hold its memory or its files.

Dask's memory management polices a worker's resident memory, and a job's
memory-mapped arrays count in it (file pages the system could drop count the
same as its own): a worker with a memory limit pauses at 80% of it and its
nanny kills it at 95% (Dask's defaults), whatever of that is mapped tables.
`workers_holding(cluster_workers(client), need)` tells which workers can run
jobs of `need` bytes on every thread at once under that; `run_jobs`'s
`placement` keeps each job to such workers.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any, TypeVar

from . import progress
from .lifetime import die_with_parent
from .progress import PhaseProgress
from .resources import usable_cores

# Dask is imported where a cluster is used, so that commands without one start without it.
if TYPE_CHECKING:
    from distributed import Client

Job = TypeVar("Job")
Answer = TypeVar("Answer")

CONNECT_TIMEOUT = 10.0  # seconds


class SchedulerError(OSError):
    """The Dask cluster named by the user cannot be used: its scheduler cannot
    be reached or has no workers, or its workers do not suit the jobs (the
    message says which and why)."""


class WorkersLostError(RuntimeError):
    """Workers died before answering some jobs: `unanswered` are their
    positions in the list of jobs, the answered ones having been handed on."""

    def __init__(self, message: str, unanswered: Sequence[int]) -> None:
        super().__init__(message)
        self.unanswered = tuple(unanswered)


# ------------------------------------------------------------------ workers



def worker_memory_limit() -> int | None:
    """Bytes the Dask worker running this may use (None outside a worker, or if unlimited)."""
    try:
        from distributed import get_worker

        return int(get_worker().memory_manager.memory_limit or 0) or None
    except (ImportError, ValueError, AttributeError):
        return None


def writable_dir(path: str | None) -> str | None:
    """`path` if this process may write there, else None: a directory named by
    a client exists on a worker only where they share a file system."""
    return path if path is not None and os.path.isdir(path) and os.access(path, os.W_OK) else None


@contextlib.contextmanager
def dask_client(scheduler: str | None = None, workers: int | None = None) -> Iterator[Client]:
    """A client of the scheduler at `scheduler`, else of a local cluster of
    `workers` single-threaded processes (default one per core); closed (and
    the local cluster shut down) on the way out, interrupts included.
    `SchedulerError` if the scheduler cannot be reached."""
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, ValueError, TypeError) as error:
            raise SchedulerError(f"cannot reach the Dask scheduler at {scheduler}: {error}") from None
        with client:
            yield client
        return
    with LocalCluster(
        n_workers=workers or usable_cores(), threads_per_worker=1, processes=True, dashboard_address=None,
        silence_logs=logging.ERROR,  # a cancelled task or a slow worker exit is no news
    ) as cluster, Client(cluster) as client:
        yield client


def cluster_workers(client: Client, timeout: float = CONNECT_TIMEOUT) -> dict[str, dict]:
    """The workers of `client`'s cluster by address (the scheduler's account:
    "nthreads", "memory_limit", "name", ...), after waiting up to `timeout`
    for a first one; `SchedulerError` if none comes."""
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (TimeoutError, OSError):
        raise SchedulerError(
            f"the Dask scheduler at {client.scheduler.address} has no workers (none came in {timeout:g} s);"
            " start some with `dask worker ADDRESS`"
        ) from None
    return dict(client.scheduler_info(n_workers=-1)["workers"])


def cluster_threads(workers: dict[str, dict]) -> int:
    """Jobs the workers of `cluster_workers` run at once: one a thread."""
    return sum(int(info.get("nthreads") or 1) for info in workers.values())


def memory_room(info: dict) -> float | None:
    """Bytes a worker of `cluster_workers` (its account `info`) may hold before
    its nanny kills it (its memory limit times Dask's `terminate` share; the
    whole limit where that is off); None if it has no limit."""
    import dask

    limit = int(info.get("memory_limit") or 0)
    if not limit:
        return None
    share = dask.config.get("distributed.worker.memory.terminate", 0.95)
    return limit * float(share) if share else float(limit)


def workers_holding(workers: dict[str, dict], need: float) -> list[str]:
    """The addresses of the workers of `cluster_workers` that can run a job
    needing `need` bytes on each of their threads at once: those with no
    memory limit, and those whose `memory_room` holds that many such jobs
    (Dask runs one a thread, whatever their memory)."""
    return [address for address, info in workers.items()
            if (room := memory_room(info)) is None or int(info.get("nthreads") or 1) * need <= room]


def memory_limits(workers: dict[str, dict]) -> dict[str, int]:
    """The workers of `cluster_workers` whose memory Dask polices, by name (or
    address), each with its limit in bytes; a worker started with
    `--memory-limit 0` has none."""
    return {str(info.get("name") or address): int(info["memory_limit"])
            for address, info in workers.items() if info.get("memory_limit")}


# --------------------------------------------------------------------- runs


def run_jobs(
    work: Callable[[Job], Answer], jobs: Sequence[Job], *, workers: int | None = None, client: Client | None = None,
    description: str = "solving", unit: str = " solves", show_progress: bool = False,
    on_answer: Callable[[int, Answer], None] | None = None, retries: int = 0,
    placement: Sequence[Sequence[str] | None] | None = None,
) -> list[Answer]:
    """`[work(job) for job in jobs]`, answers in job order, each handed to
    `on_answer(i, answer)` as it comes (in the order they finish), so that the
    caller can keep it at once.

    With `client`, on its Dask cluster (`retries`: more attempts for a job
    that raises; `placement`: per job, the addresses of the only workers that
    may run it, or None for any, e.g. from `workers_holding`); else in up to `workers` local processes (default: one per
    core), or in this process when there is one worker or one job. `work`
    must be a module-level function (workers import it by name) and the jobs
    must pickle: each carries all its worker needs. A job that raises stops
    the run (the jobs in flight are stopped) and the error is raised here;
    workers that die raise `WorkersLostError` (see the module docstring) once
    the answers that could be had are handed on. Interrupts stop every job
    in flight too."""
    jobs = list(jobs)
    answers: dict[int, Answer] = {}
    with PhaseProgress(description, len(jobs), unit=unit, shown=show_progress) as bar:

        def keep(i: int, answer: Answer) -> None:
            answers[i] = answer
            if on_answer is not None:
                on_answer(i, answer)
            bar.advance(1)

        def still_running() -> None:
            bar.update(bar.done)  # off a terminal, a line every `progress.LINE_EVERY` s while no job ends

        workers = workers or usable_cores()
        if client is not None:
            _on_cluster(client, work, jobs, keep, retries, placement or [None] * len(jobs), still_running)
        elif workers == 1 or len(jobs) <= 1:
            for i, job in enumerate(jobs):
                keep(i, work(job))
        else:
            _on_processes(work, jobs, min(workers, len(jobs)), keep, still_running)
    return [answers[i] for i in range(len(jobs))]


def _on_processes(
    work: Callable, jobs: list, workers: int, keep: Callable[[int, Any], None], still_running: Callable[[], None],
) -> None:
    # spawn, not fork: the parent may hold threads (numba, tqdm) that fork would copy mid-state.
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=die_with_parent,
                               initargs=(os.getpid(), threading.current_thread() is threading.main_thread()))
    futures: dict[Future, int] = {}
    kept: set[int] = set()
    try:
        futures = {pool.submit(work, job): i for i, job in enumerate(jobs)}
        pending = set(futures)
        while pending:
            # A further solve of the printed rules runs 10-20 minutes: said every `LINE_EVERY` s, not only when it ends.
            done, pending = wait(pending, timeout=progress.LINE_EVERY, return_when=FIRST_COMPLETED)
            if not done:
                still_running()
            for future in done:
                keep(futures[future], future.result())
                kept.add(futures[future])
    except BrokenProcessPool:
        _stop(pool)
        # The answers that came in before the pool broke are good: hand them on too.
        for future, i in futures.items():
            if i not in kept and future.done() and not future.cancelled() and future.exception() is None:
                keep(i, future.result())
                kept.add(i)
        unanswered = [i for i in range(len(jobs)) if i not in kept]
        raise WorkersLostError(
            f"a worker process died (killed, or out of memory?) before {len(unanswered)} of {len(jobs)} jobs"
            " were answered", unanswered) from None
    except BaseException:
        _stop(pool)  # interrupted or failed: stop the jobs in flight rather than wait for them
        raise
    pool.shutdown(wait=True)


def _stop(pool: ProcessPoolExecutor) -> None:
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()


_POLL = 0.1  # s between looks at a cluster's finished jobs while none is ready (as `distributed.as_completed` looks)


def _on_cluster(
    client: Client, work: Callable, jobs: list, keep: Callable[[int, Any], None], retries: int,
    placement: Sequence[Sequence[str] | None], still_running: Callable[[], None],
) -> None:
    from distributed import as_completed as completed
    from distributed.scheduler import KilledWorker

    token = uuid.uuid4().hex[:8]  # keys unique to this run, on a cluster other clients share
    name = getattr(work, "__name__", "job")
    futures = [client.submit(work, job, key=f"{name}-{i}-{token}", pure=False, retries=retries,
                             workers=list(where) if where is not None else None)
               for i, (job, where) in enumerate(zip(jobs, placement, strict=True))]
    position = {future.key: i for i, future in enumerate(futures)}
    lost: list[int] = []
    try:
        answers = completed(futures)
        while not answers.is_empty():
            if not answers.has_ready():
                # Polled as `as_completed` itself polls (its timeout is a deadline for all the jobs); the
                # progress bar says the run goes on at its own pace, a line every `LINE_EVERY` s off a terminal.
                time.sleep(_POLL)
                still_running()
                continue
            future = next(answers)
            try:
                answer = future.result()
            except KilledWorker:
                lost.append(position[future.key])  # the others still run: their answers are worth having
                continue
            keep(position[future.key], answer)
    finally:
        client.cancel(futures)  # no-op for the finished ones
    if lost:
        lost.sort()
        raise WorkersLostError(
            f"{len(lost)} of {len(jobs)} jobs killed every Dask worker that ran them, more times than the"
            " scheduler allows (distributed.scheduler.allowed-failures; out of memory?)", lost)
