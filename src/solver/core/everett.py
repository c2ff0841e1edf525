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

A side improves on its guarantee `bound` by playing the optimal strategy of a
*costly-delay* game: every turn, play first stops with probability `leak`
and pays the side `bound` moved by `margin` to its own disadvantage, state by
state. Waiting then costs the side, so its strategy mixes in the move that
ends play (with a small probability where that is all it can afford), and
since the stop pays less than the side already guarantees, waiting never
becomes a goal of its own.

A leak that paid the endless payoff instead (1/2) was tried first. It favours
whichever side is losing against 1/2: at a state worth 0.6 to P1, stopping
helps P2, so P2's leak-optimal strategy delayed, and in the real game, with
no leak, P1 simply waited for the opening: on a 5,845-state component of the
printed rules with Spark dealing 2, P2's leak-optimal strategies were
exploitable by 0.036 for every leak from 1e-3 to 1e-9. Paying each side less
than its own guarantee removes that bias.

These strategies are candidates only: what each guarantees is computed
exactly in the real game by the caller, so the game's parameters change how
tight the bracket gets, never what is certified. Round after round (each side's
bound replaced by the guarantee found), the bracket narrows about as 1/rounds
on these components: from 0.5 to 1.3e-3 in 12 rounds and 4.3e-4 in 40 on the
S*M component above.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .best_response import best_response_values
from .graph import GameGraph
from .shapley import stage_strategies

LEAK = 1e-4
"""Per-turn stop probability. On the S*M component above, 12 rounds left the bracket at 2.5e-3
with 1e-3, 1.4e-3 with 1e-4 and 1.3e-3 with 1e-5: smaller leaks gain little and slow the
strategy's own iteration."""
STRATEGY_ITERATIONS = 30
"""Improvement steps of a side's strategy in the costly-delay game (Hoffman-Karp: a stage-optimal
strategy at the values, then its exact values against a best response). They rise toward that
game's value, slowly on the side that must mix in a small probability; each step is a best
response, and the strategy reached is a candidate whatever its distance to that value."""
SETTLED = 1e-12


def leaking_game(graph: GameGraph, leak: float, stop_payoff: np.ndarray | float) -> GameGraph:
    """`graph` where every action pair first ends play with probability `leak`,
    paying `stop_payoff` (per state, or one number for every state), and
    otherwise leads where it did."""
    payoff = np.broadcast_to(np.asarray(stop_payoff, np.float64), (graph.num_states,))
    cells = np.diff(graph.cell_ptr)
    cell_state = np.repeat(np.arange(graph.num_states, dtype=np.int64), cells)
    counts = np.diff(graph.out_ptr)
    out_ptr = np.zeros(counts.size + 1, np.int64)
    np.cumsum(counts + 1, out=out_ptr[1:])
    out_next = np.empty(int(out_ptr[-1]), np.int64)
    out_prob = np.empty(int(out_ptr[-1]), np.float64)
    # Each cell's own outcomes first, then its stop outcome.
    kept = np.repeat(out_ptr[:-1] - graph.out_ptr[:-1], counts) + np.arange(int(counts.sum()))
    out_next[kept] = graph.out_next
    out_prob[kept] = (1.0 - leak) * np.asarray(graph.out_prob, np.float64)
    own = graph.terminal_payoff.shape[0]
    out_next[out_ptr[1:] - 1] = -1 - (own + cell_state)
    out_prob[out_ptr[1:] - 1] = leak
    return dataclasses.replace(
        graph, out_ptr=out_ptr, out_next=out_next, out_prob=out_prob,
        terminal_payoff=np.concatenate([np.asarray(graph.terminal_payoff, np.float64), payoff]),
        terminal_labels=(*graph.terminal_labels, *(("stop",) * graph.num_states)),
    )


def costly_delay_strategy(
    graph: GameGraph, side: int, bound: np.ndarray, margin: float, start: np.ndarray,
    leak: float = LEAK, iterations: int = STRATEGY_ITERATIONS,
) -> tuple[np.ndarray, np.ndarray]:
    """`side`'s strategy (0: P1's, aligned with `row_actions`; 1: P2's) in the
    costly-delay game where the stop pays `bound` moved `margin` against the
    side, and that strategy's values there; the improvement steps start from
    `start` (the previous round's values, or `bound`)."""
    payoffs = np.append(np.asarray(graph.terminal_payoff, np.float64), graph.unending_payoff)
    stop = np.clip(bound - margin if side == 0 else bound + margin, payoffs.min(), payoffs.max())
    game = leaking_game(graph, leak, stop)
    values = np.array(start, np.float64)
    strategy = stage_strategies(game, values, side=side)[side]
    for _ in range(iterations):
        improved = best_response_values(game, side, strategy, values)
        change = float(np.max(np.abs(improved - values), initial=0.0))
        values = improved
        if change <= SETTLED:
            break
        strategy = stage_strategies(game, values, side=side)[side]
    return strategy, values
