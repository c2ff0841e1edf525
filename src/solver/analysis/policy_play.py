"""Play against fixed policies without the whole game graph: a wrapper game
in which a player who follows a fixed policy has a single action and the
policy's choice becomes chance. Solved by the solver (rank by rank: the
wrapper keeps the game's progress rank), it gives the other player's exact
best response to the policy; with both players fixed, the outcome
probabilities of the play between them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..protocol import Expansion, StochasticGame
from ..result import SolveResult
from .wrapped import WrappedGame

Policy = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
"""(state codes, ptr of their legal actions, the actions) -> the weight of each
action, in the same order (each state's weights sum to 1)."""


def table_policy(result: SolveResult, seat: int) -> Policy:
    """The strategy a solved table reports for `seat` (0: P1), at any state it holds."""
    ptr, actions, weights = (
        (result.row_ptr, result.row_actions, result.row_strategy) if seat == 0
        else (result.col_ptr, result.col_actions, result.col_strategy)
    )

    def policy(codes: np.ndarray, local_ptr: np.ndarray, local_actions: np.ndarray) -> np.ndarray:
        index = np.searchsorted(result.states, codes)
        if index.size and (index.max() >= result.num_states or np.any(result.states[index] != codes)):
            raise KeyError("a state the table does not hold")
        counts = np.diff(local_ptr)
        if np.any(ptr[index + 1] - ptr[index] != counts):
            raise ValueError("the table's actions differ from the game's: a table of other rules?")
        at = np.repeat(ptr[index] - local_ptr[:-1], counts) + np.arange(local_actions.size)
        if np.any(actions[at] != local_actions):
            raise ValueError("the table's actions differ from the game's: a table of other rules?")
        return np.asarray(weights[at], np.float64)

    return policy


class PolicyPlay(WrappedGame):
    """`game` with P1 following `row_policy` and/or P2 `col_policy` (None: free).
    A fixed player has one action (its first legal one, as a label) and each
    cell of the free player's actions leads to the outcomes of the policy's
    actions, weighted by the policy; actions of weight 0 lead nowhere."""

    def __init__(self, game: StochasticGame, row_policy: Policy | None = None, col_policy: Policy | None = None) -> None:
        super().__init__(game)
        self.row_policy, self.col_policy = row_policy, col_policy
    def expand(self, codes: np.ndarray):
        codes = np.asarray(codes, np.int64)
        e = self.game.expand(codes)
        m, n = np.asarray(e.row_count, np.int64), np.asarray(e.col_count, np.int64)
        row_actions, col_actions = np.asarray(e.row_actions), np.asarray(e.col_actions)
        out_count = np.asarray(e.out_count, np.int64)
        row_ptr, col_ptr = _ptr(m), _ptr(n)
        cells = m * n
        state = np.repeat(np.arange(codes.size), cells)
        local = np.arange(int(cells.sum())) - np.repeat(_ptr(cells)[:-1], cells)
        r, c = local // n[state], local % n[state]
        weight = np.ones(local.size)
        new_m, new_n = m.copy(), n.copy()
        new_r, new_c = r.copy(), c.copy()
        if self.row_policy is not None:
            weight *= _checked(self.row_policy(codes, row_ptr, row_actions), row_ptr)[row_ptr[state] + r]
            new_m[:], new_r[:] = 1, 0
        if self.col_policy is not None:
            weight *= _checked(self.col_policy(codes, col_ptr, col_actions), col_ptr)[col_ptr[state] + c]
            new_n[:], new_c[:] = 1, 0
        # Each old cell's outcomes go to its new cell (state, new row, new column), in cell order.
        new_cell = np.repeat(_ptr(new_m * new_n)[:-1], cells) + new_r * new_n[state] + new_c
        out_cell = np.repeat(np.arange(local.size), out_count)
        keep = weight[out_cell] > 0
        order = np.argsort(new_cell[out_cell[keep]], kind="stable")
        kept_cell = new_cell[out_cell[keep]][order]
        return Expansion(
            row_count=new_m,
            row_actions=_actions(row_actions, row_ptr, self.row_policy is not None),
            col_count=new_n,
            col_actions=_actions(col_actions, col_ptr, self.col_policy is not None),
            out_count=np.bincount(kept_cell, minlength=int((new_m * new_n).sum())).astype(np.int64),
            out_next=np.asarray(e.out_next, np.int64)[keep][order],
            out_prob=(np.asarray(e.out_prob, np.float64) * weight[out_cell])[keep][order],
        )

    def swap(self, codes: np.ndarray) -> None:
        """None: with a policy on one side the game is no longer symmetric between seats."""
        return None


def _ptr(counts: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


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


def play_figures(game: PolicyPlay, start: int, **solve_options) -> PlayFigures:
    """Solve `game` from the state coded `start` (`solve_options` go to
    `solve.solve_from`) and read its figures there."""
    from ..solve import solve_from  # the compiled kernels load only when a solve is needed

    result = solve_from(game, [start], **solve_options)
    i = result.index_of(start)
    won = result.terminal_probability[i]

    def wins(seat: str) -> float:
        return float(sum(won[t] for t, label in enumerate(result.terminal_labels) if label.startswith(f"{seat} wins")))

    return PlayFigures(float(result.values[i]), wins("P1"), wins("P2"))
