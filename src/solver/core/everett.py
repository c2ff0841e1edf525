"""Epsilon-optimal stationary strategies where no optimal stationary one exists.

A stochastic game whose only payoffs are terminal (and a fixed payoff for
endless play) is one of Everett's recursive games: it has a value, both sides
have stationary strategies within any epsilon of it, but a side may have no
stationary strategy that guarantees the value itself. Then the bracket of
`bracketing.refine_by_best_responses` cannot close: each side's stage-optimal
strategies at the value may stall in a loop that pays the endless payoff
where the value is better (on board S*M, health 1 with Spark dealing 2 and
Recovery in the pile, P1's stage-optimal strategies at the fixed point
guaranteed 0.5 less than the value at some states).

The discounted game leaks, every turn, a small probability `leak` of ending
with the endless payoff. It has stationary optimal strategies (Shapley), and
they wait less the longer play loops, since waiting now costs. As the leak
shrinks they approach the value: on that component the shortfall of P1's
discounted-optimal strategy, computed exactly by a best response in the
undiscounted game, was 1.22 sqrt(leak) (leaks 1e-3 to 1e-8). That law, a
Puiseux exponent of 1/2, puts a 1e-9 shortfall at a leak of 1e-18, below
the float64 resolution of a probability near 1: such components get a stated
epsilon, not the 1e-9 certificate.

These strategies are candidates only: what each guarantees is computed
exactly in the undiscounted game by the caller, so the leak changes how
tight the bracket is, never what is certified.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from .graph import GameGraph
from .shapley import shapley_sweeps, stage_strategies
from .stopping import stopping_outcomes

LEAKS = (1e-4, 1e-6)
"""Per-turn leaks tried in turn. On the 6,155-state component above, value iteration from the
fixed point took 2, 6, 13, 44, 121 and 369 s for leaks of 1e-3 to 1e-8, for shortfalls of
3.7e-2, 1.2e-2, 3.9e-3, 1.2e-3, 3.9e-4 and 1.2e-4: past 1e-6 the time outgrows the gain."""
STAGE_SOLVES = 2e8
"""Stage games solved per leak at most (about a minute): a leak of 1e-6 settled in about 30,000
sweeps of the 6,155-state component; a larger one stops earlier, its strategy read off values not
quite settled, which costs tightness only, since what it guarantees is computed exactly."""
SETTLED = 1e-11  # settled enough: the strategy read off is certified exactly whatever its values' error


def leaking_game(graph: GameGraph, leak: float) -> GameGraph:
    """`graph` where every action pair first ends play with probability `leak`,
    paying the endless payoff, and otherwise leads where it did."""
    out_ptr, out_next, out_prob = stopping_outcomes(graph, 1.0 - leak, leak, every_outcome=True)
    return dataclasses.replace(
        graph, out_ptr=out_ptr, out_next=out_next, out_prob=out_prob,
        terminal_payoff=np.append(np.asarray(graph.terminal_payoff, np.float64), graph.unending_payoff),
        terminal_labels=(*graph.terminal_labels, "leak"),
    )


def leaking_strategies(
    graph: GameGraph, side: int, start: np.ndarray, leaks: tuple[float, ...] = LEAKS,
) -> Iterator[tuple[float, np.ndarray]]:
    """For each leak in turn, `side`'s stationary optimal strategy in the
    leaking game (0: P1's, aligned with `row_actions`; 1: P2's), its values
    found by value iteration from `start` (estimates of the undiscounted value)."""
    states = np.arange(graph.num_states)
    for leak in leaks:
        leaking = leaking_game(graph, leak)
        values = np.array(start, np.float64)
        shapley_sweeps(leaking, states, values, max(1, int(STAGE_SOLVES // max(1, states.size))), SETTLED)
        yield leak, stage_strategies(leaking, values, side=side)[side]
