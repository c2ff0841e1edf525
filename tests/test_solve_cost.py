"""The solve-cost figure and the phase clock it reads."""

from __future__ import annotations

import time

import numpy as np

from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.core import phase_clock
from solver.solve_cost import SolveCost, measure_solve_cost


def _busy(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_phase_clock_charges_nested_time_to_the_inner_phase() -> None:
    phase_clock.taken()
    with phase_clock.phase("outer"):
        _busy(0.05)
        with phase_clock.phase("inner"):
            _busy(0.1)
        _busy(0.05)
    totals = phase_clock.taken()
    assert 0.09 <= totals["inner"] <= 0.2
    assert 0.09 <= totals["outer"] <= 0.2  # its own 0.1 s, not the inner phase's too
    assert phase_clock.taken() == {}  # taken once: the clock starts again from zero
    phase_clock.merge({"outer": 1.0})
    phase_clock.merge({"outer": 0.5, "worker": 2.0})
    assert phase_clock.taken() == {"outer": 1.5, "worker": 2.0}


def test_solve_cost_divides_the_solve_by_one_stage_pass_over_the_states_it_solved() -> None:
    rules = apply_overrides(RuleSet(), ["board=S*M", "health=1", "battery_tiles=2", "disc_tiles=2", "bonus_cards=ray,copy"])
    game = ChargeSparkGame(rules)
    cost = measure_solve_cost(game, game.encode(initial_position(rules)), workers=1)
    assert 0 < cost.solved < cost.states  # seat twins are copied, not solved, and not in the pass
    # The pass is the solve's own (its Bellman residuals, on their own clock); it is timed again after, alone.
    assert cost.pass_cpu == cost.phases[phase_clock.STAGE_PASS] > 0 and cost.solve_cpu > cost.pass_cpu
    assert cost.after_cpu > 0
    assert {"bracket", "certificate", "hurried play: best responses", "storing"} <= set(cost.phases)
    assert np.isclose(sum(cost.phases.values()), cost.solve_cpu, rtol=0.05)  # "other" holds what no phase claims
    line = cost.line()
    assert line.startswith(f"solve cost: {cost.passes:.1f} stage passes a state (phase shares: ")


def test_solve_cost_line_lists_the_phases_largest_first() -> None:
    phases = {"a": 2.0, "b": 6.5, phase_clock.STAGE_PASS: 0.5, "other": 1.0}
    cost = SolveCost(states=10, solved=6, solve_cpu=10.0, phases=phases)
    assert cost.line() == (
        f"solve cost: 20.0 stage passes a state (phase shares: b 65%, a 20%, other 10%, {phase_clock.STAGE_PASS} 5%)"
    )
