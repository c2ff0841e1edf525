"""How far a rule set's rank-by-rank solve would scale with workers.

The solve's layers wait on each other by rank (`core.wavefront`), so its
speed-up on W workers is set by the layer list and each layer's cost, not by
the machine the question is asked on: this module gets the costs and replays
the solver's own schedule on 1 to 64 simulated workers, beside the
critical-path bound no number of workers beats. Two sources of costs:

- measured: the rule set solved once, in this process, on one worker, each
  layer's CPU seconds as its phases clocked them (`layered.solve_layers`'
  `layer_cpu`);
- modelled: CPU seconds a solved state and a copied one (a seat twin's)
  times each layer's states, the two rates calibrated on a measured solve of
  another rule set; for rule sets too large to solve here.

Enumeration is not part of the layer schedule (it goes up the ranks, each
frontier expanded in parallel chunks), nor is the solve's setup and final
assembly (in the parent process): their CPU seconds are given beside it,
and an end-to-end figure counts enumeration as split evenly over the
workers (a best case) and the rest as serial.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rules.charge_spark.config import RuleSet
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position

from .core import phase_clock
from .core.layered import Layer, enumerate_by_rank, solve_layers
from .core.wavefront import CriticalPath, LayerSpec, critical_path, makespan, spec_of
from .solve_cost import cpu_with_children

WORKER_COUNTS = (1, 2, 4, 8, 16, 64)


@dataclass(frozen=True)
class RankedLayers:
    """A rule set's layers without their states (what scheduling reads, and each one's size), and what enumerating took."""

    label: str
    specs: tuple[LayerSpec, ...]
    sizes: np.ndarray  # states per layer
    enumeration_cpu: float  # seconds, all processes
    progress_of: int  # a rank's progress (Health lost and moves made, both players) is rank // progress_of

    @property
    def twin(self) -> np.ndarray:
        return np.array([spec.twin_of is not None for spec in self.specs], bool)

    @property
    def given(self) -> np.ndarray:
        return np.array([spec.given for spec in self.specs], bool)

    @property
    def solved_states(self) -> int:
        return int(self.sizes[~self.twin & ~self.given].sum())

    @property
    def copied_states(self) -> int:
        return int(self.sizes[self.twin].sum())

    @property
    def ranks(self) -> int:
        return len({spec.rank for spec in self.specs if not spec.given})


def _game_of(rules: RuleSet) -> tuple[ChargeSparkGame, np.ndarray]:
    game = ChargeSparkGame(rules)
    return game, np.array([game.encode(initial_position(rules))], np.int64)


def _ranked(label: str, game: Any, layers: Sequence[Layer], enumeration_cpu: float) -> RankedLayers:
    bonus = dict(game.codec.radices)["bonus"]
    return RankedLayers(label, tuple(spec_of(layer) for layer in layers),
                        np.array([layer.states.size for layer in layers], np.int64), enumeration_cpu, bonus * bonus)


def ranked_layers(rules: RuleSet, label: str, workers: int = 1) -> RankedLayers:
    """`rules`' layers from the start, enumerated on `workers` processes; their states are let go."""
    game, roots = _game_of(rules)
    cpu = cpu_with_children()
    layers = enumerate_by_rank(game, roots, workers=workers)
    return _ranked(label, game, layers, cpu_with_children() - cpu)


@dataclass(frozen=True)
class MeasuredSolve:
    """One solve on one worker: each layer's CPU seconds, and the rest of the solve's."""

    layers: RankedLayers
    layer_cpu: np.ndarray  # seconds per layer (0 for a given one), as its phases clocked them
    solve_cpu: float  # `solve_layers` whole: the layers, setup, bookkeeping and final assembly
    phases: dict[str, float] = field(default_factory=dict)  # the whole solve's, enumeration included

    @property
    def rest_cpu(self) -> float:
        """CPU seconds of the solve outside its layers (setup, bookkeeping, assembly): serial, in the parent."""
        return max(0.0, self.solve_cpu - float(self.layer_cpu.sum()))

    @property
    def total_cpu(self) -> float:
        return self.layers.enumeration_cpu + self.solve_cpu


def measure_layers(rules: RuleSet, label: str) -> MeasuredSolve:
    """Enumerate and solve `rules` in this process on one worker (as `solve_from`
    does with `workers=1`), keeping each layer's CPU seconds. Compile the
    kernels first (a tiny solve) or the first layers pay for it."""
    game, roots = _game_of(rules)
    phase_clock.taken()  # the clock from zero
    with phase_clock.phase("enumeration"):
        layers = enumerate_by_rank(game, roots, workers=1)
    enumeration = phase_clock.taken()
    costs: dict[int, float] = {}
    cpu = cpu_with_children()
    solve_layers(game, layers, workers=1, layer_cpu=costs)
    solve_cpu = cpu_with_children() - cpu
    phases = phase_clock.taken()
    phase_clock.merge(enumeration)
    phase_clock.merge(phases)  # back on the clock, for whoever reads it after
    ranked = _ranked(label, game, layers, enumeration.get("enumeration", 0.0))
    per_layer = np.array([costs.get(i, 0.0) for i in range(len(layers))])
    return MeasuredSolve(ranked, per_layer, solve_cpu, {**enumeration, **phases})


@dataclass(frozen=True)
class CostModel:
    """CPU seconds a layer costs as a rate times its states: one rate for a
    solved state, one for a state copied from its seat twin, and one for the
    solve's serial rest (setup, assembly) per state of the table."""

    solved: float
    copied: float
    rest: float
    source: str  # the rule set it was calibrated on

    @classmethod
    def calibrated(cls, measured: MeasuredSolve) -> CostModel:
        """The rates of a measured solve: its solved layers' seconds over their states, and so on."""
        layers = measured.layers
        twin, given = layers.twin, layers.given
        solved = float(measured.layer_cpu[~twin & ~given].sum()) / max(layers.solved_states, 1)
        copied = float(measured.layer_cpu[twin].sum()) / max(layers.copied_states, 1)
        return cls(solved, copied, measured.rest_cpu / max(int(layers.sizes.sum()), 1), layers.label)

    def costs(self, layers: RankedLayers) -> np.ndarray:
        """Each layer's modelled CPU seconds (0 for a given one)."""
        rate = np.where(layers.twin, self.copied, self.solved)
        return np.where(layers.given, 0.0, rate * layers.sizes)

    def describe(self) -> str:
        return (f"{1e6 * self.solved:.1f} us a solved state and {1e6 * self.copied:.2f} us a copied one,"
                f" calibrated on {self.source}")


@dataclass(frozen=True)
class Scaling:
    """Predicted layer-schedule lengths on several numbers of workers, and the critical path."""

    layers: RankedLayers
    source: str  # where the costs come from
    makespans: tuple[tuple[int, float], ...]  # (workers, seconds)
    costs: np.ndarray  # CPU seconds per layer
    total: float  # the layers' CPU seconds: one worker's makespan
    critical: CriticalPath
    rest_cpu: float  # the solve's serial rest (measured, or modelled)

    def makespan(self, workers: int) -> float:
        """The simulated layer schedule's length on `workers` (from the table, else simulated now)."""
        known = dict(self.makespans)
        return known[workers] if workers in known else makespan(self.layers.specs, self.costs, workers)

    def speedup(self, workers: int) -> float:
        return self.total / self.makespan(workers)

    @property
    def bound(self) -> float:
        """The speed-up no number of workers beats: all the work over the critical path."""
        return self.total / self.critical.seconds if self.critical.seconds else float("inf")

    def end_to_end(self, workers: int) -> float:
        """The whole solve's speed-up if enumeration split evenly over the workers and the rest stayed serial."""
        one = self.layers.enumeration_cpu + self.total + self.rest_cpu
        return one / (self.layers.enumeration_cpu / workers + self.makespan(workers) + self.rest_cpu)

    def speedups(self) -> str:
        """'2: 1.9x, 4: 3.6x, ...; bound 21.6x': the speed-up on each number of workers past one."""
        return ", ".join(f"{w}: {self.speedup(w):.2f}x" for w, _ in self.makespans if w > 1) + f"; bound {self.bound:.2f}x"

    def critical_ranks(self) -> list[int]:
        return [self.layers.specs[i].rank for i in self.critical.layers]

    def lines(self) -> list[str]:
        """The table, then what sets the bound; the last line gives the 16- and 64-worker speed-ups."""
        ranked = self.layers
        out = [f"  {'workers':>7} {'makespan':>12} {'speed-up':>9} {'efficiency':>10}"]
        for workers, span in self.makespans:
            out.append(f"  {workers:>7} {span:>10.1f} s {self.total / span:>8.2f}x {self.total / span / workers:>9.0%}")
        chain = self.critical.layers
        progress = sorted({ranked.specs[i].rank // ranked.progress_of for i in chain})
        levels = len({spec.rank // ranked.progress_of for spec in ranked.specs if not spec.given})
        solved_on_path = sum(1 for i in chain if ranked.specs[i].twin_of is None)
        out.append(f"  critical path {self.critical.seconds:.1f} s of {self.total:.1f} s"
                   f" ({self.critical.seconds / self.total:.1%}): bound {self.bound:.2f}x on any number of workers;"
                   f" {len(chain)} layers ({solved_on_path} solved, {len(chain) - solved_on_path} copied)"
                   f" in {len(set(self.critical_ranks()))} of {ranked.ranks} ranks, at progress"
                   f" {', '.join(map(str, progress))} ({len(progress)} of {levels} values)")
        shown = chain if len(chain) <= 16 else sorted(sorted(chain, key=lambda i: -self.costs[i])[:8], key=chain.index)
        out.append(("  the path, first to last: " if len(shown) == len(chain) else
                    f"  its 8 heaviest layers of {len(chain)}, first to last: ") + " > ".join(
            f"rank {ranked.specs[i].rank}{' twin' if ranked.specs[i].twin_of is not None else ''}"
            f" ({ranked.sizes[i]:,} states, {self.costs[i]:.1f} s)" for i in shown)
            + f"; the heaviest layer of all {self.costs.max():.1f} s ({self.costs.max() / self.total:.1%} of the work)")
        enum_share = ranked.enumeration_cpu / (ranked.enumeration_cpu + self.total + self.rest_cpu)
        out.append(f"  outside the schedule: enumeration {ranked.enumeration_cpu:.1f} CPU-s ({enum_share:.1%} of the solve's"
                   f" CPU), setup and assembly {self.rest_cpu:.1f} CPU-s; end to end (enumeration split evenly, the"
                   f" rest serial): {self.end_to_end(2):.2f}x on 2, {self.end_to_end(16):.1f}x on 16,"
                   f" {self.end_to_end(64):.1f}x on 64")
        out.append(f"  layer schedule speed-up: {self.speedup(2):.2f}x on 2 workers, {self.speedup(16):.2f}x on 16,"
                   f" {self.speedup(64):.2f}x on 64 (bound {self.bound:.2f}x)")
        return out


def scaling_of(
    layers: RankedLayers, costs: np.ndarray, source: str, rest_cpu: float, workers: Sequence[int] = WORKER_COUNTS,
) -> Scaling:
    """The layer schedule replayed with `costs` on each number of `workers`."""
    costs = np.asarray(costs, np.float64)
    spans = tuple((w, makespan(layers.specs, costs, w)) for w in workers)
    total = float(costs[~layers.given].sum())
    return Scaling(layers, source, spans, costs, total, critical_path(layers.specs, costs), rest_cpu)


def measured_scaling(measured: MeasuredSolve, workers: Sequence[int] = WORKER_COUNTS) -> Scaling:
    """The schedule replayed with a measured solve's own layer costs."""
    return scaling_of(measured.layers, measured.layer_cpu, "measured, one worker", measured.rest_cpu, workers)


def modelled_scaling(layers: RankedLayers, model: CostModel, workers: Sequence[int] = WORKER_COUNTS) -> Scaling:
    """The schedule replayed with `model`'s costs of `layers` (and its serial rest for their states)."""
    return scaling_of(layers, model.costs(layers), model.describe(), model.rest * int(layers.sizes.sum()), workers)
