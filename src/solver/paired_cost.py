"""The solve-cost figure of two checkouts measured side by side, each on a core of its own.

On a shared machine the same solve's CPU time moves by a sixth from one run
to the next, more than most changes worth measuring. Two runs made at the
same time see the same minutes of the machine: the checkout a change is
measured against (the baseline) and this one solve the same board at once,
each pinned to one core, then again with the cores swapped, and the figure
is the ratio of their CPU seconds, pair by pair: both solve the same
states, and the pairing already does what dividing by a stage pass does
for one run alone (the pass, under a second, is itself the noisier part of
the passes-a-state figure: 1.09 and 1.00 for one commit against itself,
where the CPU seconds gave 1.03 and 0.99). Each run's passes a state are
printed beside it.

Each run is a separate Python process whose `solver` and `rules` are the
checkout's own (its `src` first on the path); it calls only
`solve_cost.measure_solve_cost`, so any checkout from 2026-12-06 on can be
the baseline.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CHILD = """
import sys
from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.core.solve import solve_from
from solver.solve_cost import measure_solve_cost

def rooted(overrides):
    rules = apply_overrides(RuleSet(), overrides)
    game = ChargeSparkGame(rules)
    return game, game.encode(initial_position(rules))

game, root = rooted(["board=SM", "health=1", "bonus_cards="])
solve_from(game, [root], show_progress=False, workers=1)
cost = measure_solve_cost(*rooted(sys.argv[1:]), 1)
print(f"cpu {cost.solve_cpu!r}")
print(cost.line())
"""
"""What each run executes: every kernel loaded on a tiny board first, then the figure on one worker."""

_FIGURE = re.compile(r"^solve cost: ([0-9.]+) stage passes a state")
_CPU = re.compile(r"^cpu ([0-9.eE+-]+)$")


class PairingError(Exception):
    """A paired measurement cannot be made: what and where, in one line."""


@dataclass(frozen=True)
class Run:
    """One checkout's figure in one pair: stage passes a state, the solve's CPU seconds, the core it ran on."""

    passes: float
    cpu: float
    core: int


@dataclass(frozen=True)
class Pair:
    baseline: Run
    changed: Run

    @property
    def ratio(self) -> float:
        """This checkout's solve CPU seconds over the baseline's: below 1, the change is cheaper."""
        return self.changed.cpu / self.baseline.cpu


def source_dir(checkout: str | os.PathLike[str]) -> Path:
    """The `src` directory of a checkout holding this project; PairingError if it holds none."""
    src = Path(checkout).expanduser().resolve() / "src"
    if not (src / "solver" / "solve_cost.py").is_file() or not (src / "rules").is_dir():
        raise PairingError(f"{checkout}: not a checkout of this project with the solve-cost figure (no src/solver/solve_cost.py)")
    return src


def two_cores() -> tuple[int, int]:
    """Two cores this process may run on; PairingError where it has only one."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        raise PairingError(f"a paired measurement needs two cores; this process may use {len(cores)}")
    return cores[0], cores[1]


def measure_on_core(src: Path, core: int, overrides: list[str]) -> subprocess.Popen[str]:
    """Start one run of the figure with `src`'s code, pinned to `core`."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")])))
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, *overrides], cwd=src.parent, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=lambda: os.sched_setaffinity(0, {core}),
    )


def finished_run(process: subprocess.Popen[str], core: int, src: Path) -> Run:
    """The run's figure once it has ended; PairingError with its last error line if it failed."""
    out, err = process.communicate()
    passes = cpu = None
    for line in out.splitlines():
        if (figure := _FIGURE.match(line)) is not None:
            passes = float(figure.group(1))
        elif (seconds := _CPU.match(line)) is not None:
            cpu = float(seconds.group(1))
    if process.returncode != 0 or passes is None or cpu is None:
        last = (err.strip().splitlines() or ["no output"])[-1]
        raise PairingError(f"the run with {src} ended with code {process.returncode}: {last}")
    return Run(passes, cpu, core)


def paired_solve_cost(baseline: str | os.PathLike[str], overrides: list[str], rounds: int = 2) -> list[Pair]:
    """`rounds` pairs of the figure (`overrides` the rules of the board solved): the baseline
    checkout's and this one's at once, each on its own core, the cores swapped every round;
    after one pair more, first, that only warms both checkouts' compiled kernels."""
    base_src, own_src = source_dir(baseline), source_dir(Path(__file__).resolve().parents[2])
    first, second = two_cores()
    pairs = []
    # The first pair is not counted: a checkout whose compiled kernels are not all cached yet (a
    # fresh clone) compiles the rest during it, which the small board's warm-up does not cover; on a
    # fresh clone against a warm checkout that pair measured the same code at 1.26.
    for number in range(-1, rounds):
        base_core, own_core = (first, second) if number % 2 == 0 else (second, first)
        base = measure_on_core(base_src, base_core, overrides)
        own = measure_on_core(own_src, own_core, overrides)
        try:
            pair = Pair(finished_run(base, base_core, base_src), finished_run(own, own_core, own_src))
        finally:
            for process in (base, own):  # a run left going when the other failed is stopped, not orphaned
                if process.poll() is None:
                    process.kill()
                    process.wait()
        if number >= 0:
            pairs.append(pair)
    return pairs


def pair_lines(pairs: list[Pair], baseline: str | os.PathLike[str]) -> list[str]:
    """One line a pair, then the ratio's mean: `solve cost against <baseline>: R x the baseline's CPU (...)`."""
    lines = [
        f"pair {number}: baseline {p.baseline.passes:.1f} passes a state ({p.baseline.cpu:.1f} CPU-s, core"
        f" {p.baseline.core}), this checkout {p.changed.passes:.1f} ({p.changed.cpu:.1f} CPU-s, core"
        f" {p.changed.core}): CPU ratio {p.ratio:.3f}"
        for number, p in enumerate(pairs, 1)
    ]
    mean = sum(p.ratio for p in pairs) / len(pairs)
    spread = max(p.ratio for p in pairs) - min(p.ratio for p in pairs)
    lines.append(f"solve cost against {baseline}: {mean:.3f} x the baseline's CPU seconds"
                 f" ({len(pairs)} pairs, ratios within {spread:.3f} of each other)")
    return lines
