"""Rule sweeps: grids, rows as they arrive, a real Dask scheduler, a killed worker, Ctrl-C."""

from __future__ import annotations

import csv
import io
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from cluster import SRC, dask_cluster
from rules.charge_spark.cards import Card
from rules.charge_spark.config import RulesError, RuleSet, apply_overrides
from solver import sweep as sweep_module
from solver.cli import main
from solver.core import jobs as jobs_module
from solver.sweep import (
    CsvRows,
    GridAxis,
    SweepRow,
    grid_points,
    outcome_labels,
    parse_grid,
    run_sweep,
    split_values,
    state_limit,
)
from solver.sweep_page import sweep_page

BASE = ["--set", "health=1", "--set", "bonus_cards="]
# 12 rule sets of about a second each: a small board, one health, no bonus cards.
GRID = ["--grid", "cost.lightning.battery=2,3,4", "--grid", "cost.counter.disc=1,3", "--grid", "board=SM,S.M"]
TIMING_COLUMNS = {"solve_seconds", "seconds", "reused"}


def small_rule_sets() -> list[RuleSet]:
    base = apply_overrides(RuleSet(), ["health=1", "bonus_cards="])
    axes = [parse_grid(GRID[i]) for i in range(1, len(GRID), 2)]
    return [point.rules for point in grid_points(base, axes)]


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return sorted(csv.DictReader(f), key=lambda row: int(row["point"]))


def results_only(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{k: v for k, v in row.items() if k not in TIMING_COLUMNS} for row in rows]


# ---------------------------------------------------------------- a real cluster


@pytest.mark.slow  # 26 s; the default run sends a report's further solves through a real cluster (test_report_cluster)
def test_a_sweep_through_a_scheduler_gives_the_rows_of_a_local_sweep(tmp_path):
    out_local, out_remote, page = tmp_path / "local.csv", tmp_path / "remote.csv", tmp_path / "sweep.html"
    local = run("sweep", *BASE, *GRID, "--workers", "2", "--cache-dir", str(tmp_path / "a"),
                "--out", str(out_local), "--html", str(page))
    assert local.exit_code == 0, local.output
    with dask_cluster(tmp_path) as (address, _):
        remote = run("sweep", *BASE, *GRID, "--scheduler", address, "--cache-dir", str(tmp_path / "b"),
                     "--out", str(out_remote))
    assert remote.exit_code == 0, remote.output
    rows = csv_rows(out_remote)
    assert len(rows) == 12 and results_only(rows) == results_only(csv_rows(out_local))
    assert {row["reused"] for row in rows} == {"no"}  # solved there, not read from the local run's cache
    for row in rows:
        assert float(row["value"]) == pytest.approx(0.5, abs=1e-9)  # both seats play the same rules
        assert row["error"] == ""
        outcomes = [float(row[label]) for label in outcome_labels()]
        assert sum(outcomes) == pytest.approx(1.0, abs=1e-9)
        assert float(row["expected_length"]) >= 1
    assert len({row["fingerprint"] for row in rows}) == 12
    html = page.read_text()
    assert html.count("<svg") == 3 * 2  # value and length against each of the three keys
    assert "http" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_a_worker_killed_mid_sweep_loses_no_row(tmp_path):
    rule_sets = small_rule_sets()
    from distributed import Client

    with dask_cluster(tmp_path) as (address, workers), Client(address) as observer:
        killed: list[str] = []

        def kill_a_busy_worker(row: SweepRow) -> None:
            if killed:
                return
            info = observer.scheduler_info(n_workers=-1)["workers"]
            busy = [addr for addr, keys in observer.processing().items() if keys]
            assert busy, "no worker holds a task to lose"
            name = info[busy[0]]["name"]
            workers[name].kill()
            workers[name].wait(timeout=10)
            killed.append(name)

        rows = run_sweep(rule_sets, scheduler=address, cache_dir=tmp_path / "tables", on_row=kill_a_busy_worker)
        assert killed and len(observer.scheduler_info(n_workers=-1)["workers"]) == 1
    assert [row.index for row in rows] == list(range(12))
    assert all(row.ok and row.value == pytest.approx(0.5, abs=1e-9) for row in rows)


def test_an_interrupted_sweep_keeps_its_rows_and_stops_its_workers(tmp_path):
    out = tmp_path / "rows.csv"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "solver.cli", "sweep", *BASE, *GRID, "--workers", "1",
         "--cache-dir", str(tmp_path / "tables"), "--out", str(out)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 240
    while not (out.exists() and len(out.read_text().splitlines()) >= 2):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() else "slow"
        time.sleep(0.2)
    children = psutil.Process(proc.pid).children(recursive=True)
    assert children  # the local cluster's worker
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == f"charge-spark: interrupted; the rows finished so far are in {out}"
    rows = csv_rows(out)
    assert 1 <= len(rows) < 12
    assert all(row["error"] == "" and float(row["value"]) == pytest.approx(0.5, abs=1e-9) for row in rows)
    _, alive = psutil.wait_procs(children, timeout=10)
    assert not alive


def test_a_rule_set_too_large_to_solve_gets_its_row_and_the_sweep_fails(tmp_path):
    out = tmp_path / "rows.csv"
    result = run("sweep", *BASE, "--grid", "board=SM,S.M", "--max-states", "10000", "--workers", "1",
                 "--out", str(out))
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "charge-spark: error: 1 of 2 rule sets could not be solved (see the error column)"
    )
    small, large = csv_rows(out)
    assert small["error"] == "" and float(small["value"]) == pytest.approx(0.5, abs=1e-9)
    assert "10,000" in large["error"] or "10000" in large["error"]
    assert large["value"] == ""


# ------------------------------------------------------------ before any solve


BAD_GRIDS = {
    "no '='": (["--grid", "health"], "--grid health"),
    "empty key": (["--grid", "=1,2"], "empty key"),
    "unknown key": (["--grid", "helth=1,2"], "helth"),
    "impossible value": (["--grid", "board=SM,S*X"], "--grid board=S*X"),
    "wrong type": (["--grid", "health=1,many"], "--grid health=many"),
    "value twice": (["--grid", "health=1,1"], "given twice"),
    "key twice": (["--grid", "health=1,2", "--grid", "health=3"], "more than one --grid"),
    "with --set": (["--set", "cost.charge.battery=1", "--grid", "cost.move.battery=0,1"], "at least two"),
    "no grid": ([], "--grid"),
}


@pytest.mark.parametrize("args, names", list(BAD_GRIDS.values()), ids=list(BAD_GRIDS))
def test_a_bad_grid_is_one_line_and_exit_two_before_any_worker_starts(args, names, monkeypatch):
    def no_cluster(*_args, **_kwargs):
        raise AssertionError("a cluster was started for a bad grid")

    monkeypatch.setattr(jobs_module, "dask_client", no_cluster)
    result = run("sweep", *args)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("charge-spark: error:") and names in lines[0]


def test_an_unreachable_scheduler_is_one_line(monkeypatch):
    monkeypatch.setattr(jobs_module, "CONNECT_TIMEOUT", "1s")
    result = run("sweep", *BASE, "--grid", "board=SM", "--scheduler", "tcp://127.0.0.1:1")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:1" in lines[0]


def test_grid_values_split_outside_brackets_and_quotes():
    assert split_values('[],["ray","trap"],["copy"]') == ["[]", '["ray","trap"]', '["copy"]']
    assert split_values("'a,b',c") == ["'a,b'", "c"]
    assert split_values("") == [""]


def test_grid_points_are_the_product_in_axis_order_with_the_grid_winning_over_set():
    axes = [parse_grid("board=SM,S.M"), parse_grid("cost.lightning.battery=2,3")]
    points = grid_points(RuleSet(), axes, ["health=1", "cost.lightning.battery=4"])
    assert [p.settings for p in points] == [
        (("board", "SM"), ("cost.lightning.battery", "2")), (("board", "SM"), ("cost.lightning.battery", "3")),
        (("board", "S.M"), ("cost.lightning.battery", "2")), (("board", "S.M"), ("cost.lightning.battery", "3")),
    ]
    assert [p.rules.board for p in points] == ["SM", "SM", "S.M", "S.M"]
    assert [p.rules.cost(Card.LIGHTNING) for p in points] == [(2, 0), (3, 0), (2, 0), (3, 0)]  # not --set's 4
    assert all(p.rules.health == 1 for p in points)
    bonus = grid_points(RuleSet(), [parse_grid('bonus_cards=,["ray","trap"]')])
    assert [len(p.rules.bonus_cards) for p in bonus] == [0, 2]


def test_a_grid_too_large_is_refused():
    with pytest.raises(RulesError, match="at most"):
        grid_points(RuleSet(), [GridAxis(f"k{i}", tuple("abcdefghij")) for i in range(5)])


def _row(index: int, value: float, error: str | None = None) -> SweepRow:
    outcomes = {} if error else {"P1 wins by knock-out": 0.5, "P2 wins by knock-out": 0.5, "unending": 0.0}
    return SweepRow(index, RuleSet(), "abc", value, outcomes, 3.0, 10, 1.0, 1.0, False, error)


def test_csv_rows_have_the_header_at_once_and_each_row_as_written():
    stream = io.StringIO()
    table = CsvRows(stream, ["board"])
    assert stream.getvalue().startswith("point,board,fingerprint,value,")
    table.write(_row(1, 0.5), [("board", "SM")])
    table.write(_row(0, math.nan, "too large"), [("board", "S.M")])
    rows = list(csv.DictReader(io.StringIO(stream.getvalue())))
    assert [r["point"] for r in rows] == ["2", "1"]
    assert rows[0]["board"] == "SM" and rows[0]["value"] == "0.5" and rows[0]["P1 wins by knock-out"] == "0.5"
    assert rows[1]["value"] == "" and rows[1]["error"] == "too large"


def test_the_page_escapes_every_user_string():
    axes = [GridAxis("name", ("<b>x</b>", "y&z"))]
    points = grid_points(RuleSet(), axes)
    page = sweep_page("t<i>", axes, points, [_row(0, 0.5), _row(1, math.nan, "<script>")], note="<u>")
    for raw in ("<b>", "<script>", "<i>", "<u>"):
        assert raw not in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "y&amp;z" in page and "&lt;script&gt;" in page


def test_a_workers_memory_limit_caps_the_states_when_it_is_the_tightest(monkeypatch):
    from solver.core import resources

    gigabyte = 10**9
    monkeypatch.setattr(resources, "states_that_fit", lambda per_state=None: 10**7)
    monkeypatch.setattr(sweep_module, "worker_memory_limit", lambda: None)
    assert state_limit(None) == (None, None)  # not on a worker: the solve checks memory itself
    monkeypatch.setattr(sweep_module, "worker_memory_limit", lambda: gigabyte)
    cap = int(0.9 * gigabyte / resources.GRAPH_BYTES_PER_STATE)
    limit, refusal = state_limit(None)
    assert limit == cap and "1.0 GB memory limit" in refusal and f"{cap:,}" in refusal
    assert state_limit(1000) == (1000, None)  # the user's tighter limit
    monkeypatch.setattr(resources, "states_that_fit", lambda per_state=None: 1000)
    assert state_limit(None) == (None, None)  # less memory free than the worker may use


@pytest.mark.parametrize("quiet", [False, True])
def test_the_resource_trackers_list_of_what_it_cleans_up_is_kept_off_stderr(quiet):
    """What an interrupted sweep's workers leave behind, the resource tracker cleans up; the
    CLI keeps its list off stderr, where the command's own last line must stay last."""
    script = ("import solver.cli; solver.cli.quiet_resource_tracker()\n" if quiet else "") + (
        "from multiprocessing import shared_memory\n"
        "left = shared_memory.SharedMemory(create=True, size=64)\n"  # never unlinked: the tracker's to clean up
        "left.close()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop("PYTHONWARNINGS", None)
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0
    assert ("leaked shared_memory" in run.stderr) is not quiet, run.stderr


def test_csv_floats_are_written_at_full_precision():
    """Each float reads back to the very same number: not rounded to 12 significant digits."""
    stream = io.StringIO()
    table = CsvRows(stream, ["board"])
    value, length, epsilon = 1 / 3 + 1e-15, 0.1 + 0.2, 2.503108831319878e-12
    outcomes = {"P1 wins by knock-out": 1 / 7, "P2 wins by knock-out": 1 - 1 / 7 - 1e-13, "unending": 1e-13}
    table.write(SweepRow(0, RuleSet(), "abc", value, outcomes, length, 10, 1.0, 1.0, False, None,
                         max_exploitability=epsilon), [("board", "SM")])
    row = next(csv.DictReader(io.StringIO(stream.getvalue())))
    assert float(row["value"]) == value and row["value"] == repr(value) and len(row["value"]) > 14
    assert float(row["expected_length"]) == length
    assert float(row["max_exploitability"]) == epsilon
    for label, share in outcomes.items():
        assert float(row[label]) == share
