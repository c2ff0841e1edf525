"""Solve a game from given root states: enumerate, order, solve, certify."""

from __future__ import annotations

import time
from collections.abc import Iterable

import numpy as np
from tqdm import tqdm

from .certify import bellman_residual, best_response_values, outcome_probabilities
from .components import strongly_connected_components
from .graph import GameGraph, build_graph, reachable_states
from .protocol import StochasticGame
from .result import SolveResult
from .stochastic import certified_strategies, solve_values

METHOD = "component-ordered Shapley iteration; discounted tie-break strategies; exact best-response certificate"


def refine_by_best_responses(
    graph: GameGraph,
    values: np.ndarray,
    gap_tol: float = 2e-10,
    max_rounds: int = 40,
    nudge: float = 1e-10,
    patience: int = 3,
    progress=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Bracket the true values between what each side's strategy guarantees.

    P1's stage strategies (tie-broken toward ending the game) guarantee
    `lower`, P2's guarantee `upper`, each computed exactly by a best response;
    the true value lies in between.

    Value iteration can creep toward the value very slowly where a player has
    only epsilon-optimal strategies (Everett's recursive games: e.g. both pawns
    one step from the moon, Move against Move cancels forever, and the side
    that must attack eventually has to mix its attack in with a vanishing
    probability). There the other side's exact guarantee is the value, so
    each side re-solves its stage games on the opponent's guarantee nudged by
    `nudge` toward its own: the nudge sets the small mixing probability, and
    the bracket closes to about `nudge`. The tie-break among optimal stage
    strategies then prefers the side's own guarantee, so a won position is
    converted by moves already known to win instead of stalling. Rounds
    continue while the widest gap or the number of unbracketed states shrinks
    (up to `patience` rounds without either). Returns (values clipped into the
    bracket, row strategy, column strategy, lower, upper, rounds).
    """
    row, col, _ = certified_strategies(graph, values)
    best = (np.inf, row, col, None, None)
    best_bad, stalled = np.inf, 0
    for rounds in range(1, max_rounds + 1):
        lower = best_response_values(graph, 0, row)
        upper = best_response_values(graph, 1, col)
        gap = float(np.max(upper - lower, initial=0.0))
        bad = int(np.count_nonzero(upper - lower > gap_tol))
        if progress is not None:
            progress(gap)
        improved = gap < best[0] or bad < best_bad
        if gap < best[0] or (gap == best[0] and bad < best_bad):
            best = (gap, row, col, lower, upper)
        best_bad = min(best_bad, bad)
        stalled = 0 if improved else stalled + 1
        if gap <= gap_tol or stalled >= patience:
            break
        low, high = lower, upper
        row = certified_strategies(graph, np.maximum(low, high - nudge), low)[0]
        col = certified_strategies(graph, np.minimum(high, low + nudge), high)[1]
    _, row, col, lower, upper = best
    return np.clip(values, lower, np.maximum(lower, upper)), row, col, lower, upper, rounds


def solve_from(
    game: StochasticGame,
    roots: Iterable[int],
    *,
    show_progress: bool = True,
    max_states: int | None = None,
    tol: float = 1e-13,
) -> SolveResult:
    """Solve the part of `game` reachable from `roots`."""
    timings: dict[str, float] = {}
    roots = np.asarray(list(roots), dtype=np.int64)
    clock = time.perf_counter()

    with tqdm(desc="enumerating", unit=" states", delay=1.0, disable=not show_progress) as bar:

        def found(count: int) -> None:
            bar.update(count - bar.n)

        states = reachable_states(game, roots, progress=found, max_states=max_states)
        graph = build_graph(game, states)
    timings["enumerate"] = time.perf_counter() - clock

    clock = time.perf_counter()
    components = strongly_connected_components(graph)
    with tqdm(
        desc="solving", total=graph.num_states, unit=" states", delay=1.0,
        disable=not show_progress,
    ) as bar:
        values = solve_values(graph, components, tol=tol, progress=bar.update)
    timings["solve"] = time.perf_counter() - clock

    clock = time.perf_counter()
    with tqdm(desc="certifying", unit=" rounds", delay=1.0, disable=not show_progress) as bar:

        def bracketed(gap: float) -> None:
            bar.set_postfix_str(f"gap {gap:.1e}")
            bar.update(1)

        values, row, col, lower, upper, rounds = refine_by_best_responses(
            graph, values, progress=bracketed
        )
    residual = bellman_residual(graph, values)
    terminal, unending = outcome_probabilities(graph, row, col)
    timings["certify"] = time.perf_counter() - clock

    return SolveResult(
        graph=graph,
        values=values,
        row_strategy=row,
        col_strategy=col,
        terminal_probability=terminal,
        unending_probability=unending,
        p1_guarantee=lower,
        p2_guarantee=upper,
        bellman_residual=float(residual.max(initial=0.0)),
        method=METHOD,
        timings=timings,
    )
