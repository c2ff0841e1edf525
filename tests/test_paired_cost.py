"""The solve-cost figure of two checkouts side by side: each run with its own checkout's code, on its own core."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from solver import bench, paired_cost
from solver.paired_cost import Pair, PairingError, Run, pair_lines, paired_solve_cost

needs_two_cores = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a paired measurement needs two cores")

# Stands in for the solve: its figure says which checkout's code ran (`PASSES`, absent from the real
# module) and on which core, so the pairing's plumbing is checked without solving anything.
FAKE_CHILD = """
import os
import solver.solve_cost as cost
passes = getattr(cost, "PASSES", 80.0) + sorted(os.sched_getaffinity(0))[0]
print(f"cpu {1.5 if hasattr(cost, 'PASSES') else 1.2}")
print(f"solve cost: {passes} stage passes a state (phase shares: bracket 100%)")
"""


def baseline_checkout(root: Path, passes: float) -> Path:
    """A stand-in checkout whose `solver.solve_cost` says `PASSES = passes`."""
    (root / "src" / "solver").mkdir(parents=True)
    (root / "src" / "rules").mkdir()
    (root / "src" / "solver" / "__init__.py").write_text("")
    (root / "src" / "solver" / "solve_cost.py").write_text(f"PASSES = {passes}\n")
    return root


@needs_two_cores
def test_each_run_uses_its_own_checkouts_code_on_its_own_core_and_the_cores_swap(tmp_path, monkeypatch):
    monkeypatch.setattr(paired_cost, "CHILD", FAKE_CHILD)
    pairs = paired_solve_cost(baseline_checkout(tmp_path, 40.0), [], rounds=2)
    assert len(pairs) == 2
    for pair in pairs:
        assert pair.baseline.core != pair.changed.core
        assert pair.baseline.passes == 40.0 + pair.baseline.core  # the baseline's module, pinned where said
        assert pair.changed.passes == 80.0 + pair.changed.core  # this checkout's module
        assert (pair.baseline.cpu, pair.changed.cpu) == (1.5, 1.2)
        assert pair.ratio == pytest.approx(0.8)  # this checkout's CPU over the baseline's
    assert pairs[0].baseline.core == pairs[1].changed.core  # swapped in the second pair


def test_the_lines_give_each_pairs_ratio_and_their_mean():
    pairs = [Pair(Run(80.0, 50.0, 0), Run(60.0, 40.0, 1)), Pair(Run(82.0, 60.0, 1), Run(61.5, 42.0, 0))]
    lines = pair_lines(pairs, "../base")
    assert lines[0] == ("pair 1: baseline 80.0 passes a state (50.0 CPU-s, core 0), this checkout 60.0"
                        " (40.0 CPU-s, core 1): CPU ratio 0.800")
    assert lines[-1] == ("solve cost against ../base: 0.750 x the baseline's CPU seconds"
                         " (2 pairs, ratios within 0.100 of each other)")


def test_a_directory_that_is_not_a_checkout_is_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(PairingError, match="not a checkout of this project"):
        paired_solve_cost(tmp_path, [])
    assert bench.main(["--against", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(tmp_path) in err[0] and "Traceback" not in err[0]


@needs_two_cores
def test_a_first_pair_warms_both_checkouts_and_is_not_counted(tmp_path, monkeypatch):
    monkeypatch.setattr(paired_cost, "CHILD", FAKE_CHILD)
    started = []
    start = paired_cost.measure_on_core
    monkeypatch.setattr(paired_cost, "measure_on_core", lambda src, core, rules: started.append(src) or start(src, core, rules))
    pairs = paired_solve_cost(baseline_checkout(tmp_path, 40.0), [], rounds=2)
    assert len(pairs) == 2 and len(started) == 6  # three pairs run, two counted


@needs_two_cores
def test_a_run_that_fails_names_its_checkout_and_its_last_error_line(tmp_path, monkeypatch):
    monkeypatch.setattr(paired_cost, "CHILD", "raise SystemExit('no such rule set')")
    with pytest.raises(PairingError, match="ended with code 1: no such rule set"):
        paired_solve_cost(baseline_checkout(tmp_path, 40.0), [], rounds=1)


@needs_two_cores
def test_when_the_baseline_fails_the_other_run_is_stopped_not_left_going(tmp_path, monkeypatch):
    # The baseline (its module says PASSES) fails at once; this checkout's run would sleep a minute.
    monkeypatch.setattr(paired_cost, "CHILD", (
        "import time, solver.solve_cost as cost\n"
        "if hasattr(cost, 'PASSES'):\n    raise SystemExit('baseline broke')\n"
        "time.sleep(60)\n"
    ))
    started = []
    start = paired_cost.measure_on_core
    monkeypatch.setattr(paired_cost, "measure_on_core", lambda *a: started.append(start(*a)) or started[-1])
    with pytest.raises(PairingError, match="baseline broke"):
        paired_solve_cost(baseline_checkout(tmp_path, 40.0), [], rounds=1)
    assert [process.poll() is not None for process in started] == [True, True]


@pytest.mark.slow
@needs_two_cores
def test_this_checkout_against_itself_solves_the_board_in_both_runs():
    root = Path(paired_cost.__file__).resolve().parents[2]
    (pair,) = paired_solve_cost(root, ["board=SM", "health=1", "bonus_cards="], rounds=1)
    assert pair.baseline.passes > 1 and pair.changed.passes > 1
    assert 0.5 < pair.ratio < 2.0  # the same code on the same board at the same time
