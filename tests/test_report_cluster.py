"""`report --scheduler`: the further solves on a real Dask cluster give the
numbers of a local run; a cluster the report cannot use stops it in one line
before anything is written."""

from __future__ import annotations

import re
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

# Further solves of a second or two each (5,000 states): restricted games, price points, variants; only the
# sections that need them.
TINY = ["--set", "board=SM", "--set", "health=1", "--set", "bonus_cards="]
SECTIONS = ["--sections", "strength,price,sensitivity"]
TIMINGS = {"seconds", "reused", "warm_started"}


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def further_answers(cache: Path) -> dict[str, dict]:
    """What the report kept of each further solve (restricted game, price point, variant), timings aside."""
    rules = apply_overrides(RuleSet(), [TINY[i + 1] for i in range(0, len(TINY), 2)])
    entries = ResultsCache(cache, fingerprint(rules)).entries
    return {key: {k: v for k, v in entry.items() if k not in TIMINGS} for key, entry in entries.items()
            if key.startswith(("without:", "variant:", "price:"))}


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
    """What `cluster_workers_for` asks of a client: its workers as the scheduler tells them."""

    def __init__(self, workers: dict[str, dict]) -> None:
        self.workers = workers
        self.scheduler = SimpleNamespace(address="tcp://10.0.0.5:8786")

    def wait_for_workers(self, n: int, timeout=None) -> None:
        if len(self.workers) < n:
            raise TimeoutError(f"only {len(self.workers)} workers")

    def scheduler_info(self, n_workers: int = 5) -> dict:
        return {"workers": self.workers}


GB = 10**9


def test_workers_whose_memory_limit_holds_a_solve_on_every_thread_take_it():
    from solver.core.jobs import workers_holding

    workers = {"tcp://a:1": {"name": "a", "nthreads": 1, "memory_limit": 0},  # no limit
               "tcp://b:1": {"name": "b", "nthreads": 2, "memory_limit": 10 * GB},  # 2 x 4 GB under 95% of 10 GB
               "tcp://c:1": {"name": "c", "nthreads": 3, "memory_limit": 10 * GB},  # 3 x 4 GB is not
               "tcp://d:1": {"name": "d", "nthreads": 1, "memory_limit": 4 * GB}}  # 4 GB is over 95% of 4 GB
    assert workers_holding(workers, 4 * GB) == ["tcp://a:1", "tcp://b:1"]
    assert workers_holding(workers, 3 * GB) == ["tcp://a:1", "tcp://b:1", "tcp://c:1", "tcp://d:1"]


def test_workers_too_small_are_left_out_in_one_line_and_a_cluster_with_none_that_holds_a_solve_is_refused():
    from solver.core.jobs import SchedulerError, cluster_threads
    from solver.report.solves import cluster_workers_for

    workers = {"tcp://a:1": {"name": "a", "nthreads": 1, "memory_limit": None},
               "tcp://b:1": {"name": "b", "nthreads": 2, "memory_limit": 10 * GB},
               "tcp://c:1": {"name": "c", "nthreads": 1, "memory_limit": 2 * GB}}
    said: list[str] = []
    fit = cluster_workers_for(FakeClient(workers), 4 * GB, said.append)
    assert list(fit) == ["tcp://a:1", "tcp://b:1"] and cluster_threads(fit) == 3
    assert said == ["1 of 3 Dask workers left out, their memory limit too small for any further solve (the smallest"
                    " needs about 4.0 GB a thread): c (2.0 GB for 1 thread)"]
    said.clear()
    assert list(cluster_workers_for(FakeClient(workers), 1 * GB, said.append)) == list(workers) and said == []
    small = {address: info for address, info in workers.items() if address != "tcp://a:1"}
    with pytest.raises(SchedulerError, match=r"^no Dask worker at tcp://10.0.0.5:8786 can hold a further solve: the"
                       r" smallest needs about 6.0 GB a thread, and the largest memory limit is 10.0 GB for 2 threads; "):
        cluster_workers_for(FakeClient(small), 6 * GB)
    with pytest.raises(SchedulerError, match="has no workers"):
        cluster_workers_for(FakeClient({}), GB)


def worker_tasks(address: str) -> dict[str, int]:
    """Tasks each worker of the cluster at `address` has run, by worker name."""
    from distributed import Client

    def executed(dask_worker) -> int:
        return int(dask_worker.state.executed_count)

    with Client(address, timeout="30s") as client:
        info = client.scheduler_info(n_workers=-1)["workers"]
        return {info[w]["name"]: n for w, n in client.run(executed).items()}


@pytest.mark.slow
def test_a_worker_whose_memory_limit_is_too_small_is_left_out_and_the_others_take_the_solves(tmp_path, monkeypatch):
    """Two workers with Dask's memory limits (as `dask worker` starts by default): a solve's
    need set, for the test, between them; a variant larger than the larger one is left out."""
    from rules.charge_spark.size import estimate_reachable
    from solver.analysis.sensitivity import sensitivity_variants, variant_key
    from solver.report import solves

    rules = apply_overrides(RuleSet(), [TINY[i + 1] for i in range(0, len(TINY), 2)])
    per_state = int(2.5 * GB / estimate_reachable(rules))  # the rules' solve: 2.5 GB
    monkeypatch.setattr(solves, "layered_bytes_per_state", lambda hurried=True: per_state)
    limits = {"w0": ["--memory-limit", "4GB"], "w1": ["--memory-limit", "2GB"]}
    with dask_cluster(tmp_path, each_worker=list(limits.values())) as (address, _):
        result = run("report", *TINY, *SECTIONS, "--scheduler", address, "--out", str(tmp_path / "r.html"),
                     "--cache-dir", str(tmp_path / "cache"))
        assert result.exit_code == 0, result.output
        ran = worker_tasks(address)
    assert re.search(r"1 of 2 Dask workers left out, their memory limit too small for any further solve \(the smallest"
                     r" needs about 2\.[2-5] GB a thread\): w1 \(2\.0 GB for 1 thread\)", result.stderr)
    assert ran["w1"] == 0  # left out
    # The longer board (about 4.7 times the rules' states) is more than w0 holds: left out, with the reason.
    assert re.search(r"<li>board S\.M \(SM\): no Dask worker&#39;s memory limit holds it \(about 1[0-9]\.[0-9] GB a"
                     r" thread\)</li>", (tmp_path / "r.html").read_text())
    solved = {key: entry for key, entry in further_answers(tmp_path / "cache").items() if not entry.get("unplayed")}
    longer = next(v for v in sensitivity_variants(rules)[0] if v.key == "board" and v.step > 0)
    assert len(solved) == ran["w0"] > 10 and variant_key(longer) not in solved
