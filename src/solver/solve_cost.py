"""The solve-cost figure: a solve's CPU time in passes of the stage kernel over its own states.

A wall time says as much about the machine's load as about the solver. This
figure does not: it divides a solve's CPU time by that of one pass of the
stage kernel (each state's matrix built from its successors' values, the
pure-saddle check, the simplex, the value and both strategies) over the
states it solved. Seat twins, which the solve copies rather than solves, are
left out of the pass.

The pass is the one the solve makes itself: each layer's Bellman residual,
on its own clock (`phase_clock.STAGE_PASS`), in the same processes and
spread over the same minutes as the rest of the solve, so a machine that
slows down or speeds up during the run moves both alike. Timed after the
solve instead, as the figure was until 2026-12-06, it measured the machine
at another moment: the ratio moved by a quarter between runs of one commit.
That pass is still timed after the solve, for comparison (`after_cpu`).
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .core import phase_clock
from .core.layered import enumerate_by_rank, layer_graph, with_exit_payoffs
from .core.shapley import bellman_residual
from .core.solve import solve_from

PASSES_TIMED = 3  # per rank, in the comparison pass after the solve: the fastest counts


@dataclass(frozen=True)
class SolveCost:
    """One solve's CPU seconds (all processes), by phase, and one stage pass's over the states it solved."""

    states: int  # every state of the table
    solved: int  # of them, those solved (not copied from a seat twin)
    solve_cpu: float
    phases: dict[str, float]  # CPU seconds by phase (`phase_clock`); what no phase claims is "other"
    hurried_rounds: dict[str, int] = field(default_factory=dict)  # the solve's `SolveResult.hurried_rounds`
    after_cpu: float = float("nan")  # the same pass timed again after the solve (the fastest of a few per rank)

    @property
    def pass_cpu(self) -> float:
        """The stage pass over the solved states that the solve made (its Bellman residuals)."""
        return self.phases.get(phase_clock.STAGE_PASS, 0.0)

    @property
    def passes(self) -> float:
        return self.solve_cpu / self.pass_cpu

    def line(self) -> str:
        """The figure's line: `solve cost: N stage passes a state (phase shares: ...)`."""
        shares = ", ".join(f"{name} {100 * seconds / self.solve_cpu:.0f}%"
                           for name, seconds in sorted(self.phases.items(), key=lambda kv: -kv[1]))
        return f"solve cost: {self.passes:.1f} stage passes a state (phase shares: {shares})"


def cpu_with_children() -> float:
    """CPU seconds of this process and of its children that have ended (a solve's workers)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + usage.ru_utime + usage.ru_stime


def measure_solve_cost(game: Any, root: int, workers: int) -> SolveCost:
    """Solve `game` from `root` on `workers` processes, with the stage pass it
    makes over the states it solved; then time that pass again, alone."""
    phase_clock.taken()  # start the clock at zero
    cpu = cpu_with_children()
    result = solve_from(game, [root], show_progress=False, workers=workers)
    solve_cpu = cpu_with_children() - cpu
    phases = phase_clock.taken()
    phases["other"] = max(0.0, solve_cpu - sum(phases.values()))
    states = np.asarray(result.states)
    values = np.asarray(result.values, np.float64)
    after_cpu, solved = 0.0, 0
    layers = enumerate_by_rank(game, np.array([root], np.int64))
    for layer in layers:
        if layer.twin_of is not None or layer.given:
            continue
        lg = layer_graph(game, layer.states, states, labelled=False)
        g = with_exit_payoffs(lg, values[lg.exits])
        own = values[np.searchsorted(states, layer.states)]
        # The Bellman residual is one pass of the stage kernel over every state (matrix from the
        # successors' values, saddle check, simplex, value and strategies). Once untimed: the
        # kernel compiled or loaded, the layer's arrays paged in, as they are in the solve.
        bellman_residual(g, own)
        # The fastest of a few timed passes: a pass of a small rank lasts milliseconds, which a busy machine's
        # interruptions would otherwise inflate, and the solve's own passes run on warm arrays.
        timed = []
        for _ in range(PASSES_TIMED):
            clock = time.process_time()
            bellman_residual(g, own)
            timed.append(time.process_time() - clock)
        after_cpu += min(timed)
        solved += layer.states.size
    return SolveCost(int(states.size), solved, solve_cpu, phases, dict(result.hurried_rounds), after_cpu)
