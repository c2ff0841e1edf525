"""Skill gap: how simple policies fare against optimal play and against the
best response to them (exact outcome probabilities, no sampling).

`skill_gap` works on a whole game graph (small games; the reference);
`table_skill_gap` solves games in which the policies are played as chance
(`policy_play`), rank by rank, so it needs no graph of the whole game."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..certify import best_response, outcome_probabilities, pure_strategy
from ..graph import GameGraph
from ..protocol import StochasticGame
from ..result import SolveResult
from .policy_play import PlayFigures, Policy, PolicyPlay, table_policy


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


SOLVES_PER_POLICY = 3


def table_skill_gap(
    game: StochasticGame, table: SolveResult, policies: dict[str, Policy],
    play: Callable[[str, PolicyPlay], PlayFigures],
) -> list[PolicyResult]:
    """`skill_gap` against the strategies of the solved `table` of `game`;
    `policies`: name -> the policy (for either seat). `play(label, game)`
    solves one policy game from the start and returns its figures there
    (three per policy: against P2's optimal strategy, against P2's best
    response, and P1's optimal strategy against the policy as P2)."""
    results = []
    for name, policy in policies.items():
        against_optimal = play(f"{name} against optimal play", PolicyPlay(game, policy, table_policy(table, 1)))
        against_best = play(f"{name} against its best response", PolicyPlay(game, policy, None))
        optimal_against = play(f"optimal play against {name}", PolicyPlay(game, table_policy(table, 0), policy))
        results.append(PolicyResult(
            name=name,
            win_vs_optimal=against_optimal.p1_win,
            win_vs_best_response=against_best.p1_win,
            value_vs_best_response=against_best.value,
            optimal_win_vs_policy=optimal_against.p1_win,
        ))
    return results
