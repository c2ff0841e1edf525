"""Plain references the fast paths are checked against: slow, simple, obviously right.

- `reference_values`: Shapley value iteration over all states, one scipy LP
  per stage, no component ordering, no compiled kernel (what the fast solve
  must agree with and beat).
- `skill_gap`: the skill gap of policies on a whole game graph, where
  `analysis.skill_gap.table_skill_gap` solves policy games rank by rank.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from solver.analysis.skill_gap import PolicyResult
from solver.core.absorption import outcome_probabilities
from solver.core.best_response import best_response, pure_strategy
from solver.core.graph import GameGraph
from solver.core.outcome import Outcome, Seat, won_by
from solver.core.stage import solve_matrix_game_lp


def reference_values(
    graph: GameGraph, tol: float = 1e-13, max_sweeps: int = 100_000, states: np.ndarray | None = None
) -> tuple[np.ndarray, int]:
    """(values, sweeps): Jacobi iteration of Shapley's operator from the unending payoff.

    With `states`, only those states are updated each sweep (the rest keep the
    unending payoff): used to time a subset for extrapolation.
    """
    values = np.full(graph.num_states, graph.unending_payoff)
    which = np.arange(graph.num_states) if states is None else np.asarray(states)
    for sweep in range(1, max_sweeps + 1):
        new = values.copy()
        for i in which:
            new[i] = solve_matrix_game_lp(graph.stage_matrix(int(i), values)).value
        change = float(np.max(np.abs(new - values), initial=0.0))
        values = new
        if change <= tol:
            return values, sweep
    return values, max_sweeps


def skill_gap(
    graph: GameGraph, outcomes: Sequence[Outcome], start: int, row_optimal: np.ndarray, col_optimal: np.ndarray,
    policies: dict[str, tuple[np.ndarray, np.ndarray]],
) -> list[PolicyResult]:
    """`outcomes`: the graph's terminal outcomes; `policies`: name -> (the
    policy as P1's strategy array, as P2's)."""
    p1_wins = won_by(outcomes, Seat.P1)

    def p1_win(row: np.ndarray, col: np.ndarray) -> float:
        terminal, _ = outcome_probabilities(graph, row, col)
        return float(terminal[start, p1_wins].sum())

    results = []
    for name, (as_p1, as_p2) in policies.items():
        values, replies = best_response(graph, Seat.P1, as_p1)
        results.append(PolicyResult(
            name=name,
            win_vs_optimal=p1_win(as_p1, col_optimal),
            win_vs_best_response=p1_win(as_p1, pure_strategy(graph, Seat.P2, replies)),
            value_vs_best_response=float(values[start]),
            optimal_win_vs_policy=p1_win(row_optimal, as_p2),
        ))
    return results
