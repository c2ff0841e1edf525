"""A solve killed in the middle of a rank resumes from the ranks it finished:
the same answer, state by state; damaged kept work is solved again, never read."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.core import layered
from solver.core.checkpoint import Checkpoint
from solver.core.layered import enumerate_by_rank
from solver.core.result import ARRAY_FIELDS
from solver.core.solve import solve_from

RULES = ["board=S*M", "health=1", "bonus_cards=ray"]
SRC = Path(__file__).resolve().parent.parent / "src"

# Solves the rules with a checkpoint and kills itself (SIGKILL: no clean-up at all) when
# layer number KILL_AT starts: its graph built, its figures not yet written. What it solves:
# the table ("table"), a report's variant of the rules ("variant", kept under the cache
# directory given), or a report's restricted game (the card barred).
KILLED_SOLVE = textwrap.dedent("""
    import os, signal, sys
    from rules.charge_spark.config import RuleSet, apply_overrides
    from rules.charge_spark.game import ChargeSparkGame
    from rules.charge_spark.state import initial_position
    from solver.analysis.restricted import RestrictedJob, value_without
    from solver.analysis.sensitivity import Variant, VariantJob, summarise_variant
    from solver.core import layered
    from solver.core.solve import solve_from

    started = 0
    solve_layer = layered.solve_layer

    def solve_layer_then_die(*args, **kwargs):
        global started
        started += 1
        if started > int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)
        return solve_layer(*args, **kwargs)

    layered.solve_layer = solve_layer_then_die
    rules = apply_overrides(RuleSet(), sys.argv[4:])
    game = ChargeSparkGame(rules)
    if sys.argv[3] == "table":
        solve_from(game, [game.encode(initial_position(rules))], show_progress=False, resume_dir=sys.argv[1])
    elif sys.argv[3] == "variant":
        summarise_variant(VariantJob(Variant("a variant", "", rules), sys.argv[1]))
    else:
        value_without(RestrictedJob(rules, sys.argv[3], cache_dir=sys.argv[1]))
""")


def _game():
    rules = apply_overrides(RuleSet(), RULES)
    game = ChargeSparkGame(rules)
    return game, game.encode(initial_position(rules))


@pytest.fixture(scope="module")
def uninterrupted():
    game, root = _game()
    return solve_from(game, [root], show_progress=False)


def _killed_solve(resume: Path, layers_done: int, what: str = "table") -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", KILLED_SOLVE, str(resume), str(layers_done), what, *RULES], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == -signal.SIGKILL, run.stderr


def _parts(resume: Path) -> list[Path]:
    return sorted(resume.glob("part-*.done"))


def _assert_same(a, b) -> None:
    for name in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_a_solve_killed_mid_rank_resumes_to_the_same_table(tmp_path, uninterrupted, monkeypatch):
    resume = tmp_path / "resume"
    _killed_solve(resume, layers_done=2)
    kept = _parts(resume)
    assert len(kept) >= 2  # the finished layers (and their mirrored twins) are kept
    game, root = _game()
    solved = []
    solve_layer = layered.solve_layer
    monkeypatch.setattr(layered, "solve_layer", lambda *a, **k: solved.append(1) or solve_layer(*a, **k))
    resumed = solve_from(game, [root], show_progress=False, resume_dir=resume)
    _assert_same(resumed, uninterrupted)
    layers = enumerate_by_rank(game, [root])
    assert len(solved) == sum(layer.twin_of is None for layer in layers) - 2  # the two kept are read, not solved
    assert not resume.exists()  # kept work goes once the solve is done


def test_a_resumed_solve_counts_its_kept_layers_as_one_step_before_any_it_solves(tmp_path, monkeypatch):
    """Counted one by one, the kept layers were a burst of steps read in a moment, and the pace
    measured from the first step (`core.progress.seconds_left`) took them for solving: a
    resumed solve foretold far too short a time. As one step, the pace starts after them."""
    resume = tmp_path / "resume"
    _killed_solve(resume, layers_done=2)
    kept: list[dict] = []
    restored_layers = layered._restored_layers

    def recorded(*args):
        kept.append(restored_layers(*args))
        return kept[-1]

    monkeypatch.setattr(layered, "_restored_layers", recorded)
    game, root = _game()
    layers = enumerate_by_rank(game, [root])
    steps: list[int] = []
    layered.solve_layers(game, layers, progress=steps.append, resume_dir=resume)
    assert len(kept[0]) >= 2
    assert steps[0] == sum(done.states for done in kept[0].values())  # the kept layers, one step ...
    assert len(steps) == 1 + len(layers) - len(kept[0])  # ... then one step for each layer solved here
    assert sum(steps) == sum(layer.states.size for layer in layers)


def test_damaged_kept_work_is_solved_again(tmp_path, uninterrupted):
    resume = tmp_path / "resume"
    _killed_solve(resume, layers_done=2)
    data = sorted(resume.glob("part-*.npz"))
    assert data
    raw = bytearray(data[0].read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one flipped byte
    data[0].write_bytes(bytes(raw))
    data[-1].write_bytes(data[-1].read_bytes()[:100])  # and one file cut short
    game, root = _game()
    _assert_same(solve_from(game, [root], show_progress=False, resume_dir=resume), uninterrupted)


def test_kept_work_of_another_solve_is_never_read(tmp_path, uninterrupted):
    resume = tmp_path / "resume"
    _killed_solve(resume, layers_done=2)
    other = Checkpoint(resume, {"version": 0, "layers": "another game"})  # empties what it does not recognise
    assert not _parts(resume)
    other.save(0, {"at": np.arange(3)}, {"states": 3})
    game, root = _game()
    _assert_same(solve_from(game, [root], show_progress=False, resume_dir=resume), uninterrupted)


def test_a_checkpoint_part_is_trusted_only_whole(tmp_path):
    kept = Checkpoint(tmp_path, {"what": 1})
    kept.save(3, {"at": np.arange(5), "x": np.linspace(0, 1, 5)}, {"states": 5})
    arrays, meta = kept.load(3)
    np.testing.assert_array_equal(arrays["x"], np.linspace(0, 1, 5))
    assert meta == {"states": 5}
    path = tmp_path / "part-3.npz"
    path.write_bytes(path.read_bytes()[:-1])
    assert kept.load(3) is None and kept.finished_parts() == []
    assert Checkpoint(tmp_path, {"what": 1}).finished_parts() == []

def test_a_checkpoint_is_made_when_a_sibling_solve_removes_the_shared_parent_meanwhile(tmp_path, monkeypatch):
    """Solves side by side keep their work in one parent that each removes when done and
    empty (`tables.resuming_in`): it may go between making it and making the solve's own directory."""
    shared, made = tmp_path / "resume", []
    real_mkdir = Path.mkdir

    def mkdir_raced(self, *args, **kwargs):
        if self.parent == shared and not made:
            made.append(self)
            real_mkdir(shared)
            shared.rmdir()  # the sibling, done, removes the emptied parent
            raise FileNotFoundError(self)
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir_raced)
    kept = Checkpoint(shared / "key.without-barrier", {"what": 1})
    assert made and kept.directory.is_dir() and (kept.directory / "manifest.json").is_file()



@pytest.mark.parametrize("what", ["variant", "ray"])
def test_a_reports_further_solve_killed_mid_rank_resumes_from_its_kept_ranks(tmp_path, monkeypatch, what):
    """A variant (hurried play) or a restricted game (values alone) stores no
    table, but an interrupted report resumes the ranks it finished, under its
    cache directory, and the answer is the uninterrupted one's."""
    from solver.analysis.restricted import RestrictedJob, value_without
    from solver.analysis.sensitivity import Variant, VariantJob, summarise_variant

    rules = apply_overrides(RuleSet(), RULES)

    def solved(cache_dir):
        if what == "variant":
            found = summarise_variant(VariantJob(Variant("a variant", "", rules), cache_dir))
            return found.value, found.outcomes, found.expected_length
        found = value_without(RestrictedJob(rules, what, cache_dir=cache_dir))
        return found.value, found.error

    whole = solved(None)
    _killed_solve(tmp_path, layers_done=2, what=what)
    kept = [folder for folder in (tmp_path / "resume").iterdir() if _parts(folder)]
    assert len(kept) == 1 and len(_parts(kept[0])) >= 2
    layers = []
    solve_layer = layered.solve_layer
    monkeypatch.setattr(layered, "solve_layer", lambda *a, **k: layers.append(1) or solve_layer(*a, **k))
    assert solved(str(tmp_path)) == whole
    monkeypatch.undo()
    again = []
    monkeypatch.setattr(layered, "solve_layer", lambda *a, **k: again.append(1) or solve_layer(*a, **k))
    solved(str(tmp_path))
    assert 0 < len(layers) <= len(again) - 2  # at least the two kept ranks were read, not solved
    assert not (tmp_path / "resume").exists()  # kept work goes once the solve is done
