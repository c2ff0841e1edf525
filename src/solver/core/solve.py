"""Solve a game from given root states: enumerate, order, solve, certify."""

from __future__ import annotations

import collections
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from . import phase_clock, resources
from .boundary import Boundary
from .bracketing import seat_mirror
from .graph import GameGraph, GraphTooLargeError, build_graph, reachable_states
from .layered import (
    ExitFigures,
    Layer,
    LayerGraph,
    WarmStart,
    enumerate_by_rank,
    solve_layers,
    solve_layers_at,
    solve_part,
)
from .outcome import Outcome, Seat, terminal_outcomes, won_by
from .progress import PhaseProgress
from .protocol import StochasticGame
from .resources import GRAPH_BYTES_PER_STATE, bytes_per_state
from .result import SolveResult

METHOD = (
    "components in dependency order; per cyclic component, alternating exact best responses "
    "and stage re-solves aimed a nudge past Shapley sweeps from the bounds found; hurried strategies (of each side's"
    " optimal stage strategies, the one ending the game soonest against a stalling opponent); exact best-response"
    " certificate, with endless play scored 1/2 and as a loss for each side"
)


LAYERED_METHOD = (
    "rank by rank (no turn lowers the progress rank), each rank cut out with exits paying each side's"
    " guarantee; within a rank, " + METHOD
)
FOLDED_METHOD = LAYERED_METHOD.replace(
    "; within a rank,", "; the positions where P2 has progressed further copied from their seat-swapped twins; within a rank,"
)

ESTIMATE_MARGIN = 2.0
"""Refuse up front only past this many times the limit: a game's estimate of its
size may overcount (docs/performance.md gives the measured ratios), never undercount."""


class EstimatedTooLargeError(GraphTooLargeError):
    """The estimated reachable state space clearly exceeds the allowed size."""


def approximate_count(count: float) -> str:
    """A count to two significant figures: 220,000 or 5.8e9."""
    if count < 1e9:
        return f"{float(f'{count:.2g}'):,.0f}"
    mantissa, exponent = f"{count:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def byte_size(amount: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if amount >= size:
            return f"{amount / size:,.1f} {unit}"
    return f"{amount / 1e3:,.1f} kB"


def refuse_if_estimate_too_large(
    estimate: float, where: str, max_states: int | None = None, per_state: int = GRAPH_BYTES_PER_STATE,
) -> None:
    """Raise `EstimatedTooLargeError` when `estimate` reachable states (from
    `where`) clearly exceed `max_states`, or by default what fits in the memory
    available at `per_state` bytes a state."""
    limit = max_states if max_states is not None else resources.states_that_fit(per_state)
    if limit is None or estimate <= ESTIMATE_MARGIN * limit:
        return  # may fit: enumeration finds out, under its own guard
    need = f"about {approximate_count(estimate)} reachable states {where} (~{byte_size(estimate * per_state)}"
    if max_states is not None:
        raise EstimatedTooLargeError(
            f"the rules in force would need {need} at {per_state:,} bytes a state);"
            f" the limit is --max-states {max_states:,}"
        )
    raise EstimatedTooLargeError(
        f"the rules in force would need {need} at {per_state:,} bytes a state);"
        f" the {(resources.available_memory() or 0) / 1e9:.1f} GB of memory available holds about {approximate_count(limit)}"
        " (--max-states sets another limit)"
    )


def _root_codes(roots: Iterable[int]) -> np.ndarray:
    """The roots as codes; an array is taken as it is (a wild table's are tens of
    millions: as a list of Python ints they would take gigabytes)."""
    return np.asarray(roots if isinstance(roots, np.ndarray) else list(roots), dtype=np.int64)


def solve_from(
    game: StochasticGame,
    roots: Iterable[int],
    *,
    show_progress: bool = True,
    max_states: int | None = None,
    estimated_states: float | None = None,
    estimated_from: str = "from there",
    workers: int = 1,
    scratch_dir: str | os.PathLike[str] | None = None,
    boundary: Boundary | None = None,
    warm: WarmStart | None = None,
    resume_dir: str | os.PathLike[str] | None = None,
) -> SolveResult:
    """Solve the part of `game` reachable from `roots`. Enumeration stops with
    `GraphTooLargeError` past `max_states` states, or by default past what
    fits in the memory available (checked before anything is solved). Given
    `estimated_states` (reachable `estimated_from` the roots), a solve that
    clearly would not fit is refused before enumerating.

    A game with a `progress_rank` is solved rank by rank (`layered`), holding
    one rank's transitions at a time, on `workers` processes, with its
    working files in `scratch_dir` (see `layered.solve_layers`); any other
    through its whole graph, in this process.

    With a `boundary` (a solved table of the same game: `Boundary.of`), play
    stops at the states it holds, other than the roots, and takes their
    figures from it; the result holds those states too, with no strategies
    (rank by rank only). The estimate, if given, is then not checked: it
    counts what the boundary cuts off.

    With `warm` (`layered.WarmStart`: values of a game with the same state
    encoding, e.g. `Boundary.estimates` of its stored table), cyclic
    components start from those estimates; the answer is certified exactly
    as from a cold start and agrees with it within the certified tolerance.

    With `resume_dir` (rank by rank only), finished ranks are kept there and
    an interrupted solve of the same game resumes from them (see
    `layered.solve_layers`)."""
    if boundary is not None and not hasattr(game, "progress_rank"):
        raise ValueError("a solve with a boundary goes rank by rank: the game has no progress rank")
    if estimated_states is not None and boundary is None:
        refuse_if_estimate_too_large(estimated_states, estimated_from, max_states, bytes_per_state(game))
    timings: dict[str, float] = {}
    roots = _root_codes(roots)
    enumerated = _enumerated(game, roots, timings, show_progress, max_states, workers, boundary, bytes_per_state(game))
    if isinstance(enumerated, GameGraph):
        return _solve_graph(enumerated, game, timings, show_progress, warm)
    return _solve_layers(game, enumerated, timings, show_progress, workers, scratch_dir, boundary, warm, resume_dir)


@dataclass(frozen=True, eq=False)
class StartFigures:
    """What a solve that keeps no strategies gives (`solve_start_figures`):
    per root, in the order given, its value, both sides' exact guarantees and
    outcome figures; and the certificate over every state solved."""

    codes: np.ndarray
    values: np.ndarray
    p1_guarantee: np.ndarray
    p2_guarantee: np.ndarray
    terminal_probability: np.ndarray  # (roots, terminal outcomes)
    unending_probability: np.ndarray
    ending_turns: np.ndarray  # E[turns played x 1{the game ends}]
    terminal_outcomes: tuple[Outcome, ...]
    num_states: int
    bellman_residual: float
    max_exploitability: float  # over every state solved, as `SolveResult.max_exploitability`: the certificate
    hurried: bool  # the outcome figures are hurried play's, else the value solve's strategies'
    method: str
    timings: dict[str, float]

    @property
    def terminal_labels(self) -> tuple[str, ...]:
        return tuple(o.label for o in self.terminal_outcomes)

    def index_of(self, code: int) -> int:
        """Index of root `code`; KeyError if it is not one."""
        hits = np.flatnonzero(self.codes == code)
        if not hits.size:
            raise KeyError(code)
        return int(hits[0])

    def win_probability(self, i: int, seat: Seat) -> float:
        """P(`seat` wins) from root `i` under the strategies the figures are of."""
        return float(self.terminal_probability[i, won_by(self.terminal_outcomes, seat)].sum())

    def expected_length(self, i: int) -> float:
        """Turns until the end from root `i`, given that the game ends (nan if it never does)."""
        ends = 1.0 - float(self.unending_probability[i])
        return float(self.ending_turns[i]) / ends if ends > 0 else float("nan")


def solve_start_figures(
    game: StochasticGame,
    roots: Iterable[int],
    *,
    hurried: bool = True,
    show_progress: bool = False,
    max_states: int | None = None,
    workers: int = 1,
    scratch_dir: str | os.PathLike[str] | None = None,
    warm: WarmStart | None = None,
    resume_dir: str | os.PathLike[str] | None = None,
) -> StartFigures:
    """`solve_from`'s figures at `roots` alone: the same values and
    certificate, but no strategy is written or assembled and nothing is
    stored, and with `hurried=False` no hurried play is computed, so the
    outcome figures are those of the value solve's certified strategies
    (where a side may stall they can include endless play). For the
    further solves of a report, which read a start's figures only."""
    roots = _root_codes(roots)
    if not hasattr(game, "progress_rank"):  # a whole-graph solve: its arrays are small enough to pick from
        result = solve_from(game, roots, show_progress=show_progress, max_states=max_states, warm=warm)
        at = np.array([result.index_of(int(code)) for code in roots], np.int64)
        return StartFigures(
            roots, result.values[at], result.p1_guarantee[at], result.p2_guarantee[at],
            result.terminal_probability[at], result.unending_probability[at], result.ending_turns[at],
            result.terminal_outcomes, result.num_states, result.bellman_residual, result.max_exploitability, True,
            result.method, dict(result.timings),
        )
    timings: dict[str, float] = {}
    layers = _enumerated(game, roots, timings, show_progress, max_states, workers, None, bytes_per_state(game, hurried))
    assert not isinstance(layers, GameGraph)
    clock = time.perf_counter()
    with PhaseProgress("solving", sum(layer.states.size for layer in layers), unit=" states", delay=1.0,
                       shown=show_progress) as bar:
        figures = solve_layers_at(game, layers, roots, hurried=hurried, progress=bar.advance, workers=workers,
                                  scratch_dir=scratch_dir, warm=warm, resume_dir=resume_dir)
    timings["solve"] = time.perf_counter() - clock
    method = FOLDED_METHOD if any(layer.twin_of is not None for layer in layers) else LAYERED_METHOD
    if not hurried:
        method = method.split("; hurried strategies")[0] + "; exact best-response certificate (no hurried play)"
    return StartFigures(
        figures.states, figures.values, figures.p1_guarantee, figures.p2_guarantee, figures.terminal_probability,
        figures.unending_probability, figures.ending_turns, terminal_outcomes(game), figures.num_states,
        figures.bellman_residual, figures.max_exploitability, hurried, method, timings,
    )


def _enumerated(
    game: StochasticGame, roots: np.ndarray, timings: dict[str, float], show_progress: bool, max_states: int | None,
    workers: int, boundary: Boundary | None, per_state: int,
) -> list[Layer] | GameGraph:
    """The states reachable from `roots`: by rank (`enumerate_by_rank`) where
    the game ranks its states, else its whole graph; `GraphTooLargeError`
    past `max_states`, or by default past what fits in memory at `per_state`."""
    limit = max_states if max_states is not None else resources.states_that_fit(per_state)
    clock = time.perf_counter()
    layers: list[Layer] | GameGraph
    with PhaseProgress("enumerating", None, unit=" states", delay=1.0, shown=show_progress) as bar:

        def found(count: int) -> None:
            bar.update(count)

        try:
            with phase_clock.phase("enumeration"):
                if hasattr(game, "progress_rank"):
                    layers = enumerate_by_rank(
                        game, roots, progress=found, max_states=limit, workers=workers, boundary=boundary,
                    )
                else:
                    layers = build_graph(game, reachable_states(game, roots, progress=found, max_states=limit))
        except GraphTooLargeError:
            if max_states is not None:
                raise
            # Refused on memory, not on the user's limit: say so with the figures.
            raise GraphTooLargeError(
                f"more than {limit:,} reachable states, the most a solve can hold in 90% of the"
                f" {(resources.available_memory() or 0) / 1e9:.1f} GB of memory available at {per_state:,} bytes"
                " a state (--max-states sets another limit)"
            ) from None
    timings["enumerate"] = time.perf_counter() - clock
    return layers


def _outcome_labels(source) -> dict:
    """The terminal payoffs and outcomes a `SolveResult` carries, from a game."""
    return {
        "terminal_payoff": np.asarray(source.terminal_payoff, np.float64),
        "terminal_outcomes": terminal_outcomes(source),
        "action_labels": tuple(source.action_labels),
        "unending_payoff": float(source.unending_payoff),
    }


def _solve_layers(
    game: StochasticGame, layers: list[Layer], timings: dict[str, float], show_progress: bool, workers: int,
    scratch_dir: str | os.PathLike[str] | None = None, boundary: Boundary | None = None,
    warm: WarmStart | None = None, resume_dir: str | os.PathLike[str] | None = None,
) -> SolveResult:
    clock = time.perf_counter()
    with PhaseProgress(
        "solving", sum(layer.states.size for layer in layers if not layer.given), unit=" states", delay=1.0,
        shown=show_progress,
    ) as bar:
        solution = solve_layers(
            game, layers, progress=bar.advance, workers=workers, scratch_dir=scratch_dir, boundary=boundary, warm=warm,
            resume_dir=resume_dir, show_progress=show_progress,
        )
    # Solving and certifying interleave rank by rank (and across workers): one wall time for both.
    timings["solve"] = time.perf_counter() - clock
    return SolveResult(
        **solution.arrays(),
        **_outcome_labels(game),
        bellman_residual=solution.bellman_residual,
        method=FOLDED_METHOD if any(layer.twin_of is not None for layer in layers) else LAYERED_METHOD,
        timings=timings,
        hurried_rounds=solution.hurried_rounds,
    )


def _solve_graph(
    graph: GameGraph, game: StochasticGame, timings: dict[str, float], show_progress: bool,
    warm: WarmStart | None = None,
) -> SolveResult:
    clock = time.perf_counter()
    with PhaseProgress("solving", graph.num_states, unit=" states", delay=1.0, shown=show_progress) as bar:
        mirror = seat_mirror(graph, game.swap(graph.states))
        first = warm(graph.states) if warm is not None else None
        timings["solve"] = time.perf_counter() - clock
        # The whole game is a part with no exits; hurried play's best responses certify it.
        done = solve_part(
            LayerGraph.whole(graph), ExitFigures.none(graph.terminal_payoff.shape[0]), mirror, first,
            progress=bar.advance, timings=timings,
        )
    return SolveResult(
        states=graph.states,
        row_ptr=graph.row_ptr,
        row_actions=graph.row_actions,
        col_ptr=graph.col_ptr,
        col_actions=graph.col_actions,
        **done.per_state(),
        **_outcome_labels(game),  # the graph's terminals are the game's
        bellman_residual=done.bellman_residual,
        method=METHOD,
        timings=timings,
        hurried_rounds=dict(collections.Counter(r.label for r in done.hurried_rounds)),
        graph=graph,
    )
