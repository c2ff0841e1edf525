"""`report --scheduler`: the further solves on a real Dask cluster give the
numbers of a local run; a cluster the report cannot use stops it in one line
before anything is written."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from cluster import dask_cluster
from rules.charge_spark.config import RuleSet, apply_overrides, fingerprint
from solver.analysis.results_cache import ResultsCache
from solver.cli import main
from solver.core import jobs as jobs_module

# 18 further solves of a second or two each (5,000 states); only the sections that need them.
TINY = ["--set", "board=SM", "--set", "health=1", "--set", "bonus_cards="]
SECTIONS = ["--sections", "strength,sensitivity"]
TIMINGS = {"seconds", "reused", "warm_started"}


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def further_answers(cache: Path) -> dict[str, dict]:
    """What the report kept of each further solve (restricted game, variant), timings aside."""
    rules = apply_overrides(RuleSet(), [TINY[i + 1] for i in range(0, len(TINY), 2)])
    entries = ResultsCache(cache, fingerprint(rules)).entries
    return {key: {k: v for k, v in entry.items() if k not in TIMINGS} for key, entry in entries.items()
            if key.startswith(("without:", "variant:"))}


def assert_same_numbers(got, expected, where: str = "") -> None:
    if isinstance(expected, dict):
        assert got.keys() == expected.keys(), where
        for key in expected:
            assert_same_numbers(got[key], expected[key], f"{where}/{key}")
    elif isinstance(expected, list):
        assert len(got) == len(expected), where
        for i, (a, b) in enumerate(zip(got, expected)):
            assert_same_numbers(a, b, f"{where}[{i}]")
    elif isinstance(expected, float):
        assert got == pytest.approx(expected, abs=1e-9, nan_ok=True), where
    else:
        assert got == expected, where


def tasks_run_by(address: str) -> dict[str, int]:
    """Tasks the scheduler at `address` has seen finish, by the name of the function."""
    from distributed import Client

    def finished(dask_scheduler) -> dict[str, int]:  # each task enters "memory" once, when it finishes
        return {name: prefix.state_counts.get("memory", 0) for name, prefix in dask_scheduler.task_prefixes.items()}

    with Client(address, timeout="30s") as client:
        return client.run_on_scheduler(finished)


@pytest.mark.slow
def test_the_further_solves_on_a_cluster_are_those_of_a_local_run(tmp_path):
    started = time.perf_counter()
    local = run("report", *TINY, *SECTIONS, "--out", str(tmp_path / "local.html"), "--cache-dir", str(tmp_path / "a"))
    assert local.exit_code == 0, local.output
    expected = further_answers(tmp_path / "a")
    assert len(expected) >= 10
    seconds = {"local report": time.perf_counter() - started}
    with dask_cluster(tmp_path, worker_options=["--memory-limit", "0"]) as (address, _):
        seconds["cluster started"] = time.perf_counter() - started - sum(seconds.values())
        remote = run("report", *TINY, *SECTIONS, "--scheduler", address, "--out", str(tmp_path / "remote.html"),
                     "--cache-dir", str(tmp_path / "b"))
        seconds["report on the cluster"] = time.perf_counter() - started - sum(seconds.values())
        assert remote.exit_code == 0, remote.output
        assert tasks_run_by(address).get("further_solve") == len(expected)  # each solved there, once
    assert f"{len(expected)} further solves to run, 2 at a time on the Dask cluster at {address}" in remote.stderr
    assert_same_numbers(further_answers(tmp_path / "b"), expected)
    print(", ".join(f"{name}: {s:.0f} s" for name, s in seconds.items()))


def test_an_unreachable_scheduler_is_one_line_and_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(jobs_module, "CONNECT_TIMEOUT", "1s")
    out, cache = tmp_path / "report.html", tmp_path / "tables"
    result = run("report", *TINY, "--scheduler", "tcp://127.0.0.1:1", "--out", str(out), "--cache-dir", str(cache))
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("charge-spark: error: cannot reach the Dask scheduler at"
                                                   " tcp://127.0.0.1:1"), lines
    assert sorted(tmp_path.iterdir()) == []  # no report, no partial report, no cache


def test_workers_are_for_the_local_solves_only():
    result = run("report", *TINY, "--scheduler", "tcp://127.0.0.1:1", "--workers", "2")
    assert result.exit_code == 2 and "--workers" in result.stderr and len(result.stderr.strip().splitlines()) == 1


class FakeClient:
    """What `cluster_slots` asks of a client: its workers as the scheduler tells them."""

    def __init__(self, workers: dict[str, dict]) -> None:
        self.workers = workers
        self.scheduler = SimpleNamespace(address="tcp://10.0.0.5:8786")

    def wait_for_workers(self, n: int, timeout=None) -> None:
        if len(self.workers) < n:
            raise TimeoutError(f"only {len(self.workers)} workers")

    def scheduler_info(self, n_workers: int = 5) -> dict:
        return {"workers": self.workers}


def test_a_cluster_whose_workers_police_memory_is_refused_and_one_without_is_counted():
    from solver.core.jobs import SchedulerError
    from solver.report.solves import cluster_slots

    unlimited = {"tcp://a:1": {"name": "a", "nthreads": 1, "memory_limit": 0},
                 "tcp://b:1": {"name": "b", "nthreads": 2, "memory_limit": None}}
    assert cluster_slots(FakeClient(unlimited)) == 3
    limited = {**unlimited, "tcp://c:1": {"name": "c", "nthreads": 1, "memory_limit": 8 * 10**9}}
    with pytest.raises(SchedulerError, match=r"1 of 3 Dask workers .* \(worker c: 8.0 GB\).*--memory-limit 0"):
        cluster_slots(FakeClient(limited))
    with pytest.raises(SchedulerError, match="has no workers"):
        cluster_slots(FakeClient({}))
