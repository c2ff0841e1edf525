"""`make bench`: speed figures with their baselines, measured in the same run.

1. Stage-game kernel against scipy `linprog` (HiGHS) on random zero-sum games:
   solves per second, and the values must agree to 1e-9.
2. End to end on a rule set (default: board S*M, health 1): the full solve
   (enumerate, solve, certify) against the plain baseline, Jacobi iteration of
   Shapley's operator with one scipy LP per state per sweep (`tests/reference.py`).
   The baseline is far too slow to run in full, so it is extrapolated by a
   stated rule: (scipy seconds per stage game, measured on this graph's own
   stage games) x (states) x (sweeps the same Jacobi iteration needs, counted
   with the compiled stage solver; capped, so the ratio is then a lower bound).
3. OpenSpiel head-to-head (with the crosscheck extra): one of its games solved
   by its value iteration and by ours, in one run.
4. One solve of board S*M, health 2, and of the full default game: wall
   time, peak memory (bytes a state, beside the planned figure) and
   states/s, or, when it cannot fit in the memory available, how far the
   enumeration got before the guard stopped it, and at what rate.
5. Hurried play on it: the mean, median and P(length > 200) from the start
   with the buzzer at `hurry.BUZZER` and at 1e-5 (a second solve), which must
   agree within 1%, the stricter certificate, and the stall table. (With
   `--quick`, on the small rule set.)
6. The report of a small rule set (board S*M, health 1; `--quick`: the
   tests' tiny one) from an empty cache, part by part, and again from the
   cache it filled.
7. Warm starts: a variant of a mid-sized rule set and its game with P1
   barred from a card, each solved cold and from the rule set's own stored
   table (`bench_warm_start`): both times, and the answers must agree to 1e-9.
8. The explorer's API (`charge-spark explore`): /api/query over HTTP at
   random positions of a stored table (board S*M, health 2; `--quick`: the
   tests' tiny one), against the CLI's in-process answer at others
   (`bench_explore_api`); the median must be under 100 ms, and the two must
   give the same objects. Then again at other positions while the server's
   worker solves a variant in the background (Counter one Disc cheaper): the
   median must stay under 100 ms.

With `--solve-cost`, only the solve-cost figure (`solve_cost`): the printed
board at health 1 solved on every usable core, with the pass of the stage
kernel it makes over the states it solved (its Bellman residuals, on their
own clock); its last line is `solve cost: N stage passes a state (phase
shares: ...)`, N the solve's CPU time (all processes) over the pass's. The
same pass timed again after the solve is printed beside it, for comparison.

With `--wavefront`, only the scaling figure (`scaling`): how far the
rank-by-rank solve's layer schedule would speed up on 1 to 64 workers, its
layers' costs replayed on simulated workers (`core.wavefront`). First from
each layer's CPU seconds measured on the printed board at health 1 (solved on
one worker), then from the cost model (seconds a solved state and a copied
one) calibrated on board S*M at health 2, on the same board, to check the
model against the measurement; then the model on the full printed rules,
enumerated only (49.4 M states: about a minute on 2 cores, about 1 GB).
Each block's last line gives the 16- and 64-worker speed-ups.

With `--against CHECKOUT`, the solve-cost figure of another checkout of
this project (the code a change is measured against) and of this one,
measured at the same time, each on one worker pinned to a core of its own,
then again with the cores swapped, after a first pair that only warms both
checkouts' compiled kernels (`paired_cost`): the ratio of their CPU
seconds, pair by pair, and its mean, each run's passes a state beside it.
Runs one after the other move by a sixth on a shared machine; the two runs
of a pair, of one commit, within a few percent.

Run as `python -m solver.bench [--quick | --solve-cost | --against CHECKOUT | --wavefront]`.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import threading
import time

import numba
import numpy as np
import psutil

from .analysis.stalls import LengthFigures, length_and_stalls
from .core import hurry
from .core.graph import GraphTooLargeError, build_graph
from .core.play import play_from
from .core.resources import layered_bytes_per_state, usable_cores
from .core.result import SolveResult
from .core.shapley import max_cells, stage_matrix_kernel
from .core.solve import solve_from
from .core.stage import matrix_game_kernel, solve_matrix_game_lp
from .paired_cost import PairingError, pair_lines, paired_solve_cost
from .scaling import WORKER_COUNTS, CostModel, measure_layers, measured_scaling, modelled_scaling, ranked_layers
from .solve_cost import PASSES_TIMED, measure_solve_cost
from .user_errors import one_line

TARGET_STAGE_RATIO = 300  # at 6x6
TARGET_END_TO_END_RATIO = 1000


def _timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


@numba.njit(cache=True)
def _kernel_values(games):
    out = np.empty(games.shape[0])
    for g in range(games.shape[0]):
        out[g] = matrix_game_kernel(games[g])[0]
    return out


def bench_stage_kernel(sizes=(3, 6, 10), lp_games: int = 300, kernel_games: int = 20_000) -> list[str]:
    rng = np.random.default_rng(2026)
    lines = ["stage-game kernel vs scipy linprog (HiGHS), random zero-sum games, entries U(0,1)"]
    lines.append(f"  {'size':>6} {'scipy/s':>10} {'kernel/s':>12} {'ratio':>8} {'max |dv|':>10}")
    for k in sizes:
        games = rng.random((kernel_games, k, k))
        _kernel_values(games[:10])  # compile or load outside the timing
        kernel_vals, kernel_t = _timed(_kernel_values, games)
        lp_vals = np.empty(lp_games)
        start = time.perf_counter()
        for g in range(lp_games):
            lp_vals[g] = solve_matrix_game_lp(games[g]).value
        lp_t = time.perf_counter() - start
        diff = float(np.abs(lp_vals - kernel_vals[:lp_games]).max())
        lp_rate, kernel_rate = lp_games / lp_t, kernel_games / kernel_t
        ratio = kernel_rate / lp_rate
        flag = "" if diff <= 1e-9 else "  VALUES DISAGREE"
        if k == 6:
            flag += f"  (target >= {TARGET_STAGE_RATIO}x: {'met' if ratio >= TARGET_STAGE_RATIO else 'NOT met'})"
        lines.append(f"  {k}x{k:<4} {lp_rate:>10,.0f} {kernel_rate:>12,.0f} {ratio:>7,.0f}x {diff:>10.1e}{flag}")
    lines.append("  (scipy: both players' strategies, one HiGHS LP each; kernel: the same answer)")
    return lines


@numba.njit(cache=True)
def _jacobi_sweep(row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, pay, unending, values, new, cells):
    buffer = np.empty(cells)
    change = 0.0
    for i in range(values.shape[0]):
        m = row_ptr[i + 1] - row_ptr[i]
        n = col_ptr[i + 1] - col_ptr[i]
        a = buffer[: m * n].reshape((m, n))
        stage_matrix_kernel(i, values, 1.0, unending, cell_ptr, out_ptr, out_next, out_prob, pay, m, n, a)
        new[i] = matrix_game_kernel(a)[0]
        change = max(change, abs(new[i] - values[i]))
    return change


def jacobi_sweeps_needed(graph, tol: float, cap: int) -> tuple[int, bool]:
    """Sweeps of plain Jacobi value iteration from the unending payoff until the
    largest change is <= tol (the baseline's own stopping rule), up to `cap`."""
    values = np.full(graph.num_states, graph.unending_payoff)
    new = np.empty_like(values)
    args = (graph.row_ptr, graph.col_ptr, graph.cell_ptr, graph.out_ptr, graph.out_next, graph.out_prob,
            graph.terminal_payoff, graph.unending_payoff)
    for sweep in range(1, cap + 1):
        change = _jacobi_sweep(*args, values, new, max_cells(graph))
        values, new = new, values
        if change <= tol:
            return sweep, True
    return cap, False


def bench_end_to_end(game, root: int, label: str, sample: int = 400, sweep_cap: int = 300) -> list[str]:
    result, ours = _timed(lambda: solve_from(game, [root], show_progress=False))
    graph = result.graph or build_graph(game, result.states)  # the baseline's transitions
    n = graph.num_states
    rng = np.random.default_rng(1)
    picks = rng.choice(n, size=min(sample, n), replace=False)
    start = time.perf_counter()
    for i in picks:
        solve_matrix_game_lp(graph.stage_matrix(int(i), result.values))
    per_lp = (time.perf_counter() - start) / picks.size
    (sweeps, converged), jacobi_t = _timed(jacobi_sweeps_needed, graph, 1e-9, sweep_cap)
    baseline = per_lp * n * sweeps
    bound = "" if converged else ">= "
    ratio = baseline / ours
    met = "met" if ratio >= TARGET_END_TO_END_RATIO else "NOT met"
    t = result.timings
    return [
        f"end to end, {label}: {n:,} states",
        f"  ours      {ours:8.1f} s  (enumerate {t['enumerate']:.1f} s, solve {t['solve']:.1f} s"
        + (f", certify {t['certify']:.1f} s" if "certify" in t else " with its certificate")
        + f"; {n / ours:,.0f} states/s;"
        f" largest exploitability {result.max_exploitability:.1e})",
        f"  baseline  {bound}{baseline:8.0f} s  = {per_lp * 1e3:.2f} ms per scipy stage LP (mean of {picks.size}"
        f" of this graph's stage games) x {n:,} states x {bound}{sweeps} Jacobi sweeps"
        + (" to a change <= 1e-9" if converged else f" (not converged at the cap; counted in {jacobi_t:.0f} s)"),
        f"  ratio     {bound}{ratio:,.0f}x  (target >= {TARGET_END_TO_END_RATIO}x: {met})",
    ]


def bench_full_game(game, root: int, label: str = "full default game") -> tuple[list[str], SolveResult | None]:
    """Solve the game `label` if it fits in memory (the lines, and the result);
    else how far enumeration got before the memory guard stopped it, and at what rate."""
    workers = usable_cores()
    lines = [f"{label} ({workers} worker processes, as `charge-spark solve` runs it)"]
    start = time.perf_counter()
    try:
        with PeakMemory() as memory:
            result = solve_from(game, [root], show_progress=False, workers=workers)
    except GraphTooLargeError as error:
        spent = time.perf_counter() - start
        lines.append(f"  NOT solved (targets: 10 min and 8 GB, goal 2 min and 4 GB: NOT met): {error}")
        lines.append(f"  enumeration reached that limit in {spent:.0f} s ({_limit_of(error) / spent:,.0f} states/s);"
                     f" peak memory {_peak_gb():.1f} GB")
        return lines, None
    wall = time.perf_counter() - start
    n = result.num_states
    peak = memory.peak / 1e9
    t = result.timings
    bar = "met" if wall <= 600 and peak <= 8 else "NOT met"
    goal = "met" if wall <= 120 and peak <= 4 else f"NOT met, {max(wall / 120, peak / 4):.1f}x off"
    lines += [
        f"  {n:,} states solved in {wall:.0f} s ({n / wall:,.0f} states/s), peak memory {peak:.2f} GB"
        f" ({memory.peak / n:,.0f} bytes a state; planned at {layered_bytes_per_state()})"
        f" (this process and its workers together, pages they share counted once; sampled every"
        f" {memory.interval:g} s; the largest single process reached {_peak_gb():.1f} GB)"
        f" (first bar 10 min and 8 GB: {bar}; goal 2 min and 4 GB: {goal})",
        f"  enumerate {t.get('enumerate', 0):.0f} s, solve and certify {t.get('solve', 0) + t.get('certify', 0):.0f} s;"
        f" value at the start {result.values[result.index_of(root)]:.12f},"
        f" largest exploitability {result.max_exploitability:.1e}, largest Bellman residual {result.bellman_residual:.1e}",
    ]
    return lines, result


def hurried_lengths(game, root: int, result: SolveResult) -> tuple[LengthFigures, list]:
    """The length figures and stalls at the start under `result`'s strategies."""
    found = length_and_stalls(play_from(game, result, root), result)
    return found.length, list(found.stalls)


def bench_buzzer_invariance(game, root: int, result: SolveResult, label: str, other_eta: float = 1e-5) -> list[str]:
    """Hurried play's lengths at the start with the buzzer at `hurry.BUZZER`
    (`result`) and at `other_eta` (solved again): they must agree within 1%.
    Also its stricter certificate and where hurried play was not used."""
    figures = result.hurry_figures()
    lines = [f"hurried play on {label}: lengths from the start with the buzzer at {hurry.BUZZER:g} and {other_eta:g} a turn",
             f"  exploitability with endless play scored as a loss {figures.max_strict_exploitability:.1e};"
             f" {figures.fallback_states:,} states keep the value solve's strategy; {figures.standoff_states:,} standoff states"]
    length, stalls = hurried_lengths(game, root, result)
    default_eta = hurry.BUZZER
    try:
        hurry.BUZZER = other_eta  # forked workers inherit it
        other = solve_from(game, [root], show_progress=False, workers=usable_cores())
    finally:
        hurry.BUZZER = default_eta
    other_length, _ = hurried_lengths(game, root, other)
    for eta, figures_at in ((default_eta, length), (other_eta, other_length)):
        mean = "none (may never end)" if figures_at.mean is None else f"{figures_at.mean:,.3f}"
        lines.append(f"  buzzer {eta:g}: mean {mean}, median {figures_at.median}, P(> 200 turns) {figures_at.p_beyond_200:.3e}")
    if length.mean is not None and other_length.mean is not None:
        ratio = other_length.mean / length.mean
        verdict = "met" if abs(ratio - 1.0) <= 0.01 and length.median == other_length.median else "NOT met"
        lines.append(f"  ratio of the means {ratio:.4f}, medians {length.median} and {other_length.median} (within 1%: {verdict})")
    for stall in stalls:
        lines.append(f"  stall: {stall.kind}, share {stall.share:.3%}, exit {stall.exit_probability:.3g} a turn,"
                     f" smallest probability {stall.min_probability:.2g}, {stall.states:,} states, at code {stall.position}")
    return lines


def bench_warm_start(
    overrides: list[str], variant: str = "cost.lightning.battery=3", card: str = "lightning",
) -> list[str]:
    """A variant of the rules `overrides` (`variant`, KEY=VALUE) and the game
    with P1 barred from `card`, each solved cold and warm from the rules' own
    table (stored in a temporary cache, as the report's further solves start
    from the printed rules'): both times, their ratio, and the largest
    difference of values, which must be within the certified 1e-9."""
    import tempfile

    from rules.charge_spark.config import RuleSet, apply_overrides
    from rules.charge_spark.game import ChargeSparkGame
    from rules.charge_spark.state import initial_position

    from .analysis.restricted import WithoutRowAction
    from .tables import solved_table, warm_start, warm_table_of

    rules = apply_overrides(RuleSet(), overrides)
    game, varied = ChargeSparkGame(rules), ChargeSparkGame(apply_overrides(rules, [variant]))
    barred = WithoutRowAction(game, game.action_labels.index(card))
    cases = (
        (f"variant {variant}", varied, varied.encode(initial_position(varied.rules))),
        (f"P1 barred from {card}", barred, game.encode(initial_position(rules))),
    )
    lines = [f"warm starts on {' '.join(overrides)} (one worker each, as the report's further solves run)"]
    with tempfile.TemporaryDirectory(prefix="charge-spark-bench-") as cache:
        base, base_t = _timed(solved_table, rules, cache)
        lines.append(f"  the rules' own table: {base.result.num_states:,} states, solved in {base_t:.1f} s and stored")
        for label, target, root in cases:
            lines.append(_cold_and_warm(label, target, root, warm_start(warm_table_of(rules, cache), target)))
    return lines


def _cold_and_warm(label: str, game, root: int, warm) -> str:
    """One game solved cold and from `warm`: the times and how far the answers are apart."""
    if warm is None:
        return f"  {label}: no warm start (the table encodes states otherwise)"
    cold, cold_t = _timed(lambda: solve_from(game, [root], show_progress=False))
    seeded, warm_t = _timed(lambda: solve_from(game, [root], show_progress=False, warm=warm))
    same = np.array_equal(seeded.states, cold.states)
    diff = float(np.abs(seeded.values - cold.values).max()) if same else float("inf")
    worst = max(cold.max_exploitability, seeded.max_exploitability)
    flag = "" if diff <= 1e-9 and worst <= 1e-9 else "  ANSWERS DISAGREE"
    return (f"  {label}: {cold.num_states:,} states; cold {cold_t:.1f} s, warm {warm_t:.1f} s,"
            f" ratio {cold_t / warm_t:.2f}x; largest |dv| {diff:.1e}, largest exploitability {worst:.1e}{flag}")


def _limit_of(error: Exception) -> int:
    words = str(error).split()
    return int(words[2].replace(",", "")) if len(words) > 2 and words[2].replace(",", "").isdigit() else 0


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


class PeakMemory:
    """The most memory this process and its child processes use together, in
    bytes: the sum of their proportional set sizes (a page shared by k of them
    counts 1/k to each, so shared memory is counted once), sampled every
    `interval` seconds on a background thread. A sample reads each process's
    page tables (about 40 ms for a few GB), so sampling often would slow the
    solve it measures; the peaks it looks for last longer than that."""

    def __init__(self, interval: float = 2.0) -> None:
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._measure()

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self._measure()

    def _measure(self) -> None:
        me = psutil.Process()
        total = 0
        for process in [me, *me.children(recursive=True)]:
            try:
                total += process.memory_full_info().pss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass  # a worker that just exited
        self.peak = max(self.peak, total)


def bench_openspiel(spec: str) -> list[str]:
    """The same OpenSpiel game solved by OpenSpiel's value iteration and by ours."""
    try:
        from open_spiel.python.algorithms import value_iteration

        from .openspiel import OpenSpielGame, load_game
    except ImportError as error:
        return [f"OpenSpiel head-to-head skipped: {error} (install the crosscheck extra)"]
    spiel_game = load_game(spec)
    theirs, their_t = _timed(lambda: value_iteration.value_iteration(spiel_game, depth_limit=-1, threshold=1e-10))

    def ours_solve():
        game = OpenSpielGame(spiel_game)
        return game, solve_from(game, [game.root()], show_progress=False)

    (game, result), our_t = _timed(ours_solve)
    worst = max(
        abs(theirs[str(game.state(code))] - result.values[i])
        for i, code in enumerate(result.states) if str(game.state(code)) in theirs
    )
    return [
        f"OpenSpiel head-to-head, {spec}: {result.num_states:,} states",
        f"  OpenSpiel value_iteration {their_t:8.3f} s   ours {our_t:8.3f} s (from scratch, certified)"
        f"   ratio {their_t / our_t:,.1f}x   largest |dv| {worst:.1e}",
    ]


def bench_phase_trees(overrides: list[str], horizons: tuple[int, ...] = (1, 2, 3)) -> list[str]:
    """Hidden-card phase trees of growing horizon solved by our sequence-form LP
    (sparse, HiGHS) and by OpenSpiel's (`sequence_form_lp`, GLPK through cvxpy) on
    the same tree read from its .efg export: the baseline, run here."""
    try:
        import pyspiel
        from open_spiel.python.algorithms import sequence_form_lp
    except ImportError as error:
        return [f"phase trees head-to-head skipped: {error} (install the crosscheck extra)"]
    from rules.charge_spark.config import RuleSet, apply_overrides
    from rules.charge_spark.game import ChargeSparkGame

    from .core.efg import write_efg
    from .core.sequence_form import solve_tree
    from .hidden.phase_tree import OpenGame, Phase
    from .hidden.starts import phase_starts
    from .tables import solved_table

    rules = apply_overrides(RuleSet(), overrides)
    with tempfile.TemporaryDirectory() as cache:  # the table is solved in memory and kept there
        open_game = OpenGame(ChargeSparkGame(rules), solved_table(rules, cache).result)
    starts = phase_starts(open_game)
    # The start whose phase needs the longest horizon among the first few: a tree that keeps growing.
    start = max(starts[:40], key=lambda s: Phase(open_game, list(s.worlds)).tree(max(horizons)).horizon_leaves)
    lines = [f"phase trees, {' '.join(overrides)} ({len(starts)} phase starts; one that lasts):"]
    for horizon in horizons:
        phase_tree = Phase(open_game, list(start.worlds)).tree(horizon)
        ours, our_t = _timed(solve_tree, phase_tree.tree, phase_tree.upper)
        text = write_efg(phase_tree.tree, phase_tree.upper, labels=False, decimal=True)
        theirs, their_t = _timed(
            lambda efg: sequence_form_lp.solve_zero_sum_game(pyspiel.load_efg_game(efg), solver="GLPK"), text)
        lines.append(
            f"  H={horizon}: {len(phase_tree.tree):>7,} nodes   OpenSpiel {their_t:8.3f} s   ours {our_t:8.3f} s"
            f"   ratio {their_t / our_t:,.1f}x   |dv| {abs(theirs[0] - ours.value):.1e}"
        )
    return lines


def bench_report_parts(overrides: list[str]) -> list[str]:
    """The report of a rule set from an empty cache, part by part (each part's
    wall time and states, as "How this report was made" shows them), then
    again from the cache it filled: the baseline is the first run."""
    import tempfile

    from rules.charge_spark.config import RuleSet, apply_overrides

    from .report.build import build_report
    from .report.made import COMPUTED, duration, made_totals

    rules = apply_overrides(RuleSet(), overrides)
    label = " ".join(overrides) or "the printed rules"
    with tempfile.TemporaryDirectory(prefix="charge-spark-bench-report-") as cache:
        first, cold = _timed(build_report, rules, cache)
        again, warm = _timed(build_report, rules, cache)
    lines = [f"report of {label} from an empty cache, part by part ({first.states:,} states)"]
    lines.append(f"  {'part':<58} {'wall':>11} {'states':>12}")
    for part in first.made:
        indent = "  " if part.group else ""
        states = f"{part.states:,}" if part.states is not None else "-"
        lines.append(f"  {indent + part.part:<58.58} {duration(part.seconds):>11} {states:>12}")
    totals = made_totals(first.made)
    lines.append(f"  whole report: {cold:.1f} s wall ({totals.computed_parts} parts computed);"
                 f" again from the cache: {warm:.1f} s ({cold / max(warm, 1e-9):.0f}x faster),"
                 f" {sum(p.source == COMPUTED for p in again.made)} parts computed")
    return lines


def bench_explore_api(overrides: list[str], positions: int = 200, seed: int = 2026) -> list[str]:
    """`charge-spark explore`'s /api/query over HTTP (a server in a thread of
    this process, on loopback) against the baseline, the CLI's in-process
    answer (`answer_at`, `lasting_at`, `query_json`: what `query --json` does,
    less its process start), each at its own `positions` random positions of
    the rules' stored table (solved and stored in the cache first if need be),
    each asked once. Then both at the same positions: the objects must be equal."""
    import json
    import urllib.request
    from urllib.parse import urlencode

    from rules.charge_spark.config import RuleSet, apply_overrides, fingerprint
    from rules.charge_spark.game import ChargeSparkGame
    from rules.charge_spark.notation import format_position

    from .answering import answer_at, lasting_at, query_json
    from .core.table_reader import TableReader
    from .explore.answers import Explorer
    from .explore.serve import serving_in_thread
    from .storage import TABLE_FORMAT
    from .tables import solved_table

    rules = apply_overrides(RuleSet(), overrides)
    table = solved_table(rules)
    key = fingerprint(rules)
    reader = TableReader(table.path, key, TABLE_FORMAT)
    game = ChargeSparkGame(rules)
    codes = np.random.default_rng(seed).choice(reader.take("states", 0, reader.num_states), 2 * positions, replace=False)
    served, baseline = [game.decode(int(c)) for c in codes[:positions]], [game.decode(int(c)) for c in codes[positions:]]

    def cli_object(position) -> dict:
        answer, result, source, edge = answer_at(rules, position, None, None, show_progress=False)
        lasting = lasting_at(rules, position, result, None, source, edge)
        return query_json(rules, format_position(position), answer, result, lasting)

    cli_ms = [1e3 * _timed(cli_object, position)[1] for position in baseline]  # as a query: the table opened each time
    with serving_in_thread(Explorer(rules, None)) as address:
        def api_object(position) -> dict:
            query = urlencode({"position": format_position(position)})
            with urllib.request.urlopen(f"{address}api/query?{query}", timeout=60) as response:
                return json.loads(response.read())

        api_object(served[0])  # the server's first answer opens the table
        api_ms = [1e3 * _timed(api_object, position)[1] for position in served]
        same = all(api_object(position) == cli_object(position) for position in baseline[:20])
    api, cli = float(np.median(api_ms)), float(np.median(cli_ms))
    flag = "" if same else "  ANSWERS DISAGREE"
    verdict = "met" if api < 100 else "NOT met"
    others = [game.decode(int(c)) for c in np.random.default_rng(seed + 1).choice(
        reader.take("states", 0, reader.num_states), positions, replace=False)]
    return [
        f"explorer API on {' '.join(overrides)} ({reader.num_states:,} states stored), {positions} random positions each",
        f"  /api/query over HTTP     median {api:7.1f} ms   90th percentile {np.percentile(api_ms, 90):7.1f} ms"
        f"   (target: median under 100 ms: {verdict})",
        f"  CLI answer in-process    median {cli:7.1f} ms   90th percentile {np.percentile(cli_ms, 90):7.1f} ms"
        f"   (the baseline; `query --json` adds its process start)",
        f"  ratio {cli / api:.1f}x; the same objects at 20 positions: {'yes' if same else 'no'}{flag}",
        bench_explore_during_solve(rules, table.path, others, "cost.counter.disc=1"),
    ]


def bench_explore_during_solve(rules, table_path, positions: list, variant: str) -> str:
    """/api/query at `positions` of the stored table at `table_path` while the
    server's worker solves the rules with `variant` added: the server over a
    scratch cache that holds the table (linked), so the variant is never
    stored already and nothing of it stays."""
    import json
    import os
    import urllib.error
    import urllib.request
    from pathlib import Path
    from urllib.parse import urlencode

    from rules.charge_spark.notation import format_position

    from .explore.answers import Explorer
    from .explore.serve import serving_in_thread

    def get(address: str, params: dict) -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(f"{address}api/query?{urlencode(params)}", timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    with tempfile.TemporaryDirectory(prefix="charge-spark-bench-") as scratch:
        os.symlink(table_path, Path(scratch) / Path(table_path).name)
        with serving_in_thread(Explorer(rules, scratch)) as address:
            status, waiting = get(address, {"position": "start", "set": variant})
            deadline = time.monotonic() + 600
            while status == 202 and waiting["progress"].get("phase") not in ("solving", "storing"):
                if time.monotonic() > deadline:
                    return "  during a background solve: not measured (the worker did not start solving in 10 min)"
                time.sleep(0.5)
                status, waiting = get(address, {"position": "start", "set": variant})
            if status != 202:
                return f"  during a background solve: not measured (the variant {variant} was answered at once)"
            ms = [1e3 * _timed(get, address, {"position": format_position(p)})[1] for p in positions]
            still, progress = get(address, {"position": "start", "set": variant})
    median = float(np.median(ms))
    verdict = "met" if median < 100 else "NOT met"
    note = ("the solve still running at the end" if still == 202 else "the solve ended before the last request")
    return (f"  during a background solve ({variant}): /api/query median {median:7.1f} ms   90th percentile"
            f" {np.percentile(ms, 90):7.1f} ms (target: median under 100 ms: {verdict}; {note})")


def bench_solve_cost(game, root: int, tiny: tuple, workers: int | None = None) -> list[str]:
    """The solve-cost figure (`solve_cost`): one solve and one stage pass over its states, in one run."""
    workers = usable_cores() if workers is None else workers
    solve_from(tiny[0], [tiny[1]], show_progress=False, workers=workers)  # every kernel loaded before the clock starts
    cost = measure_solve_cost(game, root, workers)
    return [
        f"solve cost on {cost.states:,} states ({cost.solved:,} solved, the rest copied from their seat twins),"
        f" {workers} worker{'s' if workers > 1 else ''}: {cost.solve_cpu:.1f} CPU-s all processes;"
        f" its stage pass (the Bellman residuals) {cost.pass_cpu:.2f} CPU-s"
        f" ({1e6 * cost.pass_cpu / max(cost.solved, 1):.2f} us a state); the same pass after the solve, the fastest"
        f" of {PASSES_TIMED} a rank, {cost.after_cpu:.2f} CPU-s ({cost.solve_cpu / cost.after_cpu:.1f} passes a state by it)",
        "hurried play's parts (a side of a rank) by the rounds they took: " + ", ".join(
            f"{count} {'at the cap' if label == 'capped' else f'after {label}'}"
            for label, count in sorted(cost.hurried_rounds.items(), key=lambda kv: (kv[0] == "capped", kv[0].zfill(3)))),
        cost.line(),
    ]


def bench_wavefront(tiny: tuple, measured: list[str], calibration: list[str]):
    """The scaling figure (`scaling`), a block of lines at a time (the last block takes minutes)."""
    from rules.charge_spark.config import RuleSet, apply_overrides

    def rules_label(overrides: list[str]) -> str:
        return " ".join(overrides) if overrides else "the printed rules (no overrides)"

    solve_from(tiny[0], [tiny[1]], show_progress=False)  # every kernel loaded before the clocks start
    calibrated = measure_layers(apply_overrides(RuleSet(), calibration), rules_label(calibration))
    model = CostModel.calibrated(calibrated)
    own = measured_scaling(calibrated)
    yield [f"calibration run, {calibrated.layers.label}: {int(calibrated.layers.sizes.sum()):,} states,"
           f" {calibrated.total_cpu:.1f} CPU-s on one worker; {model.describe()};"
           f" its own layers' speed-up {own.speedup(16):.2f}x on 16, {own.speedup(64):.2f}x on 64 (bound {own.bound:.2f}x)"]

    solved = measure_layers(apply_overrides(RuleSet(), measured), rules_label(measured))
    exact = measured_scaling(solved)
    ranked = solved.layers
    yield [
        f"wavefront on {ranked.label}: {int(ranked.sizes.sum()):,} states in {len(ranked.specs)} layers over"
        f" {ranked.ranks} ranks ({ranked.solved_states:,} solved, {ranked.copied_states:,} copied from seat twins)",
        f"  measured on one worker in this process: {solved.total_cpu:.1f} CPU-s = layers {exact.total:.1f}"
        f" + enumeration {ranked.enumeration_cpu:.1f} + setup and assembly {solved.rest_cpu:.1f};"
        f" from each layer's measured CPU seconds:",
        *exact.lines(),
    ]

    predicted = modelled_scaling(ranked, model)
    itself = CostModel.calibrated(solved)
    self_fit = modelled_scaling(ranked, itself)
    yield [
        f"the cost model on the same board, {model.describe()}:",
        *predicted.lines()[:-1],
        "  model against measurement, speed-up: " + "; ".join(
            f"{w}: {predicted.speedup(w):.2f}x vs {exact.speedup(w):.2f}x" for w in WORKER_COUNTS[1:])
        + f"; bound {predicted.bound:.2f}x vs {exact.bound:.2f}x",
        f"  the model calibrated on this board itself ({1e6 * itself.solved:.1f} us a solved state,"
        f" {1e6 * itself.copied:.2f} us a copied one): {self_fit.speedups()}"
        " (what remains is the error of costs in proportion to states)",
        f"  model: {predicted.speedup(16):.2f}x on 16 workers, {predicted.speedup(64):.2f}x on 64"
        f" (measured costs: {exact.speedup(16):.2f}x and {exact.speedup(64):.2f}x)",
    ]

    workers = usable_cores()
    start = time.perf_counter()
    with PeakMemory() as memory:
        full = ranked_layers(RuleSet(), rules_label([]), workers=workers)
    wall = time.perf_counter() - start
    whole, other = modelled_scaling(full, itself), modelled_scaling(full, model)
    yield [
        f"wavefront on {full.label}: {int(full.sizes.sum()):,} states in {len(full.specs)} layers over {full.ranks}"
        f" ranks ({full.solved_states:,} solved, {full.copied_states:,} copied), enumerated on {workers} processes"
        f" in {wall:.0f} s wall, {full.enumeration_cpu:.0f} CPU-s, peak memory {memory.peak / 1e9:.1f} GB"
        f" (all processes); not solved",
        f"  the cost model, {itself.describe()} (modelled layers {whole.total:,.0f} CPU-s on one worker):",
        *whole.lines()[:-1],
        f"  with the rates of {model.source} instead: {other.speedups()}",
        f"  model: {whole.speedup(16):.2f}x on 16 workers, {whole.speedup(64):.2f}x on 64 (bound {whole.bound:.2f}x;"
        f" end to end {whole.end_to_end(16):.1f}x and {whole.end_to_end(64):.1f}x)",
    ]


def main(argv: list[str] | None = None) -> int:
    from rules.charge_spark.config import RuleSet, apply_overrides
    from rules.charge_spark.game import ChargeSparkGame
    from rules.charge_spark.state import initial_position

    parser = argparse.ArgumentParser(prog="python -m solver.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small rule set end to end, and no full game")
    parser.add_argument("--solve-cost", action="store_true",
                        help="only the solve-cost figure: the printed board at health 1, in stage passes a state")
    parser.add_argument("--against", metavar="CHECKOUT",
                        help="the solve cost of CHECKOUT (a baseline) and of this checkout, measured side by side"
                             " on a core each, as the ratio of their CPU seconds")
    parser.add_argument("--wavefront", action="store_true",
                        help="only the scaling figure: the layer schedule's speed-up on 1 to 64 workers, predicted")
    args = parser.parse_args(argv)

    def rooted(overrides):
        rules = apply_overrides(RuleSet(), overrides)
        game = ChargeSparkGame(rules)
        return game, game.encode(initial_position(rules))

    if args.against:
        try:
            pairs = paired_solve_cost(args.against, ["health=1"])
        except PairingError as error:
            print(f"python -m solver.bench: error: {one_line(error)}", file=sys.stderr)
            return 2
        for line in pair_lines(pairs, args.against):
            print(line, flush=True)
        return 0
    if args.solve_cost:
        for line in bench_solve_cost(*rooted(["health=1"]), tiny=rooted(["board=SM", "health=1", "bonus_cards="])):
            print(line, flush=True)
        return 0
    if args.wavefront:
        tiny = rooted(["board=SM", "health=1", "bonus_cards="])
        for block in bench_wavefront(tiny, ["health=1"], ["board=S*M", "health=2"]):
            for line in block:
                print(line, flush=True)
        return 0

    print(f"machine: {numba.config.NUMBA_NUM_THREADS} hardware threads; python {sys.version.split()[0]}")
    for line in bench_stage_kernel(kernel_games=2_000 if args.quick else 20_000, lp_games=60 if args.quick else 300):
        print(line, flush=True)
    overrides = ["board=SM", "health=1", "bonus_cards="] if args.quick else ["board=S*M", "health=1"]
    game, root = rooted(overrides)
    solve_from(game, [root], show_progress=False)  # compile/load every kernel before timing
    for line in bench_end_to_end(game, root, " ".join(overrides), sweep_cap=50 if args.quick else 300):
        print(line, flush=True)
    for line in bench_openspiel("goofspiel(num_cards=4,imp_info=False,points_order=random,returns_type=point_difference)"):
        print(line, flush=True)
    tiny = ["board=S*M", "health=1", "battery_tiles=2", "disc_tiles=2", "bonus_cards=ray,copy"]  # the report tests'
    for line in bench_phase_trees(tiny, horizons=(1, 2) if args.quick else (1, 2, 3, 4, 5)):
        print(line, flush=True)
    report_rules = tiny if args.quick else ["board=S*M", "health=1"]
    for line in bench_report_parts(report_rules):
        print(line, flush=True)
    mid = ["board=S*M", "health=2", "bonus_cards=ray,copy"]  # about 320,000 states (--quick: 25,000)
    for line in bench_warm_start(mid + ["battery_tiles=2", "disc_tiles=2"] if args.quick else mid):
        print(line, flush=True)
    explore_rules = tiny if args.quick else ["board=S*M", "health=2"]  # health 2: about a million states
    for line in bench_explore_api(explore_rules, positions=50 if args.quick else 200):
        print(line, flush=True)
    if not args.quick:
        mid_game, mid_root = rooted(["board=S*M", "health=2"])
        for line in bench_full_game(mid_game, mid_root, "board S*M, health 2")[0]:
            print(line, flush=True)
    if args.quick:
        for line in bench_buzzer_invariance(game, root, solve_from(game, [root], show_progress=False), " ".join(overrides)):
            print(line, flush=True)
    else:
        game, root = rooted([])
        lines, result = bench_full_game(game, root)
        for line in lines:
            print(line, flush=True)
        if result is not None:
            for line in bench_buzzer_invariance(game, root, result, "the printed rules"):
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
