"""Solve a game rank by rank, never holding its whole transition graph.

A game may offer `progress_rank(codes)`, a number that no transition lowers
(in Charge & Spark: Health lost and moves made, then the bonus cards each
side owns). Play can then only circle
among states of one rank, and every state of a higher rank is finished before
a lower one is needed:

1. Enumeration goes up the ranks: a rank's states are the closure, within the
   rank, of the states earlier ranks lead to. Only state codes are kept.
2. Solving goes down the ranks. One rank's transitions are expanded, with every
   move to a higher rank an exit: a terminal outcome paying P1's guarantee
   there (for P1's side) or P2's (for P2's side), as `bracketing` does for one
   component. The certificate, the Bellman residual and the outcome
   probabilities are composed the same way: each rank against the finished
   figures of the states it exits to.

In a game symmetric between seats that says which seat is ahead
(`folds_by_seat`), a rank's positions of seat order 1 are exactly the
seat-swapped twins of those of order -1: only the latter (and the few of
order 0) are expanded and solved, and the twins' figures are copied from
them with the seats swapped. That halves enumeration and the graphs.

Only the ranks being solved have a graph, each in the worker process solving
it; what is kept per state is its code, values, guarantees and outcome
probabilities (in arrays shared with the workers, backed by a file on disk
so that each process keeps resident only what its step touches), and its
strategies (in a file per layer until the end).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import multiprocessing
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numba
import numpy as np

from . import phase_clock
from .absorption import chain_values, outcomes_and_ending_turns
from .best_response import best_response_values
from .boundary import Boundary
from .bracketing import bracket_values, mirrors_strategies, payoffs_swap, seat_mirror
from .checkpoint import Checkpoint, digest_of_file
from .components import strongly_connected_components
from .graph import (
    GameGraph,
    GraphTooLargeError,
    distinct_sorted,
    expansion_of,
    graph_of,
    index_type,
    merged_distinct,
    offsets_of,
    sorted_contains,
)
from .hurry import Exits, Known, Rounds, ScoredGuarantees, hurry, scored, scored_guarantees
from .interruption import stop_if_asked
from .progress import PhaseProgress
from .resources import usable_cores
from .result import ARRAY_FIELDS, PER_STATE_HURRY
from .shapley import bellman_residual
from .shared_arrays import SharedArrays, release_pages
from .wavefront import Wavefront

WarmStart = Callable[[np.ndarray], np.ndarray]
"""First estimates of the values of the state codes given (sorted), nan where
there is none: a solved table of a game with the same state encoding, read as
needed (`Boundary.estimates`). Called once per layer, in the process solving
it (forked workers inherit it), so it must not copy a large table each time."""


@dataclass(frozen=True, eq=False)
class Layer:
    rank: int
    states: np.ndarray  # sorted codes
    exit_ranks: frozenset[int] = frozenset()  # the higher ranks its transitions lead to
    twin_of: int | None = None  # the layer (its index) whose states are these with the seats swapped
    given: bool = False  # states of the solve's boundary: their figures are read from it, not solved


def enumerate_by_rank(
    game: Any, roots: np.ndarray, progress: Callable[[int], None] | None = None,
    max_states: int | None = None, chunk: int = 1 << 16, workers: int = 1, boundary: Boundary | None = None,
) -> list[Layer]:
    """Every state reachable from `roots`, grouped by rank, lowest rank first.
    `progress(count)` gets the number found so far; past `max_states` it
    raises `GraphTooLargeError`. With `workers` > 1, each frontier is
    expanded in shares (of at most `chunk` states, and at least 4,096) on
    that many forked processes (same answer).

    A game symmetric between seats that orders them (`folds_by_seat`), from
    roots that are their own seat-swapped set, is enumerated folded: a
    rank's positions of seat order 1 are the twins of those of order -1,
    so only order -1 and order 0 (closed under the swap) are expanded, each
    as a layer of its own, and the twins of order -1 come as a third layer
    (`twin_of`), never expanded.

    With a `boundary` (states already solved), play stops at the states it
    holds, other than the roots: they come last, as one layer marked `given`
    (with the seat-swapped twins it holds too, when folded), never expanded."""
    global _ENUMERATED_GAME, _ENUMERATED_BOUNDARY
    roots = distinct_sorted(np.asarray(roots, np.int64))
    fold = folds_by_seat(game) and np.array_equal(distinct_sorted(game.swap(roots)), roots)
    pending: dict[int, list[np.ndarray]] = {}
    # Ranked a piece at a time: ranking decodes every field of a code, and a
    # game's roots may be tens of millions (a wild table's are every open position).
    for lo in range(0, roots.size, _SEED_PIECE):
        piece = roots[lo : lo + _SEED_PIECE]
        _add_seeds(pending, piece, game.progress_rank(piece))
    layers: list[Layer] = []
    found = 0
    reached: list[np.ndarray] = []  # states of the boundary that play reaches
    _ENUMERATED_GAME = game
    edge = boundary.without(roots) if boundary is not None else None  # the roots are solved, never read
    _ENUMERATED_BOUNDARY = edge
    pool = _layer_pool(workers) if workers > 1 else None

    def count(size: int) -> None:
        if max_states is not None and found + size > max_states:
            raise GraphTooLargeError(f"more than {max_states:,} reachable states (limit; see --max-states)")
        if progress is not None:
            progress(found + size)

    try:
        while pending:
            stop_if_asked()
            rank = min(pending)
            seeds = distinct_sorted(np.concatenate(pending.pop(rank)))
            if not fold:
                layer, exit_ranks = _closure_in_rank(seeds, rank, pending, pool, workers, chunk, count, reached)
                layers.append(Layer(rank, layer, exit_ranks))
                found += layer.size
                continue
            seeds = distinct_sorted(np.where(game.seat_order(seeds) > 0, game.swap(seeds), seeds))
            order = game.seat_order(seeds)
            for side in (0, -1):
                start = seeds[order == side]
                if not start.size:
                    continue
                if not side:  # their twins are not their canonical form: reached from the twin side, so seeds too
                    start = merged_distinct([start, distinct_sorted(game.swap(start))])
                doubled = 2 if side else 1
                layer, exit_ranks = _closure_in_rank(
                    start, rank, pending, pool, workers, chunk, lambda size: count(doubled * size), reached,  # noqa: B023 - used within this iteration
                )
                if np.any(game.seat_order(layer) != side):
                    raise ValueError(f"a transition within rank {rank} changes the seat order")
                layers.append(Layer(rank, layer, exit_ranks))
                found += layer.size
                if side:
                    layers.append(Layer(rank, np.sort(game.swap(layer)), exit_ranks, twin_of=len(layers) - 1))
                    found += layer.size
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        _ENUMERATED_GAME = _ENUMERATED_BOUNDARY = None
    if reached and edge is not None:  # play reaches stored states only where there is an edge
        layers.append(_given_layer(game, layers, merged_distinct(reached), edge, fold))
    return layers


def _given_layer(game, layers: list[Layer], reached: np.ndarray, boundary: Boundary, fold: bool) -> Layer:
    """The boundary's states that play reaches (and, folded, their twins that
    it holds: a mirrored layer's exits are the twins of its source's), less
    any that a layer holds."""
    if fold:
        twins = distinct_sorted(game.swap(reached))
        reached = merged_distinct([reached, twins[boundary.holds(twins)]])
    solved = merged_distinct([layer.states for layer in layers])
    if solved.size:
        reached = reached[~sorted_contains(solved, reached)]
    return Layer(-1, reached, given=True)


def folds_by_seat(game: Any) -> bool:
    """Whether `game` is symmetric between seats and orders them: `swap` gives
    codes, `seat_order` says which seat is ahead (-1, 0 or 1; unchanged within
    a progress rank, negated by `swap`) and `terminal_swap` maps each terminal
    outcome to the other seat's."""
    return (
        hasattr(game, "progress_rank") and hasattr(game, "seat_order") and hasattr(game, "terminal_swap")
        and game.swap(np.zeros(1, np.int64)) is not None
    )


def _closure_in_rank(
    seeds: np.ndarray, rank: int, pending: dict[int, list[np.ndarray]], pool, workers: int, chunk: int,
    count: Callable[[int], None], reached: list[np.ndarray],
) -> tuple[np.ndarray, frozenset[int]]:
    """The states of rank `rank` reachable from `seeds` (sorted) and the ranks
    above it they lead to; the states they lead to there go to `pending`, and
    those of the boundary to `reached`."""
    layer = frontier = seeds
    exit_ranks: set[int] = set()
    while frontier.size:
        # Every worker gets a share, also of a frontier smaller than a chunk each.
        size = min(chunk, max(_MIN_SHARE, -(-frontier.size // workers)))
        jobs = [(frontier[lo : lo + size], rank) for lo in range(0, frontier.size, size)]
        parts = pool.map(_successors_by_rank, jobs) if pool is not None and len(jobs) > 1 else map(
            _successors_by_rank, jobs
        )
        pieces = []
        for inside, later, ranks, given in parts:
            pieces.append(inside)
            exit_ranks.update(np.unique(ranks).tolist())
            _add_seeds(pending, later, ranks)
            if given.size:
                reached.append(given)
        same = merged_distinct(pieces)
        frontier = same[~sorted_contains(layer, same)] if layer.size else same
        if frontier.size:
            layer = merged_distinct([layer, frontier])
        count(layer.size)
    return layer, frozenset(exit_ranks)


_MIN_SHARE = 4096  # states: below this a job costs more to send than to expand
_SEED_PIECE = 1 << 21  # roots ranked at once
_ENUMERATED_GAME: Any = None  # the game being enumerated, inherited by the forked workers
_ENUMERATED_BOUNDARY: Boundary | None = None  # and its boundary


def _successors_by_rank(job: tuple[np.ndarray, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The distinct successors of `codes` of rank `rank`; the others, with
    their ranks; then those the boundary holds (not among the others)."""
    codes, rank = job
    game = _ENUMERATED_GAME
    nxt = game.expand(codes).out_next
    nxt = distinct_sorted(nxt[nxt >= 0])
    given = nxt[:0]
    if _ENUMERATED_BOUNDARY is not None:
        held = _ENUMERATED_BOUNDARY.holds(nxt)
        given, nxt = nxt[held], nxt[~held]
    ranks = game.progress_rank(nxt)
    if ranks.size and ranks.min() < rank:
        raise ValueError(f"a transition lowers the progress rank (from {rank} to {int(ranks.min())})")
    later = ranks != rank
    return nxt[~later], nxt[later], ranks[later], given


def _add_seeds(pending: dict[int, list[np.ndarray]], codes: np.ndarray, ranks: np.ndarray) -> None:
    if not codes.size:
        return
    order = np.argsort(ranks, kind="stable")
    codes, ranks = codes[order], ranks[order]
    cuts = np.flatnonzero(np.diff(ranks)) + 1
    for part, rank in zip(np.split(codes, cuts), ranks[np.r_[0, cuts]]):
        seeds = pending.setdefault(int(rank), [])
        seeds.append(part)
        if len(seeds) > 16:  # keep duplicates from piling up
            pending[int(rank)] = [distinct_sorted(np.concatenate(seeds))]


@dataclass(frozen=True, eq=False)
class LayerGraph:
    """One rank's stage games; exit j leads to the state of global index `exits[j]`."""

    graph: GameGraph  # terminal_payoff holds the game's own outcomes only
    exits: np.ndarray
    exit_labels: tuple[str, ...] = ()

    @classmethod
    def whole(cls, graph: GameGraph) -> LayerGraph:
        """A whole game, as a part of itself with no exits."""
        return cls(graph, np.zeros(0, np.int64))


def layer_graph(
    game: Any, states: np.ndarray, all_states: np.ndarray, chunk: int = 1 << 16, labelled: bool = True,
) -> LayerGraph:
    """The stage games of `states` (sorted), each move out of them an exit to
    its state among `all_states`; `labelled=False` names every exit "exit"
    (a label string an exit costs much at millions of exits)."""
    expansion = expansion_of(game, states, chunk)
    out_next = expansion["out_next"].astype(np.int64)
    live = np.flatnonzero(out_next >= 0)
    codes = out_next[live]
    at = np.searchsorted(states, codes)
    inside = states[np.minimum(at, states.size - 1)] == codes
    out_next[live[inside]] = at[inside]
    # Many outcomes share an exit: look each distinct one up once in the (much larger) set of all states.
    outside, slot = np.unique(codes[~inside], return_inverse=True)
    exits = np.searchsorted(all_states, outside)
    if outside.size and (exits.max() >= all_states.size or np.any(all_states[exits] != outside)):
        raise ValueError("states are not closed under transitions")
    out_next[live[~inside]] = -1 - (len(game.terminal_payoff) + slot)
    labels = tuple(f"exit to {int(t)}" for t in exits) if labelled else ("exit",) * exits.size
    return LayerGraph(graph_of(game, states, expansion, out_next), exits.astype(np.int64), labels)


def with_exit_payoffs(layer: LayerGraph, exit_payoff: np.ndarray) -> GameGraph:
    """The layer's graph whose exit j pays `exit_payoff[j]`."""
    g = layer.graph
    base = np.asarray(g.terminal_payoff, np.float64)
    return GameGraph(
        states=g.states, row_ptr=g.row_ptr, row_actions=g.row_actions, col_ptr=g.col_ptr,
        col_actions=g.col_actions, cell_ptr=g.cell_ptr, out_ptr=g.out_ptr, out_next=g.out_next,
        out_prob=g.out_prob, terminal_payoff=np.concatenate([base, exit_payoff]),
        terminal_labels=g.terminal_labels + (layer.exit_labels or tuple(f"exit to {int(t)}" for t in layer.exits)),
        unending_payoff=g.unending_payoff, action_labels=g.action_labels,
    )


@dataclass(frozen=True, eq=False)
class LayeredSolution:
    """Per state in `states` order (sorted codes); strategies in CSR form."""

    states: np.ndarray
    row_ptr: np.ndarray
    row_actions: np.ndarray
    row_strategy: np.ndarray
    col_ptr: np.ndarray
    col_actions: np.ndarray
    col_strategy: np.ndarray
    middle: np.ndarray  # middle of the bracket
    p1_guarantee: np.ndarray  # exact, recomputed by best responses
    p2_guarantee: np.ndarray
    terminal_probability: np.ndarray
    unending_probability: np.ndarray
    ending_turns: np.ndarray  # E[turns played x 1{the game ends}]
    p1_buzzer: np.ndarray
    p2_buzzer: np.ndarray
    p1_guarantee_u0: np.ndarray
    p2_guarantee_u0: np.ndarray
    p1_guarantee_u1: np.ndarray
    p2_guarantee_u1: np.ndarray
    fallback: np.ndarray
    bellman_residual: float
    rounds: int  # best-response rounds spent on cyclic components
    certify_seconds: float  # of the whole, the time spent on the certificate, hurried play and outcome probabilities
    hurried_rounds: dict[str, int] = field(default_factory=dict)  # sides' hurried play by how it ended (`Rounds.label`)

    def arrays(self) -> dict[str, Any]:
        """The arrays a `SolveResult` holds, by its names (the game's payoffs aside)."""
        return {name: getattr(self, "middle" if name == "values" else name)
                for name in ARRAY_FIELDS if name != "terminal_payoff"}


@dataclass(frozen=True, eq=False)
class ExitFigures:
    """What is known at a layer's exits (one entry per exit), all final."""

    p1_guarantee: np.ndarray
    p2_guarantee: np.ndarray
    middle: np.ndarray
    outcomes: np.ndarray  # (exits, terminal outcomes + 1): probabilities of each ending, then of none
    ending_turns: np.ndarray  # E[turns played x 1{the game ends}] from each exit
    buzzer: tuple[np.ndarray, np.ndarray] | None  # each side's buzzer value (see `hurry`); None unhurried
    scored: ScoredGuarantees | None  # each side's guarantee with endless play scored as a loss for one side
    hurried_guarantees: tuple[np.ndarray, np.ndarray] | None  # each side's, playing the hurried strategies
    twin_p1_guarantee: np.ndarray | None = None  # P1's guarantee at each exit's seat-swapped twin

    @classmethod
    def none(cls, terminals: int) -> ExitFigures:
        """The figures of no exits, for a whole game with `terminals` outcomes
        (its twins' figures are known: there are none)."""
        empty = np.zeros(0)
        return cls(
            empty, empty, empty, np.zeros((0, terminals + 1)), empty, (empty, empty),
            ScoredGuarantees(empty, empty, empty, empty), (empty, empty), twin_p1_guarantee=empty,
        )


MIRROR_TOL = 1e-14
"""Exits count as mirrored when P2's guarantee at each is within this of what
P1's at its twin concedes (they are computed as 1 - x: one rounding apart)."""


@dataclass(frozen=True, eq=False)
class LayerSolution:
    row_strategy: np.ndarray
    col_strategy: np.ndarray
    p1_guarantee: np.ndarray
    p2_guarantee: np.ndarray
    middle: np.ndarray
    terminal_probability: np.ndarray
    unending_probability: np.ndarray
    ending_turns: np.ndarray
    buzzer: tuple[np.ndarray, np.ndarray] | None  # None where the solve is not hurried
    scored: ScoredGuarantees | None
    fallback: np.ndarray | None
    solve_guarantees: tuple[np.ndarray, np.ndarray]  # each side's, playing the value solve's strategies
    bellman_residual: float
    rounds: int
    certify_seconds: float
    hurried_rounds: tuple[Rounds, ...] = ()  # how each side's hurried play ended (none: not hurried, or no choice)

    def per_state(self) -> dict[str, Any]:
        """The per-state arrays a `SolveResult` holds, by its names (of a hurried solve)."""
        assert self.buzzer is not None and self.scored is not None  # a SolveResult's strategies are hurried
        return {
            "values": self.middle, "row_strategy": self.row_strategy, "col_strategy": self.col_strategy,
            "terminal_probability": self.terminal_probability, "unending_probability": self.unending_probability,
            "ending_turns": self.ending_turns, "p1_guarantee": self.p1_guarantee, "p2_guarantee": self.p2_guarantee,
            "p1_buzzer": self.buzzer[0], "p2_buzzer": self.buzzer[1],
            "p1_guarantee_u0": self.scored.p1_u0, "p2_guarantee_u0": self.scored.p2_u0,
            "p1_guarantee_u1": self.scored.p1_u1, "p2_guarantee_u1": self.scored.p2_u1, "fallback": self.fallback,
        }


def solve_layer(
    layer: LayerGraph, mirror: np.ndarray | None, exits: ExitFigures, warm: np.ndarray | None = None,
    hurried: bool = True,
) -> LayerSolution:
    """One layer, its exits paying what `exits` says: `solve_part`, except that
    a layer where neither side has a choice (both follow fixed policies) is a
    Markov chain, solved as one."""
    if _no_choices(layer.graph):
        return _solve_chain_layer(layer, exits, hurried)
    return solve_part(layer, exits, mirror, warm, hurried=hurried)


def solve_part(
    part: LayerGraph, exits: ExitFigures, mirror: np.ndarray | None, warm: np.ndarray | None = None, *,
    progress: Callable[[int], None] | None = None, timings: dict[str, float] | None = None, hurried: bool = True,
) -> LayerSolution:
    """Solve and certify a part of a game whose exits pay what `exits` says (a
    rank cut out of a game, or a whole game: `LayerGraph.whole` with
    `ExitFigures.none`).

    Strategies by `bracket_values` (from the first estimates `warm`, per
    state, if given; `progress` and `mirror` as there), then the
    certificate of the strategies reported. Hurried: hurried strategies
    and their own exact guarantees, the Bellman residual and the outcome
    probabilities (`_hurried_solution`), the value solve's guarantees being
    the bracket's. Not hurried: each side's exact guarantee recomputed
    independently of the bracket's bookkeeping, composed with those of the
    exits. P2's guarantees are mirrored from P1's where the part, its exits
    and its strategies mirror between the seats.

    `timings`, if given, gains the seconds spent on the bracket ("solve"),
    on the certificate ("certify") and on the rest ("hurry").
    `hurried=False` skips hurried play: the value solve's certified
    strategies are the answer (`_value_solution`)."""
    start = time.perf_counter()
    with phase_clock.phase("bracket"):
        p1_graph = with_exit_payoffs(part, exits.p1_guarantee)
        p2_pay = np.concatenate([part.graph.terminal_payoff, exits.p2_guarantee])
        bracket = bracket_values(
            p1_graph, strongly_connected_components(p1_graph), progress=progress, mirror=mirror,
            p2_terminal_payoff=p2_pay, warm=warm,
        )
    row, col = bracket.row_strategy, bracket.col_strategy
    bracketed = time.perf_counter()
    with phase_clock.phase("certificate"):
        p2_graph = with_exit_payoffs(part, exits.p2_guarantee)
        mirrored = _mirrored(part, mirror, exits, row, col)
        if hurried:
            # The strategies reported are hurried play's, and its own exact best responses certify
            # them. The value solve's guarantees (the next ranks' exits) are the bracket's: exact
            # best responses to these very strategies too, composed component by component.
            low, high = bracket.lower, bracket.upper
        else:
            # Started from the bracket's guarantees and best replies (the certificate is still an exact
            # best response: a start only changes how soon it settles), most components take one solve.
            low = best_response_values(p1_graph, 0, row, bracket.lower, bracket.p1_reply)
            if not mirrored:
                high = best_response_values(p2_graph, 1, col, bracket.upper, bracket.p2_reply)
        if mirrored:
            # P2's strategies are P1's seen from the other seat, and so are the exits' figures:
            # P2's best response at a state is P1's at its twin, with the seats swapped.
            high = 2.0 * part.graph.unending_payoff - low[mirror]
        middle = np.clip(bracket.values, low, np.maximum(low, high))
    certified = time.perf_counter()
    if not hurried:
        solution = _value_solution(part, exits, p1_graph, low, high, middle, row, col, int(bracket.rounds.sum()), bracketed)
    else:
        solution = _hurried_solution(
            part, exits, mirror, p1_graph, p2_graph, low, high, middle, row, col, int(bracket.rounds.sum()), bracketed,
        )
    if timings is not None:
        for phase, seconds in (("solve", bracketed - start), ("certify", certified - bracketed),
                               ("hurry", time.perf_counter() - certified)):
            timings[phase] = timings.get(phase, 0.0) + seconds
    return solution


def _hurried_solution(
    layer: LayerGraph, exits: ExitFigures, mirror: np.ndarray | None, p1_graph: GameGraph, p2_graph: GameGraph,
    low: np.ndarray, high: np.ndarray, middle: np.ndarray, row: np.ndarray, col: np.ndarray, rounds: int,
    clock: float,
) -> LayerSolution:
    """The layer's solution once its value solve is certified: hurried
    strategies (see `hurry`), their exact guarantees with endless play scored
    three ways, the Bellman residual and the outcome probabilities."""
    assert exits.buzzer is not None and exits.scored is not None and exits.hurried_guarantees is not None
    own = layer.graph.terminal_payoff.shape[0]
    none = np.zeros(own)
    ends = np.arange(own + layer.exits.size) < own
    twin = mirror if _exits_mirror(layer, mirror, exits) else None
    # The value solve's guarantees go on to the next ranks' brackets unchanged, so the values are
    # exactly the value solve's; the hurried strategies' own are composed beside them.
    checked_in = (with_exit_payoffs(layer, exits.hurried_guarantees[0]), with_exit_payoffs(layer, exits.hurried_guarantees[1]))
    hurried = hurry(
        p1_graph, p2_graph, low, high, row, col,
        Exits(ends, np.concatenate([none, exits.buzzer[0]]), np.concatenate([none, exits.buzzer[1]])), twin,
        checked_in=checked_in,
    )
    solve_guarantees = (low, high)
    row, col, low, high = hurried.row_strategy, hurried.col_strategy, hurried.p1_guarantee, hurried.p2_guarantee
    middle = _within_guarantees(middle, low, high)
    # Where no endless play is possible against the hurried strategies and the exits' scored
    # guarantees are their hurried ones, the scored guarantees are the hurried ones, no best response needed.
    with phase_clock.phase("scored guarantees"):
        strict = _scored(layer, exits, row, col, twin, hurried.known(checked_in))
    residual = _residual(layer, exits, middle)
    with phase_clock.phase("outcomes"):
        terminal, unending, turns = _layer_outcomes(layer, p1_graph, row, col, exits)
    return LayerSolution(
        row, col, low, high, middle, terminal, unending, turns, (hurried.p1_buzzer, hurried.p2_buzzer), strict,
        hurried.fallback, solve_guarantees, residual, rounds, time.perf_counter() - clock, hurried.rounds,
    )


def _scored(
    layer: LayerGraph, exits: ExitFigures, row: np.ndarray, col: np.ndarray, twin: np.ndarray | None,
    known: tuple[Known, Known],
) -> ScoredGuarantees:
    """Each side's guarantee playing `row`, `col` with endless play scored 0 and 2u (`scored_guarantees`)."""
    assert exits.scored is not None
    total = 2.0 * layer.graph.unending_payoff
    e = exits.scored
    return scored_guarantees(
        (scored(with_exit_payoffs(layer, e.p1_u0), 0.0), scored(with_exit_payoffs(layer, e.p1_u1), total)),
        (scored(with_exit_payoffs(layer, e.p2_u0), 0.0), scored(with_exit_payoffs(layer, e.p2_u1), total)),
        row, col, twin, known=known,
    )


def _residual(layer: LayerGraph, exits: ExitFigures, middle: np.ndarray) -> float:
    """The layer's Bellman residual at `middle`: one pass of the stage kernel
    over its states, on its own clock (`phase_clock.STAGE_PASS`), which the
    solve-cost figure divides the solve by."""
    graph = with_exit_payoffs(layer, exits.middle)
    with phase_clock.phase(phase_clock.STAGE_PASS):
        return float(bellman_residual(graph, middle).max(initial=0.0))


def _within_guarantees(values: np.ndarray, low: np.ndarray, high: np.ndarray, slack: float = 1e-9) -> np.ndarray:
    """`values` moved into [low, high] where they lie outside it by more than `slack`.

    Where a component has only epsilon-optimal strategies (`everett`), its value
    estimate can lie a little outside what the hurried strategies provably
    guarantee (a hurried strategy can guarantee more than the value solve's):
    the value then is at least, or at most, that guarantee. Within `slack`, a
    certified value stays exactly the value solve's."""
    outside = (values < low - slack) | (values > high + slack)
    if not outside.any():
        return values
    return np.where(outside, np.clip(values, low, np.maximum(low, high)), values)


def _value_solution(
    layer: LayerGraph, exits: ExitFigures, p1_graph: GameGraph, low: np.ndarray, high: np.ndarray,
    middle: np.ndarray, row: np.ndarray, col: np.ndarray, rounds: int, clock: float,
) -> LayerSolution:
    """The layer's solution as the value solve certified it, without hurried
    play: its strategies and guarantees, the Bellman residual and the outcome
    probabilities under those strategies (where a side may stall, some of them
    can be the chance of never ending)."""
    residual = _residual(layer, exits, middle)
    with phase_clock.phase("outcomes"):
        terminal, unending, turns = _layer_outcomes(layer, p1_graph, row, col, exits)
    return LayerSolution(
        row, col, low, high, middle, terminal, unending, turns, None, None, None, (low, high), residual, rounds,
        time.perf_counter() - clock,
    )


def _no_choices(graph: GameGraph) -> bool:
    return bool(np.all(np.diff(graph.row_ptr) == 1) and np.all(np.diff(graph.col_ptr) == 1))


def _solve_chain_layer(layer: LayerGraph, exits: ExitFigures, hurried: bool = True) -> LayerSolution:
    """A layer where each side has one action everywhere: each side's guarantee
    is the value of the Markov chain, its exits paying that side's guarantee
    there. Exact linear solves; no bracket, no best responses (they would
    only evaluate the same chain, iteratively)."""
    clock = time.perf_counter()
    ones = np.ones(layer.graph.num_states)
    p1_graph = with_exit_payoffs(layer, exits.p1_guarantee)
    own = layer.graph.terminal_payoff
    both = np.column_stack([p1_graph.terminal_payoff, np.concatenate([own, exits.p2_guarantee])])
    low, high = chain_values(p1_graph, ones, ones, both).T  # one solve, each side's exits paying its guarantee
    middle = np.clip(0.5 * (low + high), low, np.maximum(low, high))
    if not hurried:
        return _value_solution(layer, exits, p1_graph, low, high, middle, ones, ones, 0, clock)
    p2_graph = with_exit_payoffs(layer, exits.p2_guarantee)
    return _hurried_solution(layer, exits, None, p1_graph, p2_graph, low, high, middle, ones, ones, 0, clock)


def _layer_outcomes(
    layer: LayerGraph, graph: GameGraph, row: np.ndarray, col: np.ndarray, exits: ExitFigures,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Outcome chances, chance of never ending and ending turns of the layer's
    states under `row` and `col`, each exit carrying those of its state."""
    terminals = layer.graph.terminal_payoff.shape[0]
    own = np.eye(terminals, terminals + 1)
    terminal, unending, turns = outcomes_and_ending_turns(
        graph, row, col, np.vstack([own, exits.outcomes]), np.concatenate([np.zeros(terminals), exits.ending_turns]),
    )
    assert turns is not None  # asked for, by giving the exits' turns
    return terminal, unending, turns


def _mirrored(layer: LayerGraph, mirror: np.ndarray | None, exits: ExitFigures, row: np.ndarray, col: np.ndarray) -> bool:
    """Whether P2's guarantees in `layer` are P1's at the twins: the game's own
    outcomes swap with their payoffs, the exits' guarantees mirror, and so do
    the strategies."""
    return mirror is not None and _exits_mirror(layer, mirror, exits) and mirrors_strategies(layer.graph, mirror, row, col)


def _exits_mirror(layer: LayerGraph, mirror: np.ndarray | None, exits: ExitFigures) -> bool:
    """Whether `layer` is its own seat-swapped twin, its outcomes and its exits'
    guarantees too (their other figures are copied along with the guarantees)."""
    if mirror is None or exits.twin_p1_guarantee is None:
        return False
    total = 2.0 * layer.graph.unending_payoff
    if not payoffs_swap(layer.graph):
        return False
    return not np.any(np.abs(exits.p2_guarantee - (total - exits.twin_p1_guarantee)) > MIRROR_TOL)


def solve_layers(
    game: Any, layers: list[Layer], progress: Callable[[int], None] | None = None, workers: int = 1,
    scratch_dir: str | os.PathLike[str] | None = None, boundary: Boundary | None = None,
    warm: WarmStart | None = None, resume_dir: str | os.PathLike[str] | None = None,
    layer_cpu: dict[int, float] | None = None, show_progress: bool = False,
) -> LayeredSolution:
    """Solve every layer, highest rank first (see the module docstring).

    With `workers` > 1, layers go to that many forked processes as soon as
    every rank they exit to is finished (layers of one rank never depend on
    each other). A worker builds its layer's graph itself, reads the figures
    of the layer's exits from memory shared with this process and writes
    back those of the layer's states: this process only schedules. A
    finished layer's strategies wait in a temporary directory. The final
    arrays are then assembled one at a time, each written to a file and
    returned memory-mapped (the file already unlinked), so that at most one
    of them is ever held in memory. The files go to a temporary directory
    in `scratch_dir` (default: the system's; it needs about twice the
    table's size, and should be on disk, not in memory), as do the
    per-state figures the workers share (about 100 bytes a state).

    A layer marked `given` takes its figures from `boundary` (the solution
    then holds its states, with no strategies: they were not solved here).

    With `warm`, each layer's cyclic components start from the estimates
    `warm(codes)` gives for its states (see `WarmStart`); the workers call it
    themselves, each for its own layer.

    With `resume_dir`, every finished layer is kept there, checksummed, and a
    solve interrupted earlier (Ctrl-C, a kill, a power cut) resumes from the
    layers it finished: the same answer, state by state. The directory goes
    when the solve is done; it needs about as much room as the table.

    With `layer_cpu`, each layer solved gets there the CPU seconds its phases
    took (`phase_clock`), by its number: the costs `wavefront.simulate`
    replays to predict the solve on other numbers of workers.
    `show_progress`: the assembly's own progress bar (`progress` counts the
    states of the layers solved)."""
    keep = _Keep(True, True)
    with _layers_solved(game, layers, progress, workers, scratch_dir, boundary, warm, keep, resume_dir,
                        layer_cpu) as run:
        with phase_clock.phase("storing"):
            solved = [i for i, layer in enumerate(layers) if not layer.given]
            twins = {i: source for i in solved if (source := layers[i].twin_of) is not None}
            arrays = _assemble(run.all_states, run.figures, solved, twins, run.spill, show_progress)
        return LayeredSolution(
            **arrays, bellman_residual=run.residual, rounds=run.rounds, certify_seconds=run.certify_seconds,
            hurried_rounds=dict(run.hurried_rounds),
        )


@dataclass(frozen=True, eq=False)
class RootFigures:
    """A solve's figures at a few states (its roots), in the order asked, and
    its certificate over every state: what a caller needs of a large solve
    that keeps no strategies (`solve_layers_at`)."""

    states: np.ndarray  # codes, in the order asked
    values: np.ndarray  # middle of the bracket
    p1_guarantee: np.ndarray  # exact guarantees of the strategies the figures are of
    p2_guarantee: np.ndarray
    terminal_probability: np.ndarray  # (roots, the game's terminal outcomes)
    unending_probability: np.ndarray
    ending_turns: np.ndarray
    max_exploitability: float  # over every state solved, as `SolveResult.max_exploitability`
    num_states: int
    bellman_residual: float
    rounds: int
    hurried: bool  # the figures are those of hurried play's strategies, else of the value solve's


def solve_layers_at(
    game: Any, layers: list[Layer], roots: np.ndarray, *, hurried: bool = True,
    progress: Callable[[int], None] | None = None, workers: int = 1,
    scratch_dir: str | os.PathLike[str] | None = None, boundary: Boundary | None = None,
    warm: WarmStart | None = None, resume_dir: str | os.PathLike[str] | None = None,
) -> RootFigures:
    """`solve_layers`, keeping only the figures at `roots` and the certificate:
    no strategy is written or assembled, and with `hurried=False` no hurried
    play is computed (nor held: its per-state figures are never allocated), so
    the figures are those of the value solve's certified strategies. The
    same values as `solve_layers`, for a fraction of its memory and time."""
    roots = np.asarray(roots, np.int64)
    keep = _Keep(hurried=hurried, strategies=False)
    with _layers_solved(game, layers, progress, workers, scratch_dir, boundary, warm, keep, resume_dir) as run:
        f, n = run.figures, run.all_states.size
        at = np.searchsorted(run.all_states, roots)
        if roots.size and (at.max() >= n or np.any(run.all_states[at] != roots)):
            raise KeyError("a root is not among the solved states")
        at = f.slot_of[at]
        low, high = (f.hurried_p1_guarantee, f.hurried_p2_guarantee) if hurried else (f.p1_guarantee, f.p2_guarantee)
        worst = max((_exploitability(f, low, high, lo, lo + _CHUNK) for lo in range(0, n, _CHUNK)), default=0.0)
        return RootFigures(
            roots, f.middle[at].copy(), low[at], high[at], f.terminal[at].astype(np.float64),
            f.unending[at].astype(np.float64), f.ending_turns[at].astype(np.float64), max(worst, 0.0), int(n),
            run.residual, run.rounds, hurried,
        )


_CHUNK = 1 << 22  # states a step when scanning every state (no temporary of the whole size)


def _exploitability(f: _SharedFigures, low: _OffsetColumn, high: _OffsetColumn, lo: int, hi: int) -> float:
    """The most either side gains by best-responding, over states [lo, hi) (their pages let go after)."""
    v = f.middle[lo:hi]
    worst = float(np.maximum(v - low[lo:hi], high[lo:hi] - v).max(initial=0.0))
    f.release()
    return worst


@dataclass(frozen=True)
class _Keep:
    """What a layered solve computes and keeps beyond values and guarantees."""

    hurried: bool  # hurried play, its buzzer values and scored guarantees
    strategies: bool  # each layer's strategies, written for assembly


@dataclass
class _LayersRun:
    all_states: np.ndarray
    figures: _SharedFigures
    spill: str
    residual: float = 0.0
    rounds: int = 0
    certify_seconds: float = 0.0
    hurried_rounds: collections.Counter[str] = field(default_factory=collections.Counter)


@contextlib.contextmanager
def _layers_solved(
    game: Any, layers: list[Layer], progress: Callable[[int], None] | None, workers: int,
    scratch_dir: str | os.PathLike[str] | None, boundary: Boundary | None, warm: WarmStart | None, keep: _Keep,
    resume_dir: str | os.PathLike[str] | None = None, layer_cpu: dict[int, float] | None = None,
) -> Iterator[_LayersRun]:
    """Every layer solved, its figures in shared memory (and, with
    `keep.strategies`, its strategies in the spill directory), for the body
    of the `with` to read before the spill directory goes.

    With `resume_dir`, each finished layer is kept there (`Checkpoint`), and
    the layers a solve interrupted earlier kept whole and sound are read back
    rather than solved again; the directory goes once the body is done."""
    global _CONTEXT
    all_states, slots = _states_and_slots(layers)
    figures = _SharedFigures(all_states.size, len(game.terminal_payoff), keep.hurried, scratch_dir, slots,
                             [layer.states.size for layer in layers])
    for number, layer in enumerate(layers):
        if layer.given:
            _fill_from_boundary(game, figures, figures.of_layer(number), layer.states, boundary)
    figures.release()
    _remove_abandoned_spills(scratch_dir)
    checkpoint = Checkpoint(resume_dir, _manifest(layers, keep)) if resume_dir is not None else None
    with contextlib.ExitStack() as stack:
        if checkpoint is None:
            spill = stack.enter_context(tempfile.TemporaryDirectory(prefix=f"{_SPILL_PREFIX}{os.getpid()}-", dir=scratch_dir))
        else:
            spill = str(checkpoint.directory)
        run = _LayersRun(all_states, figures, spill)
        restored = _restored_layers(checkpoint, figures, keep, spill) if checkpoint is not None else {}
        for done in restored.values():
            _count_done(run, done, None)
        if progress is not None and restored:
            # The kept layers as one step: the pace (measured from the first step) is then the layers solved here.
            progress(sum(done.states for done in restored.values()))
        _CONTEXT = _LayerContext(game, layers, all_states, figures, spill, warm, keep, checkpoint)
        try:
            for number, done in _run_layers(layers, workers, frozenset(restored)):
                _count_done(run, done, progress)
                if layer_cpu is not None:
                    layer_cpu[number] = sum(done.phases.values())
        finally:
            _CONTEXT = None
        yield run
    if checkpoint is not None:
        checkpoint.remove()


def _states_and_slots(layers: list[Layer]) -> tuple[np.ndarray, np.ndarray]:
    """(every state of `layers`, sorted; where each is held in the figures,
    which hold the layers' states one layer after another, `_SharedFigures`)."""
    held = np.concatenate([layer.states for layer in layers])
    slot_of = np.argsort(held, kind="stable")
    return held[slot_of], slot_of.astype(index_type(held.size))


def _count_done(run: _LayersRun, done: _LayerDone, progress: Callable[[int], None] | None) -> None:
    run.residual = max(run.residual, done.bellman_residual)
    run.rounds += done.rounds
    run.certify_seconds += done.certify_seconds
    run.hurried_rounds.update(done.hurried_rounds)
    phase_clock.merge(done.phases)  # a worker's: this process's clock then holds the whole solve's
    if progress is not None:
        progress(done.states)


_CHECKPOINT_VERSION = 3  # of what a kept layer holds: another version is solved anew
"""2: components without stationary optimal strategies are bracketed by costly-delay rounds
(`everett`); a rank kept by version 1 could hold a bracket 0.47 wide there, so it is not reused.
3: a twin layer's strategies file holds only where its states lie (`at`, `local`); the assembly reads
its source's strategies, which a version-2 twin file repeated."""


def _manifest(layers: list[Layer], keep: _Keep) -> dict:
    """What identifies a layered solve: its layers, state by state, and what it keeps."""
    digest = hashlib.blake2b(digest_size=16)
    for layer in layers:
        digest.update(np.array([layer.rank, -1 if layer.twin_of is None else layer.twin_of, layer.given], np.int64).tobytes())
        digest.update(np.ascontiguousarray(layer.states, np.int64).tobytes())
    return {"version": _CHECKPOINT_VERSION, "layers": digest.hexdigest(), "hurried": keep.hurried,
            "strategies": keep.strategies}


def _figure_columns(f: _SharedFigures) -> dict[str, np.ndarray]:
    """Every per-state array of `f` that a finished layer writes, by name, as held (guarantees as their offsets)."""
    columns = {"middle": f.middle, "terminal": f.terminal, "unending": f.unending, "ending_turns": f.ending_turns,
               "row_count": f.row_count, "col_count": f.col_count}
    names = ["p1_guarantee", "p2_guarantee"]
    if f.hurried:
        names += ["hurried_p1_guarantee", "hurried_p2_guarantee", *(f"p{side}_guarantee_u{u}" for side in (1, 2) for u in (0, 1))]
        columns.update(p1_buzzer=f.p1_buzzer, p2_buzzer=f.p2_buzzer, fallback=f.fallback)
    columns.update({name: getattr(f, name).offset for name in names})
    return columns


def _keep_layer(ctx: _LayerContext, number: int, at: np.ndarray, done: _LayerDone) -> None:
    """Write finished layer `number`'s figures (and its strategies file's digest) to the checkpoint,
    `at` its states' places in the table."""
    if ctx.checkpoint is None:
        return
    own = ctx.figures.of_layer(number)
    arrays = {name: column[own] for name, column in _figure_columns(ctx.figures).items()}
    meta: dict[str, Any] = {"states": done.states, "bellman_residual": done.bellman_residual, "rounds": done.rounds,
            "certify_seconds": done.certify_seconds, "hurried_rounds": list(done.hurried_rounds)}
    if ctx.keep.strategies:
        meta["strategies"] = digest_of_file(Path(ctx.spill) / f"{number}.npz")
    ctx.checkpoint.save(number, {"at": at, **arrays}, meta)


def _restored_layers(checkpoint: Checkpoint, f: _SharedFigures, keep: _Keep, spill: str) -> dict[int, _LayerDone]:
    """The layers the checkpoint holds whole and sound, their figures written
    back into `f` as they were; the others are left to be solved."""
    restored: dict[int, _LayerDone] = {}
    columns = _figure_columns(f)
    for number in checkpoint.finished_parts():
        kept = checkpoint.load(number)
        if kept is None:
            continue
        arrays, meta = kept
        strategies = Path(spill) / f"{number}.npz"
        if keep.strategies and (not strategies.exists() or digest_of_file(strategies) != meta.get("strategies")):
            checkpoint.forget(number)
            continue
        at = f.slot_of[arrays["at"]]
        for name, column in columns.items():
            column[at] = arrays[name]
        f.finished[at] = True
        f.release()  # a layer at a time: restoring a whole solve's figures would otherwise hold them all
        restored[number] = _LayerDone(int(meta["states"]), float(meta["bellman_residual"]), int(meta["rounds"]),
                                      float(meta["certify_seconds"]),
                                      hurried_rounds=tuple(str(r) for r in meta.get("hurried_rounds", ())))
    return restored


_SPILL_PREFIX = "charge-spark-layers-"


def _fill_from_boundary(game, figures: _SharedFigures, at: slice, codes: np.ndarray, boundary: Boundary | None) -> None:
    """Record the boundary's figures of `codes` (in the figures' slots `at`) as finished."""
    if boundary is None or not np.all(boundary.holds(codes)):
        raise ValueError("a layer of given states needs the boundary that holds them")
    if tuple(boundary.terminal_labels) != tuple(game.terminal_labels):
        raise ValueError("the boundary is a table of another game: its terminal outcomes differ")
    index = boundary.index(codes)
    figures.middle[at] = boundary.figures("values", index)  # first: the guarantees are kept as offsets from it
    figures.p1_guarantee[at] = boundary.figures("p1_guarantee", index)
    figures.p2_guarantee[at] = boundary.figures("p2_guarantee", index)
    figures.terminal[at] = boundary.figures("terminal_probability", index)
    figures.unending[at] = boundary.figures("unending_probability", index)
    figures.ending_turns[at] = boundary.figures("ending_turns", index)
    if figures.hurried:
        figures.hurried_p1_guarantee[at], figures.hurried_p2_guarantee[at] = figures.p1_guarantee[at], figures.p2_guarantee[at]
        for name in PER_STATE_HURRY:
            getattr(figures, name)[at] = boundary.figures(name, index)
    figures.finished[at] = True  # no actions: row and column counts stay 0


def _remove_abandoned_spills(scratch_dir: str | os.PathLike[str] | None) -> None:
    """Delete the working directories of solves whose process is gone (killed
    outright, so that it could not clean up): they can hold gigabytes."""
    root = Path(scratch_dir or tempfile.gettempdir())
    for spill in root.glob(f"{_SPILL_PREFIX}*-*"):
        pid = spill.name[len(_SPILL_PREFIX) :].split("-", 1)[0]
        if not pid.isdigit() or _process_exists(int(pid)):
            continue
        shutil.rmtree(spill, ignore_errors=True)


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class _SharedFigures:
    """What is known of every state, in arrays shared with the forked
    workers (`SharedArrays`: backed by a file on disk where there is room):
    the workers write the figures of the states they finish and read those
    of the states their layer exits to, and each process lets go of the
    pages it touched once its step is done (`release`).

    The states are held layer by layer, in the order of the solve's layers
    (`slot_of` maps a state's place in the table to its place here): a layer
    writes one run of each array, and its exits lie mostly in the next few
    ranks. In the table's order a layer's states are spread over the whole
    table, so that every layer wrote (and, its pages let go, faulted in
    again) a page of every array for most of its states: at the printed
    rules held so, the solve took a tenth more CPU (docs/performance.md).

    Held compactly, since this is most of a large solve's memory:
    - the values (bracket middles) in float64;
    - every guarantee as a float32 offset from the value, rounded toward its
      side's weaker end (`_OffsetColumn`): what is read back never claims more
      than was proven, by at most a float32 step of the offset (about 1e-17
      for the certified offsets, at most 1e-9) and two float64 steps of the
      value, so the 1e-9 certificate holds as computed;
    - outcome chances, the chance of never ending and the ending turns in
      float64: they are exact figures composed rank after rank, and shown
      to 1e-6 and below (float32 would move them by about 1e-7 a rank);
    - the buzzer values in float64: hurried play ranks strategies by
      differences of 1e-13 in them."""

    def __init__(
        self, n: int, terminals: int, hurried: bool, directory: str | os.PathLike[str] | None,
        slot_of: np.ndarray, layer_sizes: list[int],
    ) -> None:
        self.hurried = hurried  # without hurried play, its figures are never allocated
        self.slot_of = slot_of  # a state's place in the figures, by its place in the table (`_states_and_slots`)
        self.first_slot = offsets_of(np.asarray(layer_sizes, np.int64))
        self.store = store = SharedArrays(directory)
        self.middle = store.array((n,), np.float64)
        self.p1_guarantee = _OffsetColumn(store, self.middle, n, lower=True)
        self.p2_guarantee = _OffsetColumn(store, self.middle, n, lower=False)
        self.terminal = store.array((n, terminals), np.float64)
        self.unending = store.array((n,), np.float64)
        self.ending_turns = store.array((n,), np.float64)
        if hurried:
            self.hurried_p1_guarantee = _OffsetColumn(store, self.middle, n, lower=True)
            self.hurried_p2_guarantee = _OffsetColumn(store, self.middle, n, lower=False)
            self.p1_buzzer, self.p2_buzzer = store.array((n,), np.float64), store.array((n,), np.float64)
            self.p1_guarantee_u0 = _OffsetColumn(store, self.middle, n, lower=True)
            self.p2_guarantee_u0 = _OffsetColumn(store, self.middle, n, lower=False)
            self.p1_guarantee_u1 = _OffsetColumn(store, self.middle, n, lower=True)
            self.p2_guarantee_u1 = _OffsetColumn(store, self.middle, n, lower=False)
            self.fallback = store.array((n,), np.int8)
        self.row_count = store.array((n,), np.int16)
        self.col_count = store.array((n,), np.int16)
        self.finished = store.array((n,), np.bool_)

    def of_layer(self, number: int) -> slice:
        """The figures' places of layer `number`'s states, in their order."""
        return slice(int(self.first_slot[number]), int(self.first_slot[number + 1]))

    def release(self) -> None:
        """Let go of this process's resident pages of the figures (`SharedArrays.release`)."""
        self.store.release()


class _OffsetColumn:
    """One side's guarantee at every state, kept as a float32 offset from the
    state's value (`middle`, which must be written first) and read back in
    float64. A lower bound (P1's) is rounded down, an upper bound up, so
    that `middle[i] + offset[i]`, computed as it is read, is never on the
    stronger side of the figure written."""

    def __init__(self, store: SharedArrays, middle: np.ndarray, n: int, *, lower: bool) -> None:
        self.middle = middle
        self.offset = store.array((n,), np.float32)
        self.lower = lower

    def __len__(self) -> int:
        return int(self.offset.shape[0])

    def __getitem__(self, at) -> np.ndarray:
        return self.middle[at] + self.offset[at].astype(np.float64)

    def __setitem__(self, at, values) -> None:
        base, values = self.middle[at], np.asarray(values, np.float64)
        # Most offsets (a guarantee within 1e-9 of its value, or one a simple fraction away) are
        # float32 numbers: kept exactly, so that ties between equal guarantees stay ties.
        offset = (values - base).astype(np.float32)
        back = base + offset.astype(np.float64)
        inexact = back > values if self.lower else back < values
        if np.any(inexact):
            # Otherwise two float64 steps more toward the weaker side cover the rounding of the
            # difference and of the sum read back, and the float32 rounding is stepped that way too.
            sign = -1.0 if self.lower else 1.0
            where = np.flatnonzero(inexact)
            b, v = base[where], values[where]
            wanted = v - b + sign * 2.0 * np.spacing(np.maximum(np.abs(b), np.abs(v)))
            step = wanted.astype(np.float32)
            offset[where] = np.where(step.astype(np.float64) * -sign > wanted * -sign,
                                     np.nextafter(step, np.float32(sign * np.inf)), step)
        self.offset[at] = offset


@dataclass(frozen=True, eq=False)
class _LayerContext:
    """What every layer's solve reads; set before the workers are forked, so they inherit it."""

    game: Any  # a StochasticGame with a progress rank (and, folded, a seat order)
    layers: list[Layer]
    all_states: np.ndarray
    figures: _SharedFigures
    spill: str
    warm: WarmStart | None = None
    keep: _Keep = _Keep(hurried=True, strategies=True)
    checkpoint: Checkpoint | None = None  # where finished layers are kept, for a resumed solve


_CONTEXT: _LayerContext | None = None


def _context() -> _LayerContext:
    """The context of the layers being solved (set before the workers fork)."""
    if _CONTEXT is None:
        raise RuntimeError("no layers are being solved")
    return _CONTEXT


@dataclass(frozen=True)
class _LayerDone:
    states: int
    bellman_residual: float
    rounds: int
    certify_seconds: float
    phases: dict[str, float] = field(default_factory=dict)  # CPU seconds by phase (`phase_clock`) of the process that solved it
    hurried_rounds: tuple[str, ...] = ()  # `Rounds.label` of each side's hurried play


def _solve_layer_at(number: int) -> _LayerDone:
    """Solve layer `number` of the context, its exits already finished; record its figures."""
    ctx = _context()
    layer, f = ctx.layers[number], ctx.figures
    if layer.twin_of is not None:
        with phase_clock.phase("storing"):
            copied = _mirror_layer_at(number)
        return replace(copied, phases=phase_clock.taken())
    with phase_clock.phase("layer graphs"):
        lg = layer_graph(ctx.game, layer.states, ctx.all_states, labelled=False)  # a worker's exits are never shown
        x = f.slot_of[lg.exits]
        if not f.finished[x].all():
            raise ValueError(f"layer of rank {layer.rank} exits to a state that is not finished")
        swapped = ctx.game.swap(layer.states) if hasattr(ctx.game, "swap") else None
        mirror = seat_mirror(with_exit_payoffs(lg, np.zeros(lg.exits.size)), swapped, check_payoffs=False)
    hurried = ctx.keep.hurried
    exits = ExitFigures(
        f.p1_guarantee[x], f.p2_guarantee[x], f.middle[x], np.column_stack([f.terminal[x], f.unending[x]]),
        f.ending_turns[x], (f.p1_buzzer[x], f.p2_buzzer[x]) if hurried else None,
        ScoredGuarantees(f.p1_guarantee_u0[x], f.p2_guarantee_u0[x], f.p1_guarantee_u1[x], f.p2_guarantee_u1[x])
        if hurried else None,
        (f.hurried_p1_guarantee[x], f.hurried_p2_guarantee[x]) if hurried else None,
        _twin_p1_guarantee(ctx, lg.exits) if mirror is not None else None,
    )
    f.release()  # the exits' figures are copied: their pages need not stay while the layer is solved
    done = solve_layer(lg, mirror, exits, ctx.warm(layer.states) if ctx.warm is not None else None, hurried)
    with phase_clock.phase("storing"):
        finished = _record_layer(ctx, number, layer, lg, done)
    return replace(finished, phases=phase_clock.taken())


def _record_layer(ctx: _LayerContext, number: int, layer: Layer, lg: LayerGraph, done: LayerSolution) -> _LayerDone:
    """Write a solved layer's figures to shared memory and its strategies to the spill directory."""
    f = ctx.figures
    hurried = ctx.keep.hurried
    at = np.searchsorted(ctx.all_states, layer.states)
    g = lg.graph
    if ctx.keep.strategies:
        np.savez(
            os.path.join(ctx.spill, f"{number}.npz"), at=at, row_ptr=g.row_ptr, row_actions=g.row_actions,
            row=done.row_strategy, col_ptr=g.col_ptr, col_actions=g.col_actions, col=done.col_strategy,
        )
    own = f.of_layer(number)
    f.middle[own] = done.middle  # first: the guarantees are kept as offsets from it
    f.p1_guarantee[own], f.p2_guarantee[own] = done.solve_guarantees
    f.terminal[own], f.unending[own] = done.terminal_probability, done.unending_probability
    f.ending_turns[own] = done.ending_turns
    if hurried:
        assert done.buzzer is not None and done.scored is not None and done.fallback is not None
        f.hurried_p1_guarantee[own], f.hurried_p2_guarantee[own] = done.p1_guarantee, done.p2_guarantee
        f.p1_buzzer[own], f.p2_buzzer[own] = done.buzzer
        s = done.scored
        f.p1_guarantee_u0[own], f.p2_guarantee_u0[own], f.p1_guarantee_u1[own], f.p2_guarantee_u1[own] = s.p1_u0, s.p2_u0, s.p1_u1, s.p2_u1
        f.fallback[own] = done.fallback
    f.row_count[own], f.col_count[own] = np.diff(g.row_ptr), np.diff(g.col_ptr)
    finished = _LayerDone(int(at.size), done.bellman_residual, done.rounds, done.certify_seconds,
                          hurried_rounds=tuple(r.label for r in done.hurried_rounds))
    _keep_layer(ctx, number, at, finished)
    f.finished[own] = True
    f.release()
    return finished


def _mirror_layer_at(number: int) -> _LayerDone:
    """Record layer `number`'s figures as those of its twin layer (finished)
    seen from the other seat: each side's guarantee is what the other side's
    concedes at the twin, the outcomes swap seats, and each side plays what
    the other plays there. The game is symmetric, so this is exactly what
    solving the layer would give; its Bellman residual is its twin's."""
    ctx = _context()
    layer, f, game = ctx.layers[number], ctx.figures, ctx.game
    assert layer.twin_of is not None  # only twin layers are mirrored
    source = ctx.layers[layer.twin_of]
    swapped = game.swap(layer.states)
    at = np.searchsorted(ctx.all_states, layer.states)
    local = np.searchsorted(source.states, swapped)  # each state's twin among its source layer's states
    if np.any(local >= source.states.size) or np.any(source.states[np.minimum(local, source.states.size - 1)] != swapped):
        raise ValueError(f"layer of rank {layer.rank} mirrors a layer that does not hold its twins")
    own, twin = f.of_layer(number), f.of_layer(layer.twin_of).start + local
    if not f.finished[twin].all():
        raise ValueError(f"layer of rank {layer.rank} mirrors a layer that is not finished")
    total = 2.0 * game.unending_payoff
    f.middle[own] = total - f.middle[twin]  # first: the guarantees are kept as offsets from it
    f.p1_guarantee[own], f.p2_guarantee[own] = total - f.p2_guarantee[twin], total - f.p1_guarantee[twin]
    f.terminal[own] = f.terminal[twin][:, np.asarray(game.terminal_swap)]
    f.unending[own], f.ending_turns[own] = f.unending[twin], f.ending_turns[twin]
    if ctx.keep.hurried:
        f.hurried_p1_guarantee[own] = total - f.hurried_p2_guarantee[twin]
        f.hurried_p2_guarantee[own] = total - f.hurried_p1_guarantee[twin]
        f.p1_buzzer[own], f.p2_buzzer[own] = f.p2_buzzer[twin], f.p1_buzzer[twin]
        # Endless play scored 0 at a state is scored 2u at its twin, seen from the other seat.
        f.p1_guarantee_u0[own], f.p2_guarantee_u0[own] = total - f.p2_guarantee_u1[twin], total - f.p1_guarantee_u1[twin]
        f.p1_guarantee_u1[own], f.p2_guarantee_u1[own] = total - f.p2_guarantee_u0[twin], total - f.p1_guarantee_u0[twin]
        fell = f.fallback[twin]
        f.fallback[own] = ((fell & 1) << 1) | ((fell & 2) >> 1)
    f.row_count[own], f.col_count[own] = f.col_count[twin], f.row_count[twin]
    if ctx.keep.strategies:
        # Each side plays what the other plays at the twin: the assembly reads them from the source's
        # file, so this one says only where its states lie in the table and among the source's.
        np.savez(os.path.join(ctx.spill, f"{number}.npz"), at=at, local=local)
    _keep_layer(ctx, number, at, _LayerDone(int(at.size), 0.0, 0, 0.0))
    f.finished[own] = True
    f.release()
    return _LayerDone(int(at.size), 0.0, 0, 0.0)


def _twin_p1_guarantee(ctx: _LayerContext, exits: np.ndarray) -> np.ndarray | None:
    """P1's guarantee at the seat-swapped twin of each exit (None if a twin is not a known state)."""
    twins = ctx.game.swap(ctx.all_states[exits])
    at = np.searchsorted(ctx.all_states, twins)
    if at.size and (at.max() >= ctx.all_states.size or np.any(ctx.all_states[at] != twins)):
        return None
    at = ctx.figures.slot_of[at]
    if not ctx.figures.finished[at].all():
        return None
    return ctx.figures.p1_guarantee[at]


def _run_layers(
    layers: list[Layer], workers: int, restored: frozenset[int] = frozenset(),
) -> Iterator[tuple[int, _LayerDone]]:
    """Solve the context's layers, each once every rank it exits to is done
    (`wavefront.Wavefront`: the rule and the order `wavefront.simulate`
    replays), on `workers` forked processes (in this one if 1); yields each
    (its number, its figures) as it finishes. The layers `restored` are
    finished already."""
    front = Wavefront(layers, restored)
    if workers <= 1 or len(layers) <= 1:
        for i in list(front.waiting):
            stop_if_asked()
            if not front.ready(i):
                raise ValueError(f"layer of rank {layers[i].rank} exits to a rank that is not finished")
            held = phase_clock.taken()  # set aside while it runs: the layer's phases are then its own, as a worker's are
            try:
                done = _solve_layer_at(i)
            finally:
                phase_clock.merge(held)
            yield i, done
            front.finish(i)
        return
    pool = _layer_pool(workers)
    running: dict = {}
    try:
        while front.waiting or running:
            for i in front.start(workers - len(running)):
                running[pool.submit(_solve_layer_at, i)] = i
            if not running:
                raise ValueError(f"layer of rank {layers[front.waiting[0]].rank} exits to a rank that is never solved")
            completed, _ = futures.wait(running, return_when=futures.FIRST_COMPLETED)
            stop_if_asked()
            for future in completed:
                i = running.pop(future)
                yield i, future.result()
                front.finish(i)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _layer_pool(workers: int) -> futures.ProcessPoolExecutor:
    # Forked: the workers start with the context and every compiled kernel already loaded.
    return futures.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))


def _assemble(
    all_states: np.ndarray, figures: _SharedFigures, numbers: list[int], twin_of: dict[int, int], spill: str,
    shown: bool = False,
) -> dict[str, np.ndarray]:
    """The solution's arrays, each written to a file in `spill` a chunk at a
    time and returned memory-mapped (the file unlinked at once), its pages let
    go as they are written: no whole array is ever built in memory. The
    strategies come from the files of the layers `numbers`; a twin layer's
    (`twin_of`: its source) are its source's, each side the other's, read
    from the source's file with the source's own.

    Two arrays at a time, on threads (the copies and the kernels let go of
    the interpreter): the workers have finished, and the cores would
    otherwise wait on this one. `shown`: a progress bar (a line every 30 s
    off a terminal): at the printed rules this takes about half a minute."""
    out: dict[str, np.ndarray] = {"states": all_states}
    del figures.p1_guarantee, figures.p2_guarantee  # the value solve's: the reported strategies' are kept
    columns = (("middle", "middle"), ("p1_guarantee", "hurried_p1_guarantee"), ("p2_guarantee", "hurried_p2_guarantee"),
               ("terminal_probability", "terminal"), ("unending_probability", "unending"),
               ("ending_turns", "ending_turns"), *((name, name) for name in PER_STATE_HURRY))

    def mapped_column(name: str, held_as: str) -> np.ndarray:
        dtype: type = np.int8 if name == "fallback" else np.float64  # the table's types, whatever they are held in here
        return _mapped_column(os.path.join(spill, f"out-{name}.npy"), getattr(figures, held_as), dtype, figures.release,
                              figures.slot_of)

    twins_of: dict[int, list[int]] = collections.defaultdict(list)
    for twin, mirrored in twin_of.items():
        twins_of[mirrored].append(twin)
    sources = [number for number in numbers if number not in twin_of]  # a twin's strategies are its source's
    if not set(twins_of) <= set(sources):  # else a twin's strategies would never be written
        raise ValueError("a twin layer mirrors a layer whose strategies are not assembled")
    for side in ("row", "col"):
        count = getattr(figures, f"{side}_count")[figures.slot_of]  # in the table's order
        out[f"{side}_ptr"] = _mapped(os.path.join(spill, f"out-{side}_ptr.npy"), offsets_of(count.astype(np.int64)))
        delattr(figures, f"{side}_count")
    # The bands are cut for the weights, the larger items.
    bands = {side: _bands(np.asarray(out[f"{side}_ptr"]), np.dtype(np.float64).itemsize) for side in ("row", "col")}
    # A step is a column written, or one layer's file read into a band of a side's strategies.
    steps = len(columns) + len(sources) * sum(len(cut) for cut in bands.values())
    with (PhaseProgress("assembling the table", steps, unit=" steps", shown=shown) as bar,
          futures.ThreadPoolExecutor(max(1, min(ASSEMBLY_THREADS, usable_cores()))) as pool):
        for (name, held_as), column in zip(columns, pool.map(mapped_column, *zip(*columns))):
            out[name] = column
            delattr(figures, held_as)  # the shared memory goes with its last reference
            bar.advance(1)
        for strategies in pool.map(
            lambda side: _assembled_strategies(
                side, np.asarray(out[f"{side}_ptr"]), bands[side], sources, twins_of, spill, bar.advance,
            ),
            ("row", "col"),
        ):
            out.update(strategies)
    return out


ASSEMBLY_THREADS = 2  # arrays `_assemble` writes at once
_IN_ORDER = np.zeros(0, np.int64)  # `_scatter_band`'s `local` where a layer's file holds its own strategies
def _assembled_strategies(
    side: str, ptr: np.ndarray, cut: list[tuple[int, int]], sources: list[int], twins_of: dict[int, list[int]],
    spill: str, advance: Callable[[int], None],
) -> dict[str, np.ndarray]:
    """A side's actions and weights (`_assemble`), at the offsets `ptr`, memory-mapped, a band of
    states (`cut`, from `_bands`) at a time: from the files of the layers `sources`, each also
    filling its twin layers' (`twins_of`). `advance(1)` as each layer's file is read into a band."""
    # A side's actions and weights share their offsets: one pass over the layers' files fills both.
    arrays = ((f"{side}_actions", f"{side}_actions", np.int16), (f"{side}_strategy", side, np.float64))
    paths, starts = [], []
    for name, _, kind in arrays:
        paths.append(os.path.join(spill, f"out-{name}.npy"))
        target = np.lib.format.open_memmap(paths[-1], mode="w+", dtype=kind, shape=(int(ptr[-1]),))
        starts.append(target.offset)  # where the items begin, past the .npy header
        del target
    with contextlib.ExitStack() as stack:
        files = [stack.enter_context(open(path, "r+b")) for path in paths]
        for first, last in cut:
            # Every layer's states are spread over the whole table: scattered straight into
            # the file, each layer would dirty pages everywhere and every page be written
            # once per layer (122 GB written for the printed rules' 12 GB table). A band
            # is filled in memory from every layer, then written once, past any mapping.
            base = int(ptr[first])
            bands = [np.empty(int(ptr[last]) - base, kind) for _, _, kind in arrays]
            for number in sources:
                with np.load(os.path.join(spill, f"{number}.npz")) as piece:
                    at = piece["at"]
                    lo, hi = np.searchsorted(at, [first, last])
                    if hi > lo:
                        piece_ptr = piece[f"{side}_ptr"]
                        for (_, source, _), band in zip(arrays, bands):
                            _scatter_band(
                                at, _IN_ORDER, piece_ptr, piece[source], ptr, base, int(lo), int(hi), band,
                            )
                    for twin in twins_of.get(number, ()):
                        _scatter_twin(piece, os.path.join(spill, f"{twin}.npz"), side, ptr, first, last, bands)
                advance(1)
            for file, start, band in zip(files, starts, bands):
                file.seek(start + base * band.itemsize)
                band.tofile(file)
            del bands
    strategies = {}
    for (name, _, _), path in zip(arrays, paths):
        strategies[name] = np.load(path, mmap_mode="r")
        os.unlink(path)
    return strategies


ASSEMBLY_BAND_BYTES = 1 << 29
"""The most of a side's strategy weights `_assemble` fills in memory at a time
(its actions' band beside it takes a quarter of that). Each band reads every
layer's file again, so larger bands read less and hold more."""


def _bands(ptr: np.ndarray, itemsize: int) -> list[tuple[int, int]]:
    """Ranges [first, last) of states whose segments (`ptr`) fill at most
    `ASSEMBLY_BAND_BYTES` of items each (more where one state alone does); one
    empty range where there are no states."""
    states = ptr.size - 1
    per_band = max(1, ASSEMBLY_BAND_BYTES // itemsize)
    cuts = np.searchsorted(ptr, np.arange(per_band, int(ptr[-1]), per_band), side="right") - 1
    bounds = np.unique(np.concatenate([[0], np.clip(cuts, 0, states), [states]]))
    if bounds.size < 2:
        return [(0, states)]
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


_COLUMN_CHUNK = 1 << 22  # states a step when writing a column out


def _mapped_column(
    path: str, column, dtype, release_source: Callable[[], None], slot_of: np.ndarray,
) -> np.ndarray:
    """`column` (a shared array or an `_OffsetColumn`, its state i at
    `slot_of[i]`) written to `path` as `dtype` in the states' order, a chunk
    at a time, and read back memory-mapped; the file is unlinked at once (the
    mapping keeps its data until the array is dropped). `release_source()`
    lets go of the pages of the chunk just read."""
    n = len(column)
    shape = (n, *np.shape(column)[1:]) if isinstance(column, np.ndarray) else (n,)
    target = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
    for lo in range(0, n, _COLUMN_CHUNK):
        target[lo : lo + _COLUMN_CHUNK] = column[slot_of[lo : lo + _COLUMN_CHUNK]]
        _release_mapping(target)
        release_source()  # pages read again for the next chunk are faulted in a run at a time (read-ahead)
    target.flush()
    del target
    mapped = np.load(path, mmap_mode="r")
    os.unlink(path)
    return mapped


def _release_mapping(a: np.memmap) -> None:
    """Write `a`'s dirty pages to its file and drop them from this process's
    memory (the page cache keeps them, to give back under pressure)."""
    a.flush()
    release_pages(a)


def _mapped(path: str, a: np.ndarray) -> np.ndarray:
    """`a` written to `path` and read back memory-mapped; the file is unlinked
    at once (the mapping keeps its data until the array is dropped)."""
    np.save(path, a)
    mapped = np.load(path, mmap_mode="r")
    os.unlink(path)
    return mapped


def _scatter_twin(piece, path: str, side: str, ptr: np.ndarray, first: int, last: int, bands: list[np.ndarray]) -> None:
    """Into `bands` (a side's actions and weights from state `first` on), the
    twin layer's at `path` that lie in [first, last): at each, its side plays
    what the other side plays at its twin in the source layer (`piece`)."""
    other = "col" if side == "row" else "row"
    with np.load(path) as twin:
        at = twin["at"]
        lo, hi = np.searchsorted(at, [first, last])
        if hi > lo:
            local, source_ptr, base = twin["local"], piece[f"{other}_ptr"], int(ptr[first])
            for source, band in zip((f"{other}_actions", other), bands):
                _scatter_band(at, local, source_ptr, piece[source], ptr, base, int(lo), int(hi), band)


@numba.njit(cache=True, nogil=True)
def _scatter_band(at, local, src_ptr, src_items, dst_ptr, base, lo, hi, band):
    """Copy the segment of `src_items` of local state `local[j]` (of j itself
    where `local` is empty), for j in [lo, hi), to the segment of global
    state at[j] in `band`, which holds the items from `base` on."""
    for j in range(lo, hi):
        d = dst_ptr[at[j]] - base
        s = local[j] if local.shape[0] else j
        for k in range(src_ptr[s], src_ptr[s + 1]):
            band[d] = src_items[k]
            d += 1
