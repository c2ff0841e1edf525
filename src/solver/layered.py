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

Only the ranks being solved have a graph (one per worker process); what is
kept per state is its code, values, guarantees, strategies and outcome
probabilities.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass

import numba
import numpy as np

from .bracketing import bracket_values, seat_mirror
from .certify import bellman_residual, best_response_values, outcome_probabilities
from .components import strongly_connected_components
from .graph import GameGraph, GraphTooLargeError, _ptr, _sorted_contains, expansion_of, graph_of


@dataclass(frozen=True, eq=False)
class Layer:
    rank: int
    states: np.ndarray  # sorted codes


def enumerate_by_rank(
    game, roots: np.ndarray, progress: Callable[[int], None] | None = None,
    max_states: int | None = None, chunk: int = 1 << 16,
) -> list[Layer]:
    """Every state reachable from `roots`, grouped by rank, lowest rank first.
    `progress(count)` gets the number found so far; past `max_states` it
    raises `GraphTooLargeError`."""
    roots = np.unique(np.asarray(roots, np.int64))
    pending: dict[int, list[np.ndarray]] = {}
    _add_seeds(pending, roots, game.progress_rank(roots))
    layers: list[Layer] = []
    found = 0
    while pending:
        rank = min(pending)
        layer = np.unique(np.concatenate(pending.pop(rank)))
        frontier = layer
        while frontier.size:
            same = []
            for lo in range(0, frontier.size, chunk):
                nxt = game.expand(frontier[lo : lo + chunk]).out_next
                nxt = np.unique(nxt[nxt >= 0])
                ranks = game.progress_rank(nxt)
                if ranks.size and ranks.min() < rank:
                    raise ValueError(f"a transition lowers the progress rank (from {rank} to {int(ranks.min())})")
                same.append(nxt[ranks == rank])
                later = ranks != rank
                _add_seeds(pending, nxt[later], ranks[later])
            same = np.unique(np.concatenate(same))
            frontier = same[~_sorted_contains(layer, same)] if layer.size else same
            if frontier.size:
                layer = np.union1d(layer, frontier)
            if max_states is not None and found + layer.size > max_states:
                raise GraphTooLargeError(f"more than {max_states:,} reachable states (limit; see --max-states)")
            if progress is not None:
                progress(found + layer.size)
        layers.append(Layer(rank, layer))
        found += layer.size
    return layers


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
            pending[int(rank)] = [np.unique(np.concatenate(seeds))]


@dataclass(frozen=True, eq=False)
class LayerGraph:
    """One rank's stage games; exit j leads to the state of global index `exits[j]`."""

    graph: GameGraph  # terminal_payoff holds the game's own outcomes only
    exits: np.ndarray


def layer_graph(game, states: np.ndarray, all_states: np.ndarray, chunk: int = 1 << 16) -> LayerGraph:
    expansion = expansion_of(game, states, chunk)
    out_next = expansion["out_next"].astype(np.int64)
    live = np.flatnonzero(out_next >= 0)
    codes = out_next[live]
    inside = _sorted_contains(states, codes)
    out_next[live[inside]] = np.searchsorted(states, codes[inside])
    outside = codes[~inside]
    where = np.searchsorted(all_states, outside)
    if outside.size and (where.max() >= all_states.size or np.any(all_states[where] != outside)):
        raise ValueError("states are not closed under transitions")
    exits, slot = np.unique(where, return_inverse=True)
    out_next[live[~inside]] = -1 - (len(game.terminal_payoff) + slot)
    return LayerGraph(graph_of(game, states, expansion, out_next), exits.astype(np.int64))


def with_exit_payoffs(layer: LayerGraph, exit_payoff: np.ndarray) -> GameGraph:
    """The layer's graph whose exit j pays `exit_payoff[j]`."""
    g = layer.graph
    base = np.asarray(g.terminal_payoff, np.float64)
    return GameGraph(
        states=g.states, row_ptr=g.row_ptr, row_actions=g.row_actions, col_ptr=g.col_ptr,
        col_actions=g.col_actions, cell_ptr=g.cell_ptr, out_ptr=g.out_ptr, out_next=g.out_next,
        out_prob=g.out_prob, terminal_payoff=np.concatenate([base, exit_payoff]),
        terminal_labels=g.terminal_labels + tuple(f"exit to {int(t)}" for t in layer.exits),
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
    bellman_residual: float
    rounds: int  # best-response rounds spent on cyclic components
    certify_seconds: float  # of the whole, the time spent on the certificate and outcome probabilities


@dataclass(frozen=True, eq=False)
class ExitFigures:
    """What is known at a layer's exits (one entry per exit), all final."""

    p1_guarantee: np.ndarray
    p2_guarantee: np.ndarray
    middle: np.ndarray
    outcomes: np.ndarray  # (exits, terminal outcomes + 1): probabilities of each ending, then of none


@dataclass(frozen=True, eq=False)
class LayerSolution:
    row_strategy: np.ndarray
    col_strategy: np.ndarray
    p1_guarantee: np.ndarray
    p2_guarantee: np.ndarray
    middle: np.ndarray
    terminal_probability: np.ndarray
    unending_probability: np.ndarray
    bellman_residual: float
    rounds: int
    certify_seconds: float


def solve_layer(layer: LayerGraph, mirror: np.ndarray | None, exits: ExitFigures) -> LayerSolution:
    """One layer, its exits paying what `exits` says: strategies by `bracket_values`,
    then the certificate recomputed independently of the bracket's bookkeeping
    (each side's exact guarantee, composed with those of the exits), the Bellman
    residual and the outcome probabilities."""
    p1_graph = with_exit_payoffs(layer, exits.p1_guarantee)
    p2_pay = np.concatenate([layer.graph.terminal_payoff, exits.p2_guarantee])
    bracket = bracket_values(
        p1_graph, strongly_connected_components(p1_graph), mirror=mirror, p2_terminal_payoff=p2_pay,
    )
    row, col = bracket.row_strategy, bracket.col_strategy
    clock = time.perf_counter()
    low = best_response_values(p1_graph, 0, row)
    high = best_response_values(with_exit_payoffs(layer, exits.p2_guarantee), 1, col)
    middle = np.clip(0.5 * (bracket.lower + bracket.upper), low, np.maximum(low, high))
    residual = float(bellman_residual(with_exit_payoffs(layer, exits.middle), middle).max(initial=0.0))
    terminals = layer.graph.terminal_payoff.shape[0]
    own = np.eye(terminals, terminals + 1)
    terminal, unending = outcome_probabilities(p1_graph, row, col, np.vstack([own, exits.outcomes]))
    return LayerSolution(
        row, col, low, high, middle, terminal, unending, residual, int(bracket.rounds.sum()),
        time.perf_counter() - clock,
    )


def solve_layers(
    game, layers: list[Layer], progress: Callable[[int], None] | None = None, workers: int = 1,
) -> LayeredSolution:
    """Solve every layer, highest rank first (see the module docstring).

    With `workers` > 1, layers go to that many processes as soon as every
    state they exit to is finished (layers of one rank never depend on each
    other). A finished layer's strategies wait in a temporary directory until
    all are done, so that only the final arrays hold them in memory."""
    all_states = np.sort(np.concatenate([layer.states for layer in layers]))
    n = all_states.size
    terminals = len(game.terminal_payoff)
    middle, p1_guarantee, p2_guarantee = np.zeros(n), np.zeros(n), np.zeros(n)
    terminal = np.zeros((n, terminals))
    unending = np.zeros(n)
    finished = np.zeros(n, np.bool_)
    row_count = np.zeros(n, np.int16)
    col_count = np.zeros(n, np.int16)
    totals = {"residual": 0.0, "rounds": 0, "certify": 0.0}
    todo = list(reversed(layers))
    pool = _layer_pool(workers) if workers > 1 and len(layers) > 1 else None
    with tempfile.TemporaryDirectory(prefix="charge-spark-layers-") as spill:

        def finish(number: int, at: np.ndarray, lg: LayerGraph, done: LayerSolution) -> None:
            p1_guarantee[at], p2_guarantee[at], middle[at] = done.p1_guarantee, done.p2_guarantee, done.middle
            terminal[at], unending[at] = done.terminal_probability, done.unending_probability
            finished[at] = True
            totals["residual"] = max(totals["residual"], done.bellman_residual)
            totals["rounds"] += done.rounds
            totals["certify"] += done.certify_seconds
            g = lg.graph
            row_count[at] = np.diff(g.row_ptr)
            col_count[at] = np.diff(g.col_ptr)
            np.savez(
                os.path.join(spill, f"{number}.npz"), at=at, row_ptr=g.row_ptr, row_actions=g.row_actions,
                row=done.row_strategy, col_ptr=g.col_ptr, col_actions=g.col_actions, col=done.col_strategy,
            )
            if progress is not None:
                progress(int(at.size))

        running: dict = {}
        try:
            for number, layer in enumerate(todo):
                at = np.searchsorted(all_states, layer.states)
                lg = layer_graph(game, layer.states, all_states)
                swapped = game.swap(layer.states) if hasattr(game, "swap") else None
                mirror = seat_mirror(with_exit_payoffs(lg, np.zeros(lg.exits.size)), swapped, check_payoffs=False)
                # Wait until every state this layer exits to is finished (and a worker is free).
                while running and (len(running) >= workers or not finished[lg.exits].all()):
                    completed, _ = futures.wait(running, return_when=futures.FIRST_COMPLETED)
                    for future in completed:
                        finish(*running.pop(future), future.result())
                if not finished[lg.exits].all():
                    raise ValueError(f"layer of rank {layer.rank} exits to a state of no higher rank")
                exits = ExitFigures(
                    p1_guarantee[lg.exits], p2_guarantee[lg.exits], middle[lg.exits],
                    np.column_stack([terminal[lg.exits], unending[lg.exits]]),
                )
                if pool is None:
                    finish(number, at, lg, solve_layer(lg, mirror, exits))
                else:
                    running[pool.submit(solve_layer, lg, mirror, exits)] = (number, at, lg)
            for future in futures.as_completed(list(running)):
                finish(*running.pop(future), future.result())
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        row_ptr, col_ptr = _ptr(row_count.astype(np.int64)), _ptr(col_count.astype(np.int64))
        del row_count, col_count
        row_actions = np.empty(row_ptr[-1], np.int16)
        col_actions = np.empty(col_ptr[-1], np.int16)
        row_strategy = np.empty(row_ptr[-1])
        col_strategy = np.empty(col_ptr[-1])
        for number in range(len(layers)):
            with np.load(os.path.join(spill, f"{number}.npz")) as piece:
                at = piece["at"]
                _scatter_segments(at, piece["row_ptr"], piece["row_actions"], piece["row"], row_ptr, row_actions, row_strategy)
                _scatter_segments(at, piece["col_ptr"], piece["col_actions"], piece["col"], col_ptr, col_actions, col_strategy)
    return LayeredSolution(
        all_states, row_ptr, row_actions, row_strategy, col_ptr, col_actions, col_strategy, middle,
        p1_guarantee, p2_guarantee, terminal, unending, totals["residual"], totals["rounds"], totals["certify"],
    )


def _layer_pool(workers: int) -> futures.ProcessPoolExecutor:
    # Forked: the workers start with every compiled kernel already loaded.
    return futures.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))


@numba.njit(cache=True)
def _scatter_segments(at, src_ptr, src_actions, src_weights, dst_ptr, dst_actions, dst_weights):
    """Copy local state j's segment to the segment of global state at[j]."""
    for j in range(at.shape[0]):
        d = dst_ptr[at[j]]
        for k in range(src_ptr[j], src_ptr[j + 1]):
            dst_actions[d] = src_actions[k]
            dst_weights[d] = src_weights[k]
            d += 1
