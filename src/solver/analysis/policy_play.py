"""Play against fixed policies without the whole game graph: a wrapper game
in which a player who follows a fixed policy has a single action and the
policy's choice becomes chance. Solved by the solver (rank by rank: the
wrapper keeps the game's progress rank), it gives the other player's exact
best response to the policy; with both players fixed, the outcome
probabilities of the play between them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

from ..core.graph import offsets_of, segment_positions
from ..core.outcome import Seat
from ..core.protocol import Expansion, StochasticGame
from ..core.result import SolveResult
from .wrapped import WrappedGame

Policy = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
"""(state codes, ptr of their legal actions, the actions) -> the weight of each
action, in the same order (each state's weights sum to 1)."""


def table_policy(result: SolveResult, seat: Seat) -> Policy:
    """The strategy a solved table reports for `seat`, at any state it holds."""
    ptr, actions, weights = (
        (result.row_ptr, result.row_actions, result.row_strategy) if seat == Seat.P1
        else (result.col_ptr, result.col_actions, result.col_strategy)
    )

    def policy(codes: np.ndarray, local_ptr: np.ndarray, local_actions: np.ndarray) -> np.ndarray:
        index = np.searchsorted(result.states, codes)
        if index.size and (index.max() >= result.num_states or np.any(result.states[index] != codes)):
            raise KeyError("a state the table does not hold")
        counts = np.diff(local_ptr)
        if np.any(ptr[index + 1] - ptr[index] != counts):
            raise ValueError("the table's actions differ from the game's: a table of other rules?")
        at = segment_positions(ptr, index)
        if np.any(actions[at] != local_actions):
            raise ValueError("the table's actions differ from the game's: a table of other rules?")
        return np.asarray(weights[at], np.float64)

    return policy


class PolicyPlay(WrappedGame):
    """`game` with P1 following `row_policy` and/or P2 `col_policy` (None: free).
    A fixed player has one action (its first legal one, as a label) and each
    cell of the free player's actions leads to the outcomes of the policy's
    actions, weighted by the policy (those to one state merged); actions of
    weight 0 lead nowhere."""

    def __init__(self, game: StochasticGame, row_policy: Policy | None = None, col_policy: Policy | None = None) -> None:
        super().__init__(game)
        self.row_policy, self.col_policy = row_policy, col_policy

    def expand(self, codes: np.ndarray):
        codes = np.asarray(codes, np.int64)
        e = self.game.expand(codes)
        m, n = np.asarray(e.row_count, np.int64), np.asarray(e.col_count, np.int64)
        row_actions, col_actions = np.asarray(e.row_actions), np.asarray(e.col_actions)
        row_ptr, col_ptr = offsets_of(m), offsets_of(n)
        row_weight = (_checked(self.row_policy(codes, row_ptr, row_actions), row_ptr) if self.row_policy is not None
                      else np.ones(row_actions.size))
        col_weight = (_checked(self.col_policy(codes, col_ptr, col_actions), col_ptr) if self.col_policy is not None
                      else np.ones(col_actions.size))
        out_count, out_next, out_prob = _policy_cells(
            m, n, np.asarray(e.out_count, np.int64), np.asarray(e.out_next, np.int64),
            np.asarray(e.out_prob, np.float64), row_weight, col_weight, self.row_policy is not None,
            self.col_policy is not None,
        )
        return Expansion(
            row_count=np.ones_like(m) if self.row_policy is not None else m,
            row_actions=_actions(row_actions, row_ptr, self.row_policy is not None),
            col_count=np.ones_like(n) if self.col_policy is not None else n,
            col_actions=_actions(col_actions, col_ptr, self.col_policy is not None),
            out_count=out_count, out_next=out_next, out_prob=out_prob,
        )

    def swap(self, codes: np.ndarray) -> None:
        """None: with a policy on one side the game is no longer symmetric between seats."""
        return None


@numba.njit(cache=True)
def _policy_cells(m, n, out_count, out_next, out_prob, row_weight, col_weight, fix_row, fix_col):
    """The cells of the stage games with each fixed side's choice made chance:
    a fixed side has one action, and each remaining cell gathers the outcomes
    of the old cells it stands for, weighted by the policies (weight 0: left
    out), outcomes to the same next state merged. Returns (out_count,
    out_next, out_prob) of the new cells, in cell order."""
    states = m.size
    first_out = np.zeros(out_count.size + 1, np.int64)
    first_out[1:] = np.cumsum(out_count)
    new_cells = 0
    for i in range(states):
        new_cells += (1 if fix_row else m[i]) * (1 if fix_col else n[i])
    new_count = np.zeros(new_cells, np.int64)
    new_next = np.empty(out_next.size, np.int64)
    new_prob = np.empty(out_next.size, np.float64)
    gathered_next = np.empty(out_next.size, np.int64)
    gathered_prob = np.empty(out_next.size, np.float64)
    cell = old_cell = row_at = col_at = written = 0
    for i in range(states):
        rows_here, cols_here = m[i], n[i]
        for new_r in range(1 if fix_row else rows_here):
            for new_c in range(1 if fix_col else cols_here):
                gathered = 0
                r_lo, r_hi = (0, rows_here) if fix_row else (new_r, new_r + 1)
                c_lo, c_hi = (0, cols_here) if fix_col else (new_c, new_c + 1)
                for r in range(r_lo, r_hi):
                    w_r = row_weight[row_at + r] if fix_row else 1.0
                    if w_r <= 0.0:
                        continue
                    for c in range(c_lo, c_hi):
                        w = w_r * (col_weight[col_at + c] if fix_col else 1.0)
                        if w <= 0.0:
                            continue
                        k = old_cell + r * cols_here + c
                        for j in range(first_out[k], first_out[k + 1]):
                            gathered_next[gathered] = out_next[j]
                            gathered_prob[gathered] = out_prob[j] * w
                            gathered += 1
                _sort_by_next(gathered_next, gathered_prob, gathered)
                start = written
                for t in range(gathered):
                    if written > start and new_next[written - 1] == gathered_next[t]:
                        new_prob[written - 1] += gathered_prob[t]
                    else:
                        new_next[written] = gathered_next[t]
                        new_prob[written] = gathered_prob[t]
                        written += 1
                new_count[cell] = written - start
                cell += 1
        old_cell += rows_here * cols_here
        row_at += rows_here
        col_at += cols_here
    return new_count, new_next[:written].copy(), new_prob[:written].copy()


@numba.njit(cache=True, inline="always")
def _sort_by_next(next_codes, probs, count):
    """Insertion sort of the first `count` outcomes by next state, stable: a
    cell gathers a few dozen at most, too few for a general sort's overhead."""
    for i in range(1, count):
        code, prob = next_codes[i], probs[i]
        j = i - 1
        while j >= 0 and next_codes[j] > code:
            next_codes[j + 1], probs[j + 1] = next_codes[j], probs[j]
            j -= 1
        next_codes[j + 1], probs[j + 1] = code, prob


def _actions(actions: np.ndarray, ptr: np.ndarray, fixed: bool) -> np.ndarray:
    return actions[ptr[:-1]] if fixed else actions


def _checked(weights: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    if np.any(weights < -1e-9) or not np.allclose(np.add.reduceat(weights, ptr[:-1]) if weights.size else 0, 1.0, atol=1e-9):
        raise ValueError("a policy whose weights at a state do not sum to 1")
    return weights


@dataclass(frozen=True)
class PlayFigures:
    """What play comes to at its start."""

    value: float
    """To P1 (P(P1 wins) + half P(unending)), the free player playing its best."""
    p1_win: float
    """P(P1 wins) under the strategies played (the free player's as solved)."""
    p2_win: float | None = None
    """P(P2 wins), likewise (None in figures kept by an earlier version)."""
    states: int | None = None
    """States the policy game's solve covered (None in figures kept by an earlier version)."""


def play_figures(game: PolicyPlay, start: int, **solve_options) -> PlayFigures:
    """Solve `game` from the state coded `start` (`solve_options` go to
    `solve.solve_from`) and read its figures there."""
    from ..core.solve import solve_from  # the compiled kernels load only when a solve is needed

    result = solve_from(game, [start], **solve_options)
    i = result.index_of(start)
    return PlayFigures(float(result.values[i]), result.win_probability(i, Seat.P1), result.win_probability(i, Seat.P2),
                       int(result.num_states))
