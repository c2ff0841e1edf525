"""Skill gap: how simple policies fare against optimal play and against the
best response to them (exact outcome probabilities, no sampling)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..certify import best_response, outcome_probabilities, pure_strategy
from ..graph import GameGraph


def uniform_policy(ptr: np.ndarray) -> np.ndarray:
    """Every legal action equally likely (strategy array over `ptr`'s actions)."""
    counts = np.diff(ptr)
    return np.repeat(1.0 / counts, counts)


def greedy_policy(ptr: np.ndarray, actions: np.ndarray, strength: np.ndarray, fallback: Sequence[int]) -> np.ndarray:
    """At each state the legal action of greatest `strength[action]` (> 0; the
    first in action order on ties); where none has strength, the first legal
    action of `fallback`."""
    n = ptr.size - 1
    out = np.zeros(actions.size)
    state = np.repeat(np.arange(n), np.diff(ptr))
    score = strength[actions].astype(np.float64)
    # Fallback actions rank below every strong one, in their listed order.
    for rank, action in enumerate(fallback):
        score[(actions == action) & (score <= 0)] = -1.0 - rank
    score[score == 0] = -np.inf
    # First maximum per state: sort by (state, -score, position).
    order = np.lexsort((np.arange(actions.size), -score, state))
    first = np.ones(order.size, bool)
    first[1:] = state[order][1:] != state[order][:-1]
    chosen = order[first]
    if np.any(np.isinf(score[chosen])):
        raise ValueError("a state where neither a strong action nor a fallback action is legal")
    out[chosen] = 1.0
    return out


@dataclass(frozen=True)
class PolicyResult:
    name: str
    win_vs_optimal: float
    """P(the policy wins) playing P1 against P2's reported optimal strategy."""
    win_vs_best_response: float
    """P(the policy wins) playing P1 against P2's best response to it."""
    value_vs_best_response: float
    """What P2's best response holds the policy to (payoff to P1)."""
    optimal_win_vs_policy: float
    """P(P1 wins) playing its reported optimal strategy against the policy as P2."""


def skill_gap(
    graph: GameGraph, start: int, row_optimal: np.ndarray, col_optimal: np.ndarray,
    policies: dict[str, tuple[np.ndarray, np.ndarray]],
) -> list[PolicyResult]:
    """`policies`: name -> (the policy as P1's strategy array, as P2's)."""
    p1_wins = graph.terminal_payoff > graph.unending_payoff

    def p1_win(row: np.ndarray, col: np.ndarray) -> float:
        terminal, _ = outcome_probabilities(graph, row, col)
        return float(terminal[start, p1_wins].sum())

    results = []
    for name, (as_p1, as_p2) in policies.items():
        values, replies = best_response(graph, 0, as_p1)
        results.append(PolicyResult(
            name=name,
            win_vs_optimal=p1_win(as_p1, col_optimal),
            win_vs_best_response=p1_win(as_p1, pure_strategy(graph, 1, replies)),
            value_vs_best_response=float(values[start]),
            optimal_win_vs_policy=p1_win(row_optimal, as_p2),
        ))
    return results
