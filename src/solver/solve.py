"""Solve a game from given root states: enumerate, order, solve, certify."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

import numpy as np
from tqdm import tqdm

from .bracketing import bracket_values, seat_mirror
from .certify import bellman_residual, best_response_values, outcome_probabilities
from .components import strongly_connected_components
from .graph import GraphTooLargeError, build_graph, reachable_states
from .protocol import StochasticGame
from .result import SolveResult

METHOD = (
    "components in dependency order; per cyclic component, alternating exact best responses "
    "and stage re-solves on the nudged opponent guarantee; exact best-response certificate"
)


GRAPH_BYTES_PER_STATE = 1700  # peak while solving, measured on S*M health 2: 1.7 GB for 1,023,145 states


def available_memory() -> int | None:
    """Bytes of physical memory available now, or None if the system does not say."""
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def fitting_states() -> int | None:
    """How many states a solve can hold in the memory available now (90% of it)."""
    available = available_memory()
    return None if available is None else int(0.9 * available / GRAPH_BYTES_PER_STATE)


ESTIMATE_MARGIN = 2.0
"""Refuse up front only past this many times the limit: the rules' estimate has
come out at most 1.46x the exact count where measured, and never below it."""


class EstimatedTooLargeError(GraphTooLargeError):
    """The estimated reachable state space clearly exceeds the allowed size."""


def _about(count: float) -> str:
    """A count to two significant figures: 220,000 or 5.8e9."""
    if count < 1e9:
        return f"{float(f'{count:.2g}'):,.0f}"
    mantissa, exponent = f"{count:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _bytes(amount: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if amount >= size:
            return f"{amount / size:,.1f} {unit}"
    return f"{amount / 1e3:,.1f} kB"


def refuse_if_estimate_too_large(estimate: float, where: str, max_states: int | None = None) -> None:
    """Raise `EstimatedTooLargeError` when `estimate` reachable states (from
    `where`) clearly exceed `max_states`, or by default what fits in the memory
    available, at this solve's bytes per state."""
    limit = max_states if max_states is not None else fitting_states()
    if limit is None or estimate <= ESTIMATE_MARGIN * limit:
        return  # may fit: enumeration finds out, under its own guard
    need = f"about {_about(estimate)} reachable states {where} (~{_bytes(estimate * GRAPH_BYTES_PER_STATE)}"
    if max_states is not None:
        raise EstimatedTooLargeError(
            f"the rules in force would need {need} at {GRAPH_BYTES_PER_STATE:,} bytes a state);"
            f" the limit is --max-states {max_states:,}"
        )
    raise EstimatedTooLargeError(
        f"the rules in force would need {need} at {GRAPH_BYTES_PER_STATE:,} bytes a state);"
        f" the {available_memory() / 1e9:.1f} GB of memory available holds about {_about(limit)}"
        " (--max-states sets another limit)"
    )


def solve_from(
    game: StochasticGame,
    roots: Iterable[int],
    *,
    show_progress: bool = True,
    max_states: int | None = None,
    estimated_states: float | None = None,
    estimated_from: str = "from there",
) -> SolveResult:
    """Solve the part of `game` reachable from `roots`. Enumeration stops with
    `GraphTooLargeError` past `max_states` states, or by default past what
    fits in the memory available (checked before the graph is built). Given
    `estimated_states` (reachable `estimated_from` the roots), a solve that
    clearly would not fit is refused before enumerating."""
    if estimated_states is not None:
        refuse_if_estimate_too_large(estimated_states, estimated_from, max_states)
    timings: dict[str, float] = {}
    roots = np.asarray(list(roots), dtype=np.int64)
    clock = time.perf_counter()

    with tqdm(desc="enumerating", unit=" states", delay=1.0, disable=not show_progress) as bar:

        def found(count: int) -> None:
            bar.update(count - bar.n)

        limit = max_states if max_states is not None else fitting_states()
        try:
            states = reachable_states(game, roots, progress=found, max_states=limit)
        except GraphTooLargeError:
            if max_states is not None:
                raise
            # Refused on memory, not on the user's limit: say so with the figures.
            raise GraphTooLargeError(
                f"more than {limit:,} reachable states, the most a solve can hold in 90% of the"
                f" {available_memory() / 1e9:.1f} GB of memory available at {GRAPH_BYTES_PER_STATE:,} bytes"
                " a state (--max-states sets another limit)"
            ) from None
        graph = build_graph(game, states)
    timings["enumerate"] = time.perf_counter() - clock

    clock = time.perf_counter()
    components = strongly_connected_components(graph)
    with tqdm(
        desc="solving", total=graph.num_states, unit=" states", delay=1.0,
        disable=not show_progress,
    ) as bar:
        mirror = seat_mirror(graph, game.swap(graph.states))
        bracket = bracket_values(graph, components, progress=bar.update, mirror=mirror)
    timings["solve"] = time.perf_counter() - clock

    # The certificate is recomputed over the whole graph, independently of the
    # per-component bookkeeping that produced the strategies.
    clock = time.perf_counter()
    row, col = bracket.row_strategy, bracket.col_strategy
    lower = best_response_values(graph, 0, row)
    upper = best_response_values(graph, 1, col)
    values = np.clip(0.5 * (bracket.lower + bracket.upper), lower, np.maximum(lower, upper))
    residual = bellman_residual(graph, values)
    terminal, unending = outcome_probabilities(graph, row, col)
    timings["certify"] = time.perf_counter() - clock

    return SolveResult(
        states=graph.states,
        row_ptr=graph.row_ptr,
        row_actions=graph.row_actions,
        col_ptr=graph.col_ptr,
        col_actions=graph.col_actions,
        values=values,
        row_strategy=row,
        col_strategy=col,
        terminal_probability=terminal,
        unending_probability=unending,
        p1_guarantee=lower,
        p2_guarantee=upper,
        terminal_payoff=graph.terminal_payoff,
        terminal_labels=graph.terminal_labels,
        action_labels=graph.action_labels,
        unending_payoff=graph.unending_payoff,
        bellman_residual=float(residual.max(initial=0.0)),
        method=METHOD,
        timings=timings,
        graph=graph,
    )
