"""The frozen record every consumer reads: a solved game and how it was solved."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .graph import GameGraph
from .outcome import Outcome, Seat, won_by
from .protocol import StochasticGame
from .shared_arrays import release_pages


@dataclass(frozen=True)
class StateAnswer:
    """Everything known about one solved state, in plain Python values."""

    value: float
    terminal_probability: dict[str, float]
    unending_probability: float
    expected_length: float  # turns until the end, given that the game ends (nan if it never does)
    row_strategy: dict[str, float]
    col_strategy: dict[str, float]
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    matrix: tuple[tuple[float, ...], ...]
    exploitability: float
    strict_exploitability: float  # endless play scored as a loss for the strategy's owner
    unending_dependence: float  # above STANDOFF_DEPENDENCE: a standoff
    p1_guarantee: float
    p2_guarantee: float


def strict_exploitability(p1_u0: np.ndarray, p2_u0: np.ndarray, p1_u1: np.ndarray, p2_u1: np.ndarray) -> np.ndarray:
    """Per state, the most a side can lose to an exact best response when endless
    play counts as its own loss (an upper bound: the width of the bracket of
    the game so scored, between both sides' guarantees in it)."""
    return np.maximum(np.maximum(np.subtract(p2_u0, p1_u0), np.subtract(p2_u1, p1_u1)), 0.0)


def unending_dependence(values: np.ndarray, p2_u0: np.ndarray, p1_u1: np.ndarray) -> np.ndarray:
    """Per state, a certified lower bound on how far the value moves when endless
    play is scored as a loss for one side instead of the unending payoff."""
    return np.maximum(np.maximum(np.subtract(values, p2_u0), np.subtract(p1_u1, values)), 0.0)


# Per-state figures of hurried play (see `hurry`).
PER_STATE_HURRY = (
    "p1_buzzer", "p2_buzzer", "p1_guarantee_u0", "p2_guarantee_u0", "p1_guarantee_u1", "p2_guarantee_u1", "fallback",
)

# Per-state (or per-action) arrays: what the cache stores, in this order.
ARRAY_FIELDS = (
    "states", "row_ptr", "row_actions", "col_ptr", "col_actions", "values", "row_strategy",
    "col_strategy", "terminal_probability", "unending_probability", "ending_turns", "p1_guarantee",
    "p2_guarantee", "terminal_payoff", *PER_STATE_HURRY,
)


STANDOFF_DEPENDENCE = 1e-9
"""A state whose value moves by more than this when endless play is scored as a loss is a standoff."""


@dataclass(frozen=True)
class HurryFigures:
    """Hurried play over a whole table: its stricter certificate, and where it could not be used."""

    max_strict_exploitability: float  # endless play scored as a loss for the strategy's owner
    fallback_states: int  # states where a side keeps the value solve's strategy
    standoff_states: int  # states whose value depends on how endless play is scored


@dataclass(frozen=True, eq=False)
class SolveResult:
    """Values, strategies, outcome probabilities and certificate of every
    solved state. State i has code `states[i]` (sorted) and P1's actions
    `row_actions[row_ptr[i]:row_ptr[i+1]]` (strategy weights at the same
    positions of `row_strategy`), P2's likewise. The transitions are not kept
    (`graph` is None for a table loaded from disk): a stage matrix is rebuilt
    from the game on demand."""

    states: np.ndarray
    row_ptr: np.ndarray
    row_actions: np.ndarray
    col_ptr: np.ndarray
    col_actions: np.ndarray
    values: np.ndarray
    row_strategy: np.ndarray
    col_strategy: np.ndarray
    terminal_probability: np.ndarray  # (states, terminal outcomes)
    unending_probability: np.ndarray
    ending_turns: np.ndarray  # E[turns played x 1{the game ends}]; see `expected_length`
    p1_guarantee: np.ndarray
    p2_guarantee: np.ndarray
    terminal_payoff: np.ndarray
    p1_buzzer: np.ndarray  # P(P1's strategy ends the game before a buzzer of `hurry.BUZZER` a turn, P2 stalling)
    p2_buzzer: np.ndarray
    p1_guarantee_u0: np.ndarray  # each side's guarantee with endless play scored 0 (P1's loss) ...
    p2_guarantee_u0: np.ndarray
    p1_guarantee_u1: np.ndarray  # ... and 2u (P2's loss): see `hurry.ScoredGuarantees`
    p2_guarantee_u1: np.ndarray
    fallback: np.ndarray  # int8: 1 where P1 plays the value solve's strategy, not a hurried one; 2 P2; 3 both
    terminal_outcomes: tuple[Outcome, ...]  # one per column of `terminal_probability`
    action_labels: tuple[str, ...]
    unending_payoff: float
    bellman_residual: float
    method: str
    timings: dict[str, float] = field(default_factory=dict)
    hurried_rounds: dict[str, int] = field(default_factory=dict)  # hurried play's sides by how their iteration ended ("1".."4", "capped")
    graph: GameGraph | None = None
    whole_states: int | None = None  # set when this holds only part of a stored table ...
    whole_max_exploitability: float | None = None  # ... with that table's figures
    whole_hurry: HurryFigures | None = None
    whole_states_over_bound: int | None = None  # ... and its count of states over the certificate's bound, if stored

    @property
    def terminal_labels(self) -> tuple[str, ...]:
        return tuple(o.label for o in self.terminal_outcomes)

    def win_probability(self, i: int, seat: Seat) -> float:
        """P(`seat` wins) from state index `i` under the table's strategies, over every way of winning."""
        return float(self.terminal_probability[i, won_by(self.terminal_outcomes, seat)].sum())

    @property
    def table_states(self) -> int:
        """States in the whole solved table (this result may hold a part of it)."""
        return self.num_states if self.whole_states is None else self.whole_states

    @property
    def table_max_exploitability(self) -> float:
        """The largest exploitability over the whole solved table."""
        return self.max_exploitability if self.whole_max_exploitability is None else self.whole_max_exploitability

    @property
    def num_states(self) -> int:
        return int(self.states.shape[0])

    @property
    def exploitability(self) -> np.ndarray:
        """Per state: the most either player gains by best-responding to the other's strategy."""
        return self.exploitability_in(slice(None))

    def exploitability_in(self, part: slice) -> np.ndarray:
        """`exploitability` of the states in `part` only (a table mapped from disk is read a part at a time)."""
        values = np.asarray(self.values[part])
        return np.maximum(np.maximum(values - self.p1_guarantee[part], self.p2_guarantee[part] - values), 0.0)

    @property
    def max_exploitability(self) -> float:
        return float(self.exploitability.max(initial=0.0))

    @property
    def strict_exploitability(self) -> np.ndarray:
        """Per state: the most a side loses to an exact best response when endless
        play counts as that side's loss (at most; see `hurry.strict_exploitability`)."""
        return strict_exploitability(self.p1_guarantee_u0, self.p2_guarantee_u0, self.p1_guarantee_u1, self.p2_guarantee_u1)

    @property
    def unending_dependence(self) -> np.ndarray:
        """Per state: at least how far the value moves when endless play is scored as
        a loss for one side; above 1e-9 the state is a standoff (play may never end)."""
        return unending_dependence(self.values, self.p2_guarantee_u0, self.p1_guarantee_u1)

    def unending_dependence_at(self, index: np.ndarray) -> np.ndarray:
        """`unending_dependence` of the states at `index` only (a table may be far larger than memory)."""
        index = np.asarray(index, np.int64)
        return unending_dependence(self.values[index], self.p2_guarantee_u0[index], self.p1_guarantee_u1[index])

    @property
    def fallback_states(self) -> int:
        """States where a side plays the value solve's strategy, its hurried one having failed."""
        return int(np.count_nonzero(self.fallback))

    def hurry_figures(self, chunk: int = 1 << 22) -> HurryFigures:
        """`HurryFigures` of the states held, in chunks (the arrays may be memory-mapped)."""
        strict, fallback, standoff = 0.0, 0, 0
        for lo in range(0, self.num_states, chunk):
            part = slice(lo, min(self.num_states, lo + chunk))
            strict = max(strict, float(strict_exploitability(
                self.p1_guarantee_u0[part], self.p2_guarantee_u0[part], self.p1_guarantee_u1[part],
                self.p2_guarantee_u1[part],
            ).max(initial=0.0)))
            fallback += int(np.count_nonzero(self.fallback[part]))
            dependence = unending_dependence(self.values[part], self.p2_guarantee_u0[part], self.p1_guarantee_u1[part])
            standoff += int(np.count_nonzero(dependence > STANDOFF_DEPENDENCE))
        return HurryFigures(strict, fallback, standoff)

    @property
    def table_hurry_figures(self) -> HurryFigures:
        """`HurryFigures` of the whole solved table (this result may hold a part of it)."""
        return self.hurry_figures() if self.whole_hurry is None else self.whole_hurry

    def expected_length(self, i: int) -> float:
        """Expected turns until the end from state index `i`, given that the
        game ends, under the table's strategies (nan if it never ends)."""
        ending = float(self.terminal_probability[i].sum())
        return float(self.ending_turns[i]) / ending if ending > 0.0 else float("nan")

    def release_mapped_pages(self) -> None:
        """Drop this process's resident pages of the arrays mapped from a stored
        table (a pass over a table larger than memory reads it chunk by chunk:
        what it has read need not stay); arrays held in memory are left alone."""
        for name in ARRAY_FIELDS:
            release_pages(getattr(self, name))

    def index_of(self, code: int) -> int:
        """Index of the state with encoding `code`; KeyError if it was not solved."""
        i = int(np.searchsorted(self.states, code))
        if i >= self.num_states or self.states[i] != code:
            raise KeyError(code)
        return i

    def stage_matrix(self, code: int, game: StochasticGame) -> np.ndarray:
        """Value to P1 after each action pair at state `code` (rows P1's actions)."""
        expansion = game.expand(np.array([code], dtype=np.int64))
        m, n = int(expansion.row_count[0]), int(expansion.col_count[0])
        counts = np.asarray(expansion.out_count, np.int64)
        nxt = np.asarray(expansion.out_next, np.int64)
        live = nxt >= 0
        index = np.searchsorted(self.states, nxt[live])
        if index.size and (index.max() >= self.num_states or np.any(self.states[index] != nxt[live])):
            raise KeyError(f"a successor of state {code} was not solved")
        cont = np.empty(nxt.shape[0])
        cont[live] = self.values[index]
        cont[~live] = self.terminal_payoff[-1 - nxt[~live]]
        cell = np.repeat(np.arange(m * n), counts)
        return np.bincount(cell, weights=np.asarray(expansion.out_prob) * cont, minlength=m * n).reshape(m, n)

    def answer(self, code: int, game: StochasticGame) -> StateAnswer:
        i = self.index_of(code)
        rows = tuple(self.action_labels[a] for a in self.row_actions[self.row_ptr[i] : self.row_ptr[i + 1]])
        cols = tuple(self.action_labels[a] for a in self.col_actions[self.col_ptr[i] : self.col_ptr[i + 1]])
        x = self.row_strategy[self.row_ptr[i] : self.row_ptr[i + 1]]
        y = self.col_strategy[self.col_ptr[i] : self.col_ptr[i + 1]]
        matrix = self.stage_matrix(code, game)
        return StateAnswer(
            value=float(self.values[i]),
            terminal_probability={
                label: float(self.terminal_probability[i, t])
                for t, label in enumerate(self.terminal_labels)
            },
            unending_probability=float(self.unending_probability[i]),
            expected_length=self.expected_length(i),
            row_strategy={a: float(p) for a, p in zip(rows, x)},
            col_strategy={a: float(p) for a, p in zip(cols, y)},
            rows=rows,
            cols=cols,
            matrix=tuple(tuple(float(v) for v in row) for row in matrix),
            exploitability=float(self.exploitability[i]),
            strict_exploitability=float(strict_exploitability(
                self.p1_guarantee_u0[i], self.p2_guarantee_u0[i], self.p1_guarantee_u1[i], self.p2_guarantee_u1[i],
            )),
            unending_dependence=float(self.unending_dependence_at(np.array([i]))[0]),
            p1_guarantee=float(self.p1_guarantee[i]),
            p2_guarantee=float(self.p2_guarantee[i]),
        )
