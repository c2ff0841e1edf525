"""The wavefront simulation (solver.core.wavefront) on small hand-made layer lists, and
the scheduler it replays (`layered._run_layers`) starting layers in the order it predicts."""

from __future__ import annotations

import math
import multiprocessing
import time
from concurrent import futures

import numpy as np
import pytest

from solver.core import layered
from solver.core.layered import Layer
from solver.core.wavefront import LayerSpec, Wavefront, critical_path, makespan, simulate, spec_of

WORKERS = (1, 2, 3, 4, 8, 16, 64)


def mixed() -> tuple[list[LayerSpec], list[float]]:
    """Three ranks, each with a solved layer, a twin and a layer of its own; costs all different."""
    layers = [
        LayerSpec(1, frozenset({2, 4})), LayerSpec(1, frozenset({4})), LayerSpec(1, frozenset({4}), twin_of=1),
        LayerSpec(2, frozenset({4})), LayerSpec(2, frozenset()), LayerSpec(2, frozenset(), twin_of=4),
        LayerSpec(4, frozenset()), LayerSpec(4, frozenset()), LayerSpec(4, frozenset(), twin_of=7),
        LayerSpec(-1, given=True),
    ]
    cost = [3.0, 5.0, 0.5, 7.0, 2.0, 0.25, 4.0, 6.0, 1.0, 100.0]  # the given layer's cost never counts
    return layers, cost


def chain(n: int) -> tuple[list[LayerSpec], list[float]]:
    """Ranks 0 .. n - 1, each layer exiting to the rank above it."""
    return [LayerSpec(r, frozenset({r + 1}) if r + 1 < n else frozenset()) for r in range(n)], [1.0 + r for r in range(n)]


def test_one_worker_takes_the_sum_of_the_costs():
    layers, cost = mixed()
    assert makespan(layers, cost, 1) == pytest.approx(sum(cost[:-1]))


def test_unlimited_workers_take_the_critical_path():
    layers, cost = mixed()
    path = critical_path(layers, cost)
    assert makespan(layers, cost, None) == pytest.approx(path.seconds)
    assert makespan(layers, cost, len(layers)) == pytest.approx(path.seconds)
    # Rank 4 ends with the twin (1) of its slowest layer (6); then rank 2's layer that exits
    # to it (7), then rank 1's that waits for rank 2 (3): a twin lengthens its rank's wait.
    assert path.layers == (7, 8, 3, 0) and path.seconds == pytest.approx(17.0)


def test_a_chain_of_dependent_layers_does_not_speed_up():
    layers, cost = chain(6)
    for workers in WORKERS:
        assert makespan(layers, cost, workers) == pytest.approx(sum(cost))
    assert critical_path(layers, cost).layers == (5, 4, 3, 2, 1, 0)


@pytest.mark.parametrize("count", [1, 5, 8])
def test_independent_equal_layers_speed_up_by_the_workers_or_the_count(count):
    layers, cost = [LayerSpec(3) for _ in range(count)], [2.0] * count
    spans = [makespan(layers, cost, workers) for workers in WORKERS]
    for workers, span in zip(WORKERS, spans):
        assert span == pytest.approx(2.0 * math.ceil(count / workers))
        if count % min(workers, count) == 0:
            assert 2.0 * count / span == pytest.approx(min(workers, count))
    assert spans == sorted(spans, reverse=True)  # ceil(count / w) never grows with w


def test_a_twin_layer_waits_for_its_source():
    layers = [LayerSpec(1), LayerSpec(1, twin_of=0), LayerSpec(1)]
    cost = [5.0, 1.0, 1.0]
    started = dict(simulate(layers, cost, 3).starts)
    assert started == {0: 0.0, 2: 0.0, 1: 5.0}
    assert makespan(layers, cost, 3) == pytest.approx(6.0)


def test_more_workers_never_exceed_one_worker_and_keep_the_list_scheduling_bounds():
    """Monotone in the workers is not guaranteed for list scheduling (Graham's
    anomalies); these are: one worker is never beaten from below, no schedule
    beats the critical path or the work spread evenly, and a greedy one is
    within Graham's bound of both."""
    layers, cost = mixed()
    total = sum(cost[:-1])
    path = critical_path(layers, cost).seconds
    for workers in WORKERS:
        span = makespan(layers, cost, workers)
        assert max(path, total / workers) - 1e-9 <= span <= total + 1e-9
        assert span <= total / workers + (1 - 1 / workers) * path + 1e-9


def test_finished_and_given_layers_are_not_waited_for():
    layers, cost = mixed()
    # Rank 4 restored: rank 2's layers start at once.
    assert dict(simulate(layers, cost, 8, finished={6, 7, 8}).starts)[3] == 0.0
    assert critical_path(layers, cost, finished={6, 7, 8}).seconds == pytest.approx(10.0)


def test_a_rank_never_solved_is_an_error():
    layers = [LayerSpec(1, frozenset({9}))]
    with pytest.raises(ValueError, match="never solved"):
        makespan(layers, [1.0], 2)
    with pytest.raises(ValueError, match="never solved"):
        critical_path(layers, [1.0])


def test_the_solvers_own_layers_are_scheduled():
    states = np.zeros(0, np.int64)
    layers = [Layer(2, states), Layer(1, states, frozenset({2})), Layer(1, states, frozenset({2}), twin_of=1)]
    assert [spec_of(layer) for layer in layers][2] == LayerSpec(1, frozenset({2}), 1)
    assert makespan(layers, [1.0, 2.0, 0.5], 2) == pytest.approx(3.5)
    assert Wavefront(layers).waiting == [0, 1, 2]


# --- the scheduler itself starts layers in the simulated order ------------------------------------

# Rank 1's layer 3 needs nothing and overtakes rank 2's layer 2 on two workers, which waits for rank 3's slow layer 0.
SCHEDULED = [LayerSpec(3), LayerSpec(3), LayerSpec(2, frozenset({3})), LayerSpec(1), LayerSpec(1, twin_of=3)]
SLEEP = [0.3, 0.02, 0.02, 0.02, 0.02]  # seconds; margins of 0.2 s keep the order under load


def _sleep_layer(number: int) -> int:
    time.sleep(SLEEP[number])
    return number


@pytest.mark.parametrize("workers", [1, 2])
def test_run_layers_starts_layers_in_the_simulated_order(monkeypatch, workers):
    started: list[int] = []

    class RecordingPool(futures.ProcessPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):
            started.append(args[0])
            return super().submit(fn, *args, **kwargs)

    def in_process(number: int) -> int:
        started.append(number)
        return number

    fork = multiprocessing.get_context("fork")
    monkeypatch.setattr(layered, "_layer_pool", lambda w: RecordingPool(max_workers=w, mp_context=fork))
    monkeypatch.setattr(layered, "_solve_layer_at", _sleep_layer if workers > 1 else in_process)
    finished = [number for number, _ in layered._run_layers(SCHEDULED, workers)]
    predicted = [i for i, _ in simulate(SCHEDULED, SLEEP, workers).starts]
    assert started == predicted
    assert sorted(finished) == list(range(len(SCHEDULED)))
    assert predicted == ([0, 1, 2, 3, 4] if workers == 1 else [0, 1, 3, 4, 2])


def test_the_cost_model_and_the_scaling_table_on_a_hand_made_rule_set():
    from solver.scaling import CostModel, MeasuredSolve, RankedLayers, scaling_of

    specs = (LayerSpec(2), LayerSpec(2, twin_of=0), LayerSpec(2), LayerSpec(1, frozenset({2})))
    ranked = RankedLayers("hand-made", specs, np.array([100, 100, 50, 50]), 1.0, 1)
    measured = MeasuredSolve(ranked, np.array([2.0, 0.1, 1.0, 1.0]), 4.5)
    model = CostModel.calibrated(measured)
    assert (model.solved, model.copied, model.rest) == pytest.approx((4.0 / 200, 0.1 / 100, 0.4 / 300))
    np.testing.assert_allclose(model.costs(ranked), [2.0, 0.1, 1.0, 1.0])
    table = scaling_of(ranked, model.costs(ranked), "model", 0.4, workers=(1, 2, 4))
    # Layer 0, then its twin, then rank 1's layer: 3.1 s on any number of workers; layer 2 runs beside them.
    assert table.total == pytest.approx(4.1) and table.critical.layers == (0, 1, 3)
    assert [w for w, _ in table.makespans] == [1, 2, 4] and table.speedup(2) == pytest.approx(4.1 / 3.1)
    assert table.bound == pytest.approx(4.1 / 3.1) and table.lines()[-1].endswith(f"(bound {4.1 / 3.1:.2f}x)")
