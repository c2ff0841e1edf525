"""Any OpenSpiel two-player zero-sum game with perfect information, seen
through the solver's protocol (`solver.core.protocol.StochasticGame`).

pyspiel is imported only when this module is used (the `crosscheck` extra).
States are identified by their string, as OpenSpiel's own value iteration
does, and numbered in the order they are found. A decision node where both
players move is one stage game; where one player moves, the other has a single
"(waits)" action; a chance node reached after the actions is expanded into its
outcomes (and further chance nodes below it); a chance node where play starts
becomes a state where both wait. Terminal outcomes are the distinct returns of
player 0, added as they are met, won by the player with the larger return.
Play that never ends pays 0.
"""

from __future__ import annotations

import contextlib
import os
import sys

import numpy as np

from .core.protocol import Expansion

WAIT_LABEL = "(waits)"


@contextlib.contextmanager
def _quiet_native_stderr():
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def load_game(spec: str):
    """The pyspiel game for `spec` (e.g. "goofspiel(num_cards=4,imp_info=False)"), checked to fit."""
    import pyspiel

    try:
        with _quiet_native_stderr():  # OpenSpiel's C++ side prints its whole game list on errors
            game = pyspiel.load_game(spec)
    except pyspiel.SpielError as error:
        first = str(error).split("\n")[0].split(". Available")[0]
        raise ValueError(f"OpenSpiel cannot load {spec!r}: {first}") from None
    kind = game.get_type()
    problems = []
    if game.num_players() != 2:
        problems.append(f"{game.num_players()} players")
    if kind.utility not in (pyspiel.GameType.Utility.ZERO_SUM, pyspiel.GameType.Utility.CONSTANT_SUM):
        problems.append(f"utility {kind.utility.name.lower()}")
    if kind.information != pyspiel.GameType.Information.PERFECT_INFORMATION:
        problems.append(f"{kind.information.name.lower().replace('_', ' ')}")
    if problems:
        raise ValueError(f"{spec!r} is not a two-player zero-sum game with perfect information ({', '.join(problems)})")
    return game


class OpenSpielGame:
    """The protocol over a pyspiel game; payoffs are player 0's returns."""

    unending_payoff = 0.0

    def __init__(self, game) -> None:
        self.game = game
        self.wait = game.num_distinct_actions()
        self.action_labels = tuple(str(a) for a in range(self.wait)) + (WAIT_LABEL,)
        self._states: list = []
        self._index: dict[str, int] = {}
        self._payoff_index: dict[float, int] = {}
        self.terminal_payoff_list: list[float] = []
        self.terminal_winner_list: list[int | None] = []

    @property
    def terminal_payoff(self) -> np.ndarray:
        return np.asarray(self.terminal_payoff_list, dtype=np.float64)

    @property
    def terminal_labels(self) -> tuple[str, ...]:
        return tuple(f"player 0 gets {p:g}" for p in self.terminal_payoff_list)

    @property
    def terminal_winners(self) -> tuple[int | None, ...]:
        return tuple(self.terminal_winner_list)

    @property
    def terminal_kinds(self) -> tuple[str, ...]:
        return tuple("draw" if w is None else "win" for w in self.terminal_winner_list)

    def root(self) -> int:
        return self.code_of(self.game.new_initial_state())

    def code_of(self, state) -> int:
        key = str(state)
        code = self._index.get(key)
        if code is None:
            code = self._index[key] = len(self._states)
            self._states.append(state.clone())
        return code

    def state(self, code: int):
        return self._states[int(code)]

    def _terminal(self, state) -> int:
        returns = state.returns()
        payoff = float(returns[0])
        t = self._payoff_index.get(payoff)
        if t is None:
            t = self._payoff_index[payoff] = len(self.terminal_payoff_list)
            self.terminal_payoff_list.append(payoff)
            # The player with the larger return won (zero- or constant-sum: one payoff, one winner).
            self.terminal_winner_list.append(0 if returns[0] > returns[1] else 1 if returns[1] > returns[0] else None)
        return -1 - t

    def _outcomes(self, state, probability: float, out: list[tuple[float, int]]) -> None:
        """Where play goes from `state` (chance nodes expanded), as (probability, code or -1-terminal)."""
        if state.is_terminal():
            out.append((probability, self._terminal(state)))
        elif state.is_chance_node():
            for action, p in state.chance_outcomes():
                child = state.clone()
                child.apply_action(action)
                self._outcomes(child, probability * p, out)
        else:
            out.append((probability, self.code_of(state)))

    def actions(self, state) -> tuple[list[int], list[int]]:
        """Each player's actions at `state` (the WAIT action for one who does not move)."""
        if state.is_simultaneous_node():
            return list(state.legal_actions(0)), list(state.legal_actions(1))
        player = state.current_player()
        if player == 0:
            return list(state.legal_actions(0)), [self.wait]
        if player == 1:
            return [self.wait], list(state.legal_actions(1))
        return [self.wait], [self.wait]  # a chance node where play starts

    def next_states(self, state, a: int, b: int) -> list[tuple[float, int]]:
        child = state.clone()
        if state.is_simultaneous_node():
            child.apply_actions([a, b])
        elif state.current_player() in (0, 1):
            child.apply_action(a if state.current_player() == 0 else b)
        # else a chance node where play starts: both wait, chance moves
        out: list[tuple[float, int]] = []
        self._outcomes(child, 1.0, out)
        return out

    def expand(self, codes: np.ndarray) -> Expansion:
        row_count, row_actions, col_count, col_actions = [], [], [], []
        out_count, out_next, out_prob = [], [], []
        for code in np.asarray(codes, dtype=np.int64):
            state = self.state(code)
            rows, cols = self.actions(state)
            row_count.append(len(rows))
            col_count.append(len(cols))
            row_actions += rows
            col_actions += cols
            for a in rows:
                for b in cols:
                    merged: dict[int, float] = {}
                    for p, nxt in self.next_states(state, a, b):
                        merged[nxt] = merged.get(nxt, 0.0) + p
                    out_count.append(len(merged))
                    out_next += list(merged)
                    out_prob += list(merged.values())
        as_int = lambda xs: np.asarray(xs, dtype=np.int64)  # noqa: E731
        return Expansion(
            as_int(row_count), as_int(row_actions), as_int(col_count), as_int(col_actions),
            as_int(out_count), as_int(out_next), np.asarray(out_prob, dtype=np.float64),
        )

    def swap(self, codes: np.ndarray) -> None:
        return None

    def action_label(self, code: int, player: int, action: int) -> str:
        if action == self.wait:
            return WAIT_LABEL
        return self.state(code).action_to_string(player, action)

    def first_decision(self) -> int:
        """The first state where someone decides, following the first chance outcome."""
        state = self.game.new_initial_state()
        while state.is_chance_node():
            state.apply_action(state.chance_outcomes()[0][0])
        return self.code_of(state)
