"""The job runner: the same answers in job order in this process, on local
processes and on Dask; each handed on once; dead workers said as such."""

from __future__ import annotations

import os

import pytest

from solver.core.jobs import (
    SchedulerError,
    WorkersLostError,
    cluster_threads,
    cluster_workers,
    dask_client,
    memory_limits,
    run_jobs,
    writable_dir,
)

JOBS = list(range(7))
DIES = 4
"""The job whose worker process dies."""


def square(x: int) -> int:
    return x * x


def slow_square(x: int) -> int:
    import time

    time.sleep(1.5)
    return x * x


def square_but_die_on_four(x: int) -> int:
    if x == DIES:
        os._exit(1)  # as a process killed for its memory
    return x * x


def square_but_fail_on_four(x: int) -> int:
    if x == DIES:
        raise ValueError("four")
    return x * x


def run_and_record(work, jobs, **options) -> tuple[list[int], list[tuple[int, int]]]:
    handed: list[tuple[int, int]] = []
    answers = run_jobs(work, jobs, on_answer=lambda i, answer: handed.append((i, answer)), **options)
    return answers, handed


@pytest.mark.parametrize("workers", [1, 2], ids=["in this process", "local processes"])
def test_the_answers_come_in_job_order_each_handed_on_once(workers):
    answers, handed = run_and_record(square, JOBS, workers=workers)
    assert answers == [x * x for x in JOBS]
    assert sorted(handed) == [(i, x * x) for i, x in enumerate(JOBS)]


def process_id(_job: int) -> int:
    return os.getpid()


def test_one_job_runs_here_as_do_all_with_one_worker():
    assert run_jobs(square, [], workers=4) == []
    assert run_jobs(process_id, [0], workers=4) == [os.getpid()]
    assert set(run_jobs(process_id, JOBS, workers=1)) == {os.getpid()}
    assert os.getpid() not in run_jobs(process_id, JOBS, workers=2)


def test_a_dead_worker_process_hands_back_the_jobs_it_left_unanswered():
    with pytest.raises(WorkersLostError) as lost:
        run_and_record(square_but_die_on_four, JOBS, workers=2)
    assert DIES in lost.value.unanswered and "died" in str(lost.value)


def test_the_answers_had_before_a_worker_died_are_handed_on():
    handed: list[tuple[int, int]] = []
    with pytest.raises(WorkersLostError) as lost:
        run_jobs(square_but_die_on_four, JOBS, workers=2, on_answer=lambda i, answer: handed.append((i, answer)))
    assert sorted([i for i, _ in handed] + list(lost.value.unanswered)) == list(range(len(JOBS)))
    assert all(answer == JOBS[i] ** 2 for i, answer in handed)


def test_a_job_that_raises_stops_the_run_with_its_error():
    with pytest.raises(ValueError, match="four"):
        run_jobs(square_but_fail_on_four, JOBS, workers=2)


def test_a_directory_a_worker_cannot_write_is_none(tmp_path):
    assert writable_dir(str(tmp_path)) == str(tmp_path)
    assert writable_dir(str(tmp_path / "elsewhere")) is None
    assert writable_dir(None) is None


# ------------------------------------------------------------------------ Dask


@pytest.fixture(scope="module")
def client():
    """A local cluster of two single-threaded workers that give up on a job the first time it kills one."""
    import dask
    import distributed  # noqa: F401 - its config defaults first: leaving `set` would drop the ones it adds later

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), dask_client(workers=2) as client:
        yield client


def test_on_dask_the_answers_are_those_of_a_local_run(client):
    answers, handed = run_and_record(square, JOBS, client=client)
    assert answers == run_jobs(square, JOBS, workers=1)
    assert sorted(handed) == [(i, x * x) for i, x in enumerate(JOBS)]


def test_on_dask_jobs_that_run_long_are_said_to_run_before_any_ends(client, monkeypatch, capsys):
    """`report --scheduler` runs its further solves on a cluster: a line every `LINE_EVERY` s there too."""
    _check_said_to_run_before_any_ends(monkeypatch, capsys, client=client)


def test_on_dask_a_job_that_kills_its_workers_is_named_after_the_others_are_answered(client):
    handed: list[tuple[int, int]] = []
    with pytest.raises(WorkersLostError) as lost:
        run_jobs(square_but_die_on_four, JOBS, client=client, on_answer=lambda i, answer: handed.append((i, answer)))
    # With no failure allowed, a job that merely waited on the same worker is given up too.
    assert DIES in lost.value.unanswered and "allowed-failures" in str(lost.value)
    assert sorted([i for i, _ in handed] + list(lost.value.unanswered)) == list(range(len(JOBS)))
    assert all(answer == JOBS[i] ** 2 for i, answer in handed) and len(handed) >= len(JOBS) - 2


def test_a_local_clusters_workers_have_memory_limits_and_a_thread_each(client):
    client.wait_for_workers(2, timeout=60)  # the nanny restarts a worker a test above killed
    workers = cluster_workers(client)
    assert cluster_threads(workers) == 2
    assert len(memory_limits(workers)) == 2 and all(limit > 0 for limit in memory_limits(workers).values())


def test_an_unreachable_scheduler_is_a_scheduler_error(monkeypatch):
    import solver.core.jobs

    monkeypatch.setattr(solver.core.jobs, "CONNECT_TIMEOUT", "1s")
    with pytest.raises(SchedulerError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:1"):
        with dask_client("tcp://127.0.0.1:1"):
            pass


def test_jobs_off_a_terminal_say_how_many_are_done(monkeypatch, capsys):
    from solver.core import progress

    monkeypatch.setattr(progress, "LINE_EVERY", 0.0)  # a line at every answer, not every 30 s
    assert run_jobs(square, JOBS, workers=1, description="rows", unit=" rows", show_progress=True) == [x * x for x in JOBS]
    lines = capsys.readouterr().err.splitlines()
    assert lines and lines[0].endswith("rows: 1 of 7 rows (14.3%), under 10 s left")  # the last answer prints none
    assert len(lines) == len(JOBS) - 1


def test_jobs_that_run_long_are_said_to_run_before_any_ends(monkeypatch, capsys):
    """A further solve of the printed rules runs 10-20 minutes: `report` in a log said nothing
    all that while, 55 times over. Off a terminal a line comes every `LINE_EVERY` s while none ends."""
    _check_said_to_run_before_any_ends(monkeypatch, capsys, workers=2)


def _check_said_to_run_before_any_ends(monkeypatch, capsys, **where) -> None:
    """Two jobs of 1.5 s run `where` (local workers or a Dask client), lines due every 0.2 s:
    the phase's line comes before either ends."""
    from solver.core import progress

    monkeypatch.setattr(progress, "LINE_EVERY", 0.2)
    assert run_jobs(slow_square, [2, 3], unit=" rows", show_progress=True, **where) == [4, 9]
    lines = capsys.readouterr().err.splitlines()
    assert any(line.endswith("solving: 0 of 2 rows (0.0%), time left not known yet") for line in lines), lines
