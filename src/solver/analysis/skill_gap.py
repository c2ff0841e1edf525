"""Skill gap: how simple policies fare against optimal play and against the
best response to them (exact outcome probabilities, no sampling).

`table_skill_gap` plays each policy as P1 against P2's table strategy and
against P2's best response in one rank-by-rank pass (`policy_ranks`): a
Markov chain and a one-player problem, with no two-sided solve. It needs no
graph of the whole game (the whole-graph reference it is checked against is
in `tests/reference.py`).

In a game symmetric between seats, from a start that is its own twin, optimal
play as P1 against a policy as P2 is the mirror image of the policy as P1
against optimal play as P2, whenever the table's strategies mirror (P2's at a
state are P1's at its twin, as a seat-folded solve makes them): that game
is then read off the first. Otherwise it is solved as a policy game
(`policy_play`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.graph import segment_positions
from ..core.outcome import Seat
from ..core.protocol import StochasticGame
from ..core.result import SolveResult
from .policy_play import PlayFigures, Policy, PolicyPlay, table_policy
from .policy_ranks import PolicyGames


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


def play_mirrors(game: StochasticGame, table: SolveResult, start: int, chunk: int = 1 << 22) -> bool:
    """Whether optimal play as P1 against any seat-blind policy is the mirror
    image of the policy against optimal play as P2 from `start`: `game` swaps
    seats, `start` is its own twin, and at every state of `table` P2's
    strategy is P1's at the twin, exactly. Checked in chunks of `chunk`
    states: the table may be memory-mapped and larger than memory."""
    twin_of_start = game.swap(np.array([start], np.int64))
    if twin_of_start is None or int(twin_of_start[0]) != start:
        return False
    states = table.states
    for lo in range(0, table.num_states, chunk):
        here = np.arange(lo, min(lo + chunk, table.num_states))
        swapped = game.swap(np.asarray(states[here]))
        twin = np.searchsorted(states, swapped)
        if twin.max() >= table.num_states or np.any(np.asarray(states[twin]) != swapped):
            return False
        if not np.array_equal(np.asarray(table.col_ptr[here + 1] - table.col_ptr[here]),
                              np.asarray(table.row_ptr[twin + 1] - table.row_ptr[twin])):
            return False
        cols, rows = segment_positions(table.col_ptr, here), segment_positions(table.row_ptr, twin)
        if not (np.array_equal(np.asarray(table.col_actions[cols]), np.asarray(table.row_actions[rows]))
                and np.array_equal(np.asarray(table.col_strategy[cols]), np.asarray(table.row_strategy[rows]))):
            return False
    return True


def table_skill_gap(
    game: StochasticGame, table: SolveResult, policies: dict[str, Policy],
    play_both: Callable[[str, Policy], PolicyGames], play: Callable[[str, PolicyPlay], PlayFigures],
) -> list[PolicyResult]:
    """`skill_gap` against the strategies of the solved `table` of `game`;
    `policies`: name -> the policy (for either seat; seat-blind: what it plays
    depends on the legal actions alone). `play_both(name, policy)` gives the
    policy's figures as P1 from the start against P2's table strategy and
    against P2's best response (`policy_ranks.policy_games`), and whether
    the table's strategies mirror between the seats over the states that
    pass covers. If they do, P(P1 wins) with P1's table strategy against the
    policy as P2 is P(P2 wins) of the policy against P2's table strategy;
    otherwise `play(label, game)` solves that policy game and returns its
    figures at the start."""
    results = []
    for name, policy in policies.items():
        both = play_both(name, policy)
        against_optimal, against_best = both.against_optimal, both.against_best_response
        if both.mirrored and against_optimal.p2_win is not None:
            optimal_win = against_optimal.p2_win
        else:
            optimal = PolicyPlay(game, table_policy(table, Seat.P1), policy)
            optimal_win = play(f"optimal play against {name}", optimal).p1_win
        results.append(PolicyResult(
            name=name,
            win_vs_optimal=against_optimal.p1_win,
            win_vs_best_response=against_best.p1_win,
            value_vs_best_response=against_best.value,
            optimal_win_vs_policy=optimal_win,
        ))
    return results
