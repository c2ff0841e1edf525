"""A real Dask cluster on loopback for the tests: a `dask scheduler` and a few
`dask worker` processes of this venv, torn down however the test ends."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
DASK = Path(sys.executable).parent / "dask"
NO_NANNY = ("--no-nanny",)


@contextlib.contextmanager
def dask_cluster(
    tmp_path: Path, workers: int = 2, worker_options: Sequence[str] = NO_NANNY, env: dict[str, str] | None = None,
    each_worker: Sequence[Sequence[str]] = (),
) -> Iterator[tuple[str, dict[str, subprocess.Popen]]]:
    """A `dask scheduler` and `workers` single-threaded `dask worker` processes
    on loopback, each worker with `worker_options` (by default no nanny, so a
    worker's pid is the worker), then `each_worker[i]` for worker i (if given),
    and `env` on top of this process's. Yields
    the scheduler address and the worker processes by name; its log is
    tmp_path/dask.log."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]), **(env or {})}
    scheduler_file = tmp_path / "scheduler.json"
    common = ["--no-dashboard"]
    procs: list[subprocess.Popen] = []
    log = open(tmp_path / "dask.log", "wb")
    try:
        procs.append(subprocess.Popen(
            [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0", "--scheduler-file", str(scheduler_file),
             *common], env=env, stdout=log, stderr=log,
        ))
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() or not scheduler_file.read_text().strip():
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        named = {}
        for i in range(workers):
            named[f"w{i}"] = subprocess.Popen(
                [str(DASK), "worker", address, "--name", f"w{i}", "--nworkers", "1", "--nthreads", "1",
                 "--host", "127.0.0.1", *worker_options, *(each_worker[i] if i < len(each_worker) else ()), *common],
                env=env, stdout=log, stderr=log,
            )
            procs.append(named[f"w{i}"])
        from distributed import Client

        with Client(address, timeout="30s") as client:
            client.wait_for_workers(workers, timeout=60)
        yield address, named
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()
