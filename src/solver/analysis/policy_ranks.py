"""A policy's two games against a solved table, without a two-sided solve.

With P1 following a fixed policy, P2 alone has choices: its best response
is a one-player problem (`best_response`), and its table strategy makes a
Markov chain with the policy (`absorption`). Both are solved together, rank
by rank from the highest (no turn lowers the progress rank), over the same
stage games: each state is expanded once, for both games, and no strategy,
hurried play or certificate of a two-sided solve is computed or kept. What
is kept per state is what lower ranks read at their exits: the best
response's value, and for each game the chance that P1 wins and that play
never ends.

The figures are those a rank-by-rank solve of each policy game gives
(`policy_play.play_figures`, the reference in the tests), to rounding: the
best response's value is exact, and where several best responses share it,
the one reported ends play most surely, as the solve's hurried play does.
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent import futures
from dataclasses import asdict, dataclass

import numpy as np
from numba import njit
from tqdm import tqdm

from ..core.absorption import outcome_probabilities
from ..core.best_response import best_response, pure_strategy
from ..core.components import successor_kernel
from ..core.graph import GameGraph, offsets_of, segment_positions
from ..core.layered import LayerGraph, enumerate_by_rank, layer_graph, with_exit_payoffs
from ..core.outcome import Seat, terminal_outcomes, won_by
from ..core.protocol import StochasticGame
from ..core.result import SolveResult
from ..core.shared_arrays import SharedArrays
from .policy_play import PlayFigures, Policy, PolicyPlay

OPTIMAL_TOL = 1e-12
"""P2's actions within this of its best response's value (times the payoff
scale) are its optimal ones, among which the one ending play most surely is
taken where it matters."""


@dataclass(frozen=True)
class PolicyGames:
    """A policy (as P1) against P2's table strategy and against P2's best response, from the start."""

    against_optimal: PlayFigures
    against_best_response: PlayFigures
    mirrored: bool
    """Whether the start is its own seat-swapped twin and, at every state
    solved, P2's table strategy is P1's at the twin, exactly: then P1's table
    strategy against the policy as P2 is the mirror image of the first game."""

    @property
    def states(self) -> int | None:
        """States the pass covered, for both games."""
        return self.against_best_response.states

    def as_json(self) -> dict:
        return {"against_optimal": asdict(self.against_optimal), "against_best_response": asdict(self.against_best_response),
                "mirrored": self.mirrored}

    @classmethod
    def from_json(cls, entry: dict) -> PolicyGames:
        return cls(PlayFigures(**entry["against_optimal"]), PlayFigures(**entry["against_best_response"]),
                   bool(entry["mirrored"]))


def policy_games(
    game: StochasticGame, table: SolveResult, policy: Policy, start: int, *, workers: int = 1,
    show_progress: bool = False,
) -> PolicyGames:
    """`policy` as P1 from the state coded `start`, against P2's strategy in
    `table` and against P2's best response to it (see the module docstring),
    on `workers` forked processes, with a progress bar if `show_progress`.
    `game` must have a progress rank and `table` hold every state reachable
    from `start`."""
    global _CONTEXT
    wrapped = PolicyPlay(game, policy, None)
    layers, universe = _states_by_rank(wrapped, table, policy, start, workers)
    outcomes = terminal_outcomes(game)
    ends = np.zeros((len(outcomes), 2))  # each terminal outcome as (P1 wins, never ends)
    ends[won_by(outcomes, Seat.P1), 0] = 1.0
    _CONTEXT = _Context(wrapped, table, layers, universe, universe is table.states, _Figures(universe.size, len(layers)),
                        ends)
    try:
        with tqdm(desc="policy games", total=int(universe.size), unit=" states", delay=1.0, disable=not show_progress) as bar:
            for done in _run(len(layers), workers):
                bar.update(done)
        f = _CONTEXT.figures
        i = int(np.searchsorted(universe, start))
        half = float(game.unending_payoff)
        return PolicyGames(
            against_optimal=_figures_at(f.optimal_p1[i], f.optimal_unending[i], half, None, universe.size),
            against_best_response=_figures_at(f.best_p1[i], f.best_unending[i], half, f.best_value[i], universe.size),
            mirrored=_own_twin(game, start) and bool(f.mirrored.all()),
        )
    finally:
        _CONTEXT = None


def _figures_at(p1: float, unending: float, half: float, value: float | None, states: int) -> PlayFigures:
    p1, unending = float(p1), float(unending)
    return PlayFigures(value=p1 + half * unending if value is None else float(value), p1_win=p1,
                       p2_win=1.0 - p1 - unending, states=states)


def _states_by_rank(
    wrapped: PolicyPlay, table: SolveResult, policy: Policy, start: int, workers: int, chunk: int = 1 << 22,
) -> tuple[list[np.ndarray], np.ndarray]:
    """The states to solve, sorted (the universe), and their indices in it
    rank by rank from the highest (each rank's ascending): every state P2
    can reach against the policy from `start`. Where the policy plays every
    action at every state of the table, those are the table's states,
    grouped by rank without expanding any; otherwise they are enumerated."""
    if _plays_every_action(table, policy, chunk):
        ranks = np.concatenate([wrapped.progress_rank(np.asarray(table.states[lo : lo + chunk]))
                                for lo in range(0, table.num_states, chunk)])
        order = np.argsort(-ranks, kind="stable")  # within a rank, still in the table's order
        cuts = np.flatnonzero(np.diff(ranks[order])) + 1
        return np.split(order, cuts), table.states
    layers = sorted(enumerate_by_rank(wrapped, np.array([start], np.int64), workers=workers), key=lambda layer: -layer.rank)
    universe = np.sort(np.concatenate([layer.states for layer in layers]))
    return [np.searchsorted(universe, layer.states) for layer in layers], universe


def _plays_every_action(table: SolveResult, policy: Policy, chunk: int) -> bool:
    """Whether `policy` gives every P1 action of every state of `table` a positive weight."""
    for lo in range(0, table.num_states, chunk):
        hi = min(lo + chunk, table.num_states)
        ptr = np.asarray(table.row_ptr[lo : hi + 1])
        weights = policy(np.asarray(table.states[lo:hi]), ptr - ptr[0], np.asarray(table.row_actions[ptr[0] : ptr[-1]]))
        if not np.all(weights > 0):
            return False
    return True


def _own_twin(game: StochasticGame, start: int) -> bool:
    twin = game.swap(np.array([start], np.int64))
    return twin is not None and int(twin[0]) == start


class _Figures:
    """Per state of the universe (sorted codes), in arrays shared with the
    workers (`SharedArrays`: backed by a file on disk where there is room,
    so that each process keeps only the pages of the rank it is on)."""

    def __init__(self, size: int, layers: int) -> None:
        self.store = store = SharedArrays()
        self.best_value = store.array((size,), np.float64)
        self.best_p1 = store.array((size,), np.float64)  # P(P1 wins) against the best response
        self.best_unending = store.array((size,), np.float64)
        self.optimal_p1 = store.array((size,), np.float64)  # ... against P2's table strategy
        self.optimal_unending = store.array((size,), np.float64)
        self.finished = store.array((size,), np.bool_)
        self.mirrored = store.array((layers,), np.bool_)  # per layer: P2's table strategy is P1's at the twins
        self.failed = store.array((1,), np.bool_)  # a worker failed: the others stop waiting for its ranks


@dataclass(frozen=True, eq=False)
class _Context:
    """What every rank's solve reads; set before the workers fork, so they inherit it."""

    wrapped: PolicyPlay
    table: SolveResult
    layers: list[np.ndarray]  # each rank's states, by their index in the universe
    universe: np.ndarray
    is_table: bool  # the universe is the table's states: a state's index in one is its index in the other
    figures: _Figures
    ends: np.ndarray  # each terminal outcome of the game as (P1 wins, never ends)


_CONTEXT: _Context | None = None
_WAIT = 0.002  # seconds between looks at whether a rank's exits are finished


def _run(count: int, workers: int):
    """Solve layers 0 .. count - 1 (highest rank first), yielding each one's size.
    With workers, each takes the next layer in order and waits, once its stage
    games are built, for the layers it exits to: they were taken before it."""
    if workers <= 1 or count <= 1:
        for number in range(count):
            yield _solve_layer_at(number)
        return
    pool = futures.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))
    try:
        yield from pool.map(_solve_layer_at, range(count))
    finally:
        if _CONTEXT is not None:  # a worker still waiting for a rank that will never finish stops
            _CONTEXT.figures.failed[0] = True
        pool.shutdown(wait=True, cancel_futures=True)


def _solve_layer_at(number: int) -> int:
    """Both games on one rank's states, once every state they exit to is finished."""
    ctx = _CONTEXT
    assert ctx is not None
    try:
        return _solve_layer(ctx, number)
    except BaseException:
        ctx.figures.failed[0] = True
        raise


def _solve_layer(ctx: _Context, number: int) -> int:
    f, at = ctx.figures, ctx.layers[number]
    codes = np.asarray(ctx.universe[at])
    part = layer_graph(ctx.wrapped, codes, ctx.universe, labelled=False)
    x = part.exits
    in_table = at if ctx.is_table else _table_index(ctx.table, codes)
    table_strategy = _table_col_strategy(ctx.table, in_table, part.graph)
    f.mirrored[number] = _strategies_mirror(ctx, codes, in_table, part.graph, table_strategy)
    while not f.finished[x].all():
        if f.failed[0]:
            raise RuntimeError("another rank's solve failed")
        time.sleep(_WAIT)
    f.best_value[at], f.best_p1[at], f.best_unending[at] = _against_best_response(part, ctx.ends, f, x)
    graph = with_exit_payoffs(part, f.optimal_p1[x])  # its payoffs are not read: the rows below are
    rows = np.vstack([ctx.ends, np.column_stack([f.optimal_p1[x], f.optimal_unending[x]])])
    f.optimal_p1[at], f.optimal_unending[at] = _p1_and_unending(graph, table_strategy, rows)
    f.finished[at] = True
    f.store.release()  # this rank's pages, and those of the ranks it exits to, are done with here
    ctx.table.release_mapped_pages()  # and so are those of the (memory-mapped) table it read
    return int(codes.size)


def _strategies_mirror(ctx: _Context, codes: np.ndarray, in_table: np.ndarray, graph: GameGraph, col: np.ndarray) -> bool:
    """Whether P2's table strategy `col` at each of `codes` (at `in_table` in
    the table) is exactly P1's at its seat-swapped twin."""
    twins = ctx.wrapped.game.swap(codes)
    if twins is None:
        return False
    local = np.minimum(np.searchsorted(codes, twins), codes.size - 1)
    if np.array_equal(codes[local], twins):  # twins share a rank where ranks see no seats: look there first
        twin_index = in_table[local]
    else:
        try:
            twin_index = _table_index(ctx.table, twins)
        except KeyError:
            return False
    table = ctx.table
    if np.any(table.row_ptr[twin_index + 1] - table.row_ptr[twin_index] != np.diff(np.asarray(graph.col_ptr))):
        return False
    rows = segment_positions(table.row_ptr, twin_index)
    return bool(np.array_equal(table.row_actions[rows], graph.col_actions) and np.array_equal(table.row_strategy[rows], col))


def _table_index(table: SolveResult, codes: np.ndarray) -> np.ndarray:
    index = np.searchsorted(table.states, codes)
    if index.size and (index.max() >= table.num_states or np.any(table.states[index] != codes)):
        raise KeyError("a state the table does not hold")
    return index


def _table_col_strategy(table: SolveResult, index: np.ndarray, graph: GameGraph) -> np.ndarray:
    """P2's strategy in `table` at its states `index`, over `graph`'s P2 actions (the same, checked)."""
    counts = np.diff(np.asarray(graph.col_ptr))
    if np.any(table.col_ptr[index + 1] - table.col_ptr[index] != counts):
        raise ValueError("the table's actions differ from the game's: a table of other rules?")
    at = segment_positions(table.col_ptr, index)
    if np.any(table.col_actions[at] != graph.col_actions):
        raise ValueError("the table's actions differ from the game's: a table of other rules?")
    return np.asarray(table.col_strategy[at], np.float64)


def _against_best_response(part: LayerGraph, ends: np.ndarray, f: _Figures, x: np.ndarray):
    """(value, P(P1 wins), P(never ends)) per state of `part` against P2's best response."""
    graph = with_exit_payoffs(part, f.best_value[x])
    fixed = np.ones(graph.num_states)  # P1 has one action: its policy, as chance
    values, choice = best_response(graph, Seat.P1, fixed)
    col = pure_strategy(graph, Seat.P2, choice)
    if not np.any(f.best_unending[x] > 0) and _every_state_can_end(graph, fixed, col):
        # Play surely ends: P(P1 wins) is the value, and no best response ends play more surely.
        return values, values, np.zeros(graph.num_states)
    rows = np.vstack([ends, np.column_stack([f.best_p1[x], f.best_unending[x]])])
    col = _ending_most_surely(part, graph, values, f.best_unending[x])
    p1, unending = _p1_and_unending(graph, col, rows)
    return values, p1, unending


def _p1_and_unending(graph: GameGraph, col: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    terminal, unending = outcome_probabilities(graph, np.ones(graph.num_states), col, rows)
    return terminal[:, 0], unending


def _every_state_can_end(graph: GameGraph, row: np.ndarray, col: np.ndarray) -> bool:
    G = graph.kernel_arrays()
    succ_ptr, succ = successor_kernel(*G[:6], row, col)
    return bool(_can_end(*G[:6], row, col, succ_ptr, succ).all())


@njit(cache=True)
def _can_end(row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, row_w, col_w, succ_ptr, succ):
    """Per state: whether play under the weights leaves it for a terminal
    outcome (an exit included) with positive probability, now or later."""
    n = row_ptr.shape[0] - 1
    count = np.zeros(n + 1, np.int64)
    for s in range(n):
        for e in range(succ_ptr[s], succ_ptr[s + 1]):
            count[succ[e] + 1] += 1
    for s in range(n):
        count[s + 1] += count[s]
    fill = count[:-1].copy()
    pred = np.empty(count[n], np.int64)
    for s in range(n):
        for e in range(succ_ptr[s], succ_ptr[s + 1]):
            pred[fill[succ[e]]] = s
            fill[succ[e]] += 1
    can = np.zeros(n, np.bool_)
    queue = np.empty(n, np.int64)
    tail = 0
    for s in range(n):
        nn = col_ptr[s + 1] - col_ptr[s]
        for r in range(row_ptr[s + 1] - row_ptr[s]):
            if row_w[row_ptr[s] + r] <= 0.0:
                continue
            for c in range(nn):
                if col_w[col_ptr[s] + c] <= 0.0:
                    continue
                k = cell_ptr[s] + r * nn + c
                for o in range(out_ptr[k], out_ptr[k + 1]):
                    if out_next[o] < 0 and out_prob[o] > 0.0:
                        can[s] = True
        if can[s]:
            queue[tail] = s
            tail += 1
    head = 0
    while head < tail:
        t = queue[head]
        head += 1
        for e in range(count[t], count[t + 1]):
            s = pred[e]
            if not can[s]:
                can[s] = True
                queue[tail] = s
                tail += 1
    return can


def _ending_most_surely(part: LayerGraph, graph: GameGraph, values: np.ndarray, exit_unending: np.ndarray) -> np.ndarray:
    """P2's strategy: of its best responses (the actions keeping `values`),
    one that leaves play the least chance of never ending: itself a best
    response, in the game of those actions alone, to the policy, with never
    ending costing P2 a point and every ending nothing."""
    keep = _optimal_cells(graph, values)
    narrowed = _with_cells(graph, keep)
    own = part.graph.terminal_payoff.size
    narrowed = GameGraph(**{**narrowed.__dict__, "terminal_payoff": np.concatenate([np.zeros(own), exit_unending]),
                            "unending_payoff": 1.0})
    _, choice = best_response(narrowed, Seat.P1, np.ones(graph.num_states))
    kept = np.flatnonzero(keep)  # one row: P2's actions are the cells
    col = np.zeros(graph.col_actions.size)
    col[kept[np.asarray(narrowed.col_ptr[:-1]) + choice]] = 1.0
    return col


def _optimal_cells(graph: GameGraph, values: np.ndarray) -> np.ndarray:
    """Per cell (P1 has one action: a cell is a P2 action): whether it keeps the state's value."""
    nxt = np.asarray(graph.out_next)
    pay = np.asarray(graph.terminal_payoff)
    cont = np.where(nxt >= 0, values[np.maximum(nxt, 0)], pay[np.maximum(-1 - nxt, 0)])
    per_cell = np.diff(np.asarray(graph.out_ptr))
    q = np.bincount(np.repeat(np.arange(per_cell.size), per_cell), weights=np.asarray(graph.out_prob) * cont,
                    minlength=per_cell.size)
    state = np.repeat(np.arange(graph.num_states), np.diff(np.asarray(graph.col_ptr)))
    scale = max(1.0, float(np.abs(pay).max(initial=0.0)))
    return q <= values[state] + OPTIMAL_TOL * scale


def _with_cells(graph: GameGraph, keep: np.ndarray) -> GameGraph:
    """`graph` (P1 one action everywhere) with only P2's actions in `keep`."""
    state = np.repeat(np.arange(graph.num_states), np.diff(np.asarray(graph.col_ptr)))
    counts = np.bincount(state[keep], minlength=graph.num_states)
    cells = np.flatnonzero(keep)
    out_ptr = np.asarray(graph.out_ptr)
    at = segment_positions(out_ptr, cells)
    return GameGraph(
        states=graph.states, row_ptr=graph.row_ptr, row_actions=graph.row_actions,
        col_ptr=offsets_of(counts), col_actions=np.asarray(graph.col_actions)[keep], cell_ptr=offsets_of(counts),
        out_ptr=offsets_of(out_ptr[cells + 1] - out_ptr[cells]), out_next=np.asarray(graph.out_next)[at],
        out_prob=np.asarray(graph.out_prob)[at], terminal_payoff=graph.terminal_payoff,
        terminal_labels=graph.terminal_labels, unending_payoff=graph.unending_payoff, action_labels=graph.action_labels,
    )
