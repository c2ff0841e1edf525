"""The benchmark's extrapolation rule counts what the baseline really does."""

from __future__ import annotations

import time

import numpy as np

from reference import reference_values
from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.bench import bench_buzzer_invariance, bench_full_game, bench_stage_kernel, jacobi_sweeps_needed
from solver.core.graph import build_graph, reachable_states
from solver.core.solve import solve_from


def test_compiled_jacobi_needs_as_many_sweeps_as_the_plain_baseline():
    rules = apply_overrides(
        RuleSet(), ["board=SM", "health=1", "bonus_cards=", "battery_tiles=1", "disc_tiles=1", "start_battery=0"]
    )
    game = ChargeSparkGame(rules)
    graph = build_graph(game, reachable_states(game, np.array([game.encode(initial_position(rules))])))
    _, plain_sweeps = reference_values(graph, tol=1e-9)
    sweeps, converged = jacobi_sweeps_needed(graph, 1e-9, cap=10_000)
    assert converged and sweeps == plain_sweeps


def test_stage_kernel_bench_checks_values_against_scipy():
    lines = bench_stage_kernel(sizes=(3, 6), lp_games=5, kernel_games=50)
    assert len(lines) == 5
    assert not any("DISAGREE" in line for line in lines)
    assert "target >= 300x" in lines[3]


def test_full_game_bench_reports_time_memory_and_the_certificate():
    rules = apply_overrides(RuleSet(), ["board=SM", "health=1", "bonus_cards="])
    game = ChargeSparkGame(rules)
    lines, result = bench_full_game(game, game.encode(initial_position(rules)))
    text = "\n".join(lines)
    assert "states solved in" in text and "peak memory" in text and "first bar 10 min and 8 GB: met" in text
    assert "value at the start 0.5000000000" in text
    assert result is not None and result.num_states > 0


def test_buzzer_bench_compares_the_lengths_at_two_buzzers():
    rules = apply_overrides(RuleSet(), ["board=SM", "health=1", "bonus_cards="])
    game = ChargeSparkGame(rules)
    root = game.encode(initial_position(rules))
    result = solve_from(game, [root], show_progress=False)
    text = "\n".join(bench_buzzer_invariance(game, root, result, "a tiny board"))
    assert "buzzer 1e-06: mean" in text and "buzzer 1e-05: mean" in text
    assert "(within 1%: met)" in text
    assert "exploitability with endless play scored as a loss" in text


def test_peak_memory_counts_memory_shared_with_a_worker_once():
    import mmap
    import multiprocessing

    from solver.bench import PeakMemory

    size = 300 * 2**20
    shared = np.frombuffer(mmap.mmap(-1, size), np.uint8)
    with PeakMemory(interval=0.05) as alone:
        shared[:] = 1
        time.sleep(0.3)
    ready = multiprocessing.get_context("fork").Event()
    done = multiprocessing.get_context("fork").Event()

    def touch_and_wait():
        assert int(shared[::4096].sum()) == size // 4096  # reads every page: now resident in both processes
        ready.set()
        done.wait(10)

    child = multiprocessing.get_context("fork").Process(target=touch_and_wait)
    with PeakMemory(interval=0.05) as both:
        child.start()
        ready.wait(10)
        time.sleep(0.3)
        done.set()
        child.join()
    assert alone.peak >= size
    assert both.peak < alone.peak + 0.5 * size  # counted once, not once per process


def test_report_bench_lists_every_part_and_reads_them_all_from_the_cache_the_second_time():
    from solver.bench import bench_report_parts

    lines = bench_report_parts(
        ["board=SM", "health=1", "bonus_cards=", "battery_tiles=1", "disc_tiles=1", "start_battery=0"])
    text = "\n".join(lines)
    assert "the rules' table" in text and "further solves" in text and "P1 may not play" in text
    assert lines[-1].rstrip().endswith("0 parts computed"), lines[-1]


def test_phase_tree_bench_agrees_with_openspiel():
    import pytest

    pytest.importorskip("pyspiel", reason="the crosscheck extra (open-spiel) is not installed")
    pytest.importorskip("cvxopt", reason="GLPK for OpenSpiel's LP comes with cvxopt (crosscheck extra)")
    from solver.bench import bench_phase_trees

    lines = bench_phase_trees(["board=S*M", "health=1", "battery_tiles=1", "disc_tiles=1", "start_battery=1",
                               "bonus_cards=ray,trap"], horizons=(1, 2))
    assert len(lines) == 3 and "phase starts" in lines[0]
    for line in lines[1:]:
        assert "OpenSpiel" in line and "ours" in line
        assert float(line.rsplit("|dv| ", 1)[1]) <= 1e-9
