"""Hurried optimal play: of the strategies that keep each side's guarantee, the one that ends the game soonest.

Where several stage strategies are optimal, which one is reported decides how
long games last, how they end and which cards are played, though not the
value. A loser who is allowed to lose later will, and in components where a
side has only epsilon-optimal strategies (hide or run) a tie-break that
values time a little makes the side that must act do so with a probability
of the order of that little, so games last about its inverse.

Hurried play fixes the choice. Each side plays, among its optimal stage
strategies for its own certified guarantees (P1 in the stage games A(lower),
which keep x^T A(lower) >= lower; P2 in A(upper)), the one best in its own
*buzzer game*: any ending of
the game pays 1, a win or a loss alike; a buzzer that sounds with
probability `eta` a turn pays 0; the opponent is assumed to stall (it plays
whatever keeps the game going, every action allowed). So both sides prefer
shorter games, the losing side too, which is what closes hide-or-run loops:
the side that is not forced to mix ends them at once.

Only the actions some optimal stage strategy may play are kept
(`stage_optima`, `pruning`): the others are never played (`stage.BEST_REPLY`), so cycles that
only they close are not iterated.

The buzzer game is discounted (a contraction), so it has a value and
stationary optimal strategies. They are found by strategy iteration from the
value solve's strategy: the stalling opponent's exact best response
(`best_response`) evaluates a strategy, a Gauss-Seidel sweep of stage tie-break LPs
(`stage`) among those optimal strategies improves it, until no
strategy changes (or a round gains less than a hundredth of a turn). The
buzzer values of a game's exits (higher ranks) are final before it is
solved, like its guarantees.

A stage choice optimal for the guarantees, stage by stage, can still let the
opponent stall where that pays it (a won position that the strategy never
converts); the exact best response catches this, and such states fall back
to the strategy the value solve found, which is certified. They are counted.

The certificate is also computed twice more, with endless play scored as a
loss for one side and then the other (`ScoredGuarantees`): a strategy that
relies on stalling fails it. Where the value itself depends on that scoring
(a standoff: optimal play may never end) `result.unending_dependence` says by how
much, at least.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numba
import numpy as np

from . import phase_clock
from .best_response import best_response_and_stalls, best_response_values
from .bracketing import component_games
from .components import predecessors_among, scc_from_csr, successor_csr
from .graph import GameGraph, segment_positions
from .pruning import kept_actions
from .shapley import max_cells, stage_matrix_kernel
from .stage import (
    BEST_REPLY,
    col_guarantee,
    make_workspace,
    matrix_game_kernel_ws,
    only_optimal_strategy,
    reply_shortfall,
    row_guarantee,
    tiebreak_cap,
    tiebreak_is_moot,
    tiebreak_lp_ws,
    tiebreak_side_ws,
)
from .stopping import stopping_outcomes

BUZZER = 1e-6
"""Probability a turn that the buzzer sounds. Small next to every real chance
of ending (so it only ranks strategies that end the game equally surely), and
large enough that a turn saved is worth more than the tie-break LP's
tolerance; lengths at 1e-5 and 1e-6 agree (tests, `make bench`)."""

FALLBACK_TOL = 1e-10  # a hurried strategy whose exact guarantee misses the value solve's by more falls back
MAX_ROUNDS = 40  # strategy-iteration rounds of one side's buzzer game, at most
"""A guard, not the rule: the iteration stops by its own rule (no strategy
changes, or a round gains less than a hundredth of a turn), on the printed
rules' health-1 board within 6 rounds, and parts whose mixed strategies
creep (a Big Match) within 11 to 13 (`MORE_SWEEPS_FROM`; see
docs/performance.md). A part stopped here is counted
(`Rounds`) and `solve` warns. Until 2026-12-05 the cap was 4 and most parts
reached it; until 2026-12-07 the creeping parts did (15 of the printed
rules' 1,008), one sweep a round taking their mixed chance from 1/n to
1/(n + 1)."""
MORE_SWEEPS_FROM = 2
"""From this round on, each round sweeps twice as often as the last before
its exact evaluation, up to `MAX_SWEEPS` (modified policy iteration). The
sweeps are change-driven, so the extra ones touch only the states still
moving, while an exact evaluation costs the whole part. Parts that creep
(a Big Match: a mixed chance moving from 1/n to 1/(n + 1) in round n with
one sweep a round) then settle; and on the printed board at health 1 the
best responses and sweeps together cost about a fifth less than with one
sweep a round until round 8 (docs/performance.md, 2026-12-07)."""
MAX_SWEEPS = 4096
STRATEGY_SETTLED = 1e-12  # a round that moves no strategy weight by more than this has converged
MAX_FALLBACK_ROUNDS = 6
IMPROVED = 1e-13  # a round that raises no buzzer value by more than this has converged
UNSEEN = -1  # `StageMemo.lone` of a state not solved yet ...
NEEDS_LP = -2  # ... of one whose tie-break the LP decides ...
ONLY_OPTIMAL = -3  # ... of one whose side has one optimal strategy in A (it keeps it); else the one pure action keeping the cap
SAME_POINT = 1e-10
"""A strategy held within this of the only optimal one, weight by weight, is
that strategy: no buzzer stage game (entries in [0, 1], at most 16 actions)
can then prefer either by the switching rule's hundredth of a turn. (The
value solve's strategy can differ from the tie-break LP's answer in the last
bits, where the value solve skipped its own tie-break.)"""
MOVED = 1e-14
"""A buzzer value that moves by more than this sends the states leading to it
back to their tie-break LP; smaller moves (round-off of the exact evaluation)
cannot change which stage strategy gains more than a hundredth of a turn."""


@dataclass(frozen=True, eq=False)
class Known:
    """One side's exact guarantee `values` in `graph` (endless play scored as
    the graph's unending payoff), playing the strategy the scored guarantees
    are asked for, and the opponent's `stalls` against it (`best_response`)."""

    graph: GameGraph
    values: np.ndarray
    stalls: np.ndarray


@dataclass(frozen=True, eq=False)
class Hurried:
    """Each side's hurried strategy, its buzzer values and exact guarantees."""

    row_strategy: np.ndarray
    col_strategy: np.ndarray
    p1_buzzer: np.ndarray  # P(P1 ends the game before the buzzer, P2 stalling), per state
    p2_buzzer: np.ndarray
    p1_guarantee: np.ndarray  # exact, endless play scored as the game's unending payoff
    p2_guarantee: np.ndarray
    fallback: np.ndarray  # int8 per state: 1 if P1 fell back to the value solve's strategy there, 2 if P2, 3 both
    p1_stalls: np.ndarray  # per state: whether P2 can keep play going forever against P1's strategy (see `best_response`)
    p2_stalls: np.ndarray
    rounds: tuple[Rounds, ...] = ()  # of each side's strategy iteration (P1's alone where P2's is mirrored)

    def known(self, graphs: tuple[GameGraph, GameGraph]) -> tuple[Known, Known]:
        """Each side's guarantee as `scored_guarantees` takes it, `graphs` those it was computed in."""
        return Known(graphs[0], self.p1_guarantee, self.p1_stalls), Known(graphs[1], self.p2_guarantee, self.p2_stalls)


@dataclass(frozen=True, eq=False)
class ScoredGuarantees:
    """Each side's exact guarantee when endless play scores 0 (a loss for P1)
    and when it scores 2u (a loss for P2), u the game's unending payoff.

    The value of the game scored 0 lies in [p1_u0, p2_u0] and the value scored
    2u in [p1_u1, p2_u1]: their widths bound what each side loses to a
    best response that exploits its stalling."""

    p1_u0: np.ndarray
    p2_u0: np.ndarray
    p1_u1: np.ndarray
    p2_u1: np.ndarray


@dataclass(frozen=True, eq=False)
class Exits:
    """What a part of a game needs of the states it leaves to (each final):
    whether each terminal outcome of its graph ends the game (False: an exit
    to a state solved before), and per terminal outcome each side's buzzer
    value there (read only at exits)."""

    ends: np.ndarray
    p1_buzzer: np.ndarray
    p2_buzzer: np.ndarray

    @classmethod
    def none(cls, terminals: int) -> Exits:
        """A whole game: every terminal outcome ends it."""
        return cls(np.ones(terminals, np.bool_), np.zeros(terminals), np.zeros(terminals))


def buzzer_graph(graph: GameGraph, ends: np.ndarray, exit_buzzer: np.ndarray, eta: float, sign: float) -> GameGraph:
    """`graph` as one side's buzzer game: an ending pays `sign`, a move to an
    exit (a terminal outcome that does not end the game) `sign` (1 - eta) times
    its buzzer value, the buzzer and endless play 0. sign -1 is P2's game
    (P2 maximises the chance of ending, so the payoff to P1 is its negative)."""
    discount = 1.0 - eta
    ptr, nxt, prob = stopping_outcomes(graph, discount, 1.0 - discount, every_outcome=False)
    pay = np.where(np.asarray(ends, np.bool_), 1.0, (1.0 - eta) * np.asarray(exit_buzzer, np.float64))
    return replace(
        graph, out_ptr=ptr, out_next=nxt, out_prob=prob, terminal_payoff=sign * np.append(pay, 0.0),
        terminal_labels=graph.terminal_labels + ("buzzer",), unending_payoff=0.0,
    )


@numba.njit(cache=True)
def _improve_side(
    row_ptr, col_ptr, cell_ptr, a_out_ptr, a_out_next, a_out_prob, a_pay, a_unending, a_values,
    b_out_ptr, b_out_next, b_out_prob, b_pay, b_values, row_side, strategy, max_cells, declined, gain,
    stale, pred_ptr, pred, caps, lone, answered, known_value, known_row, known_col,
):
    """Into `strategy` (one side's, updated in place): at every state, of the
    side's optimal strategies in the stage game A of `a_values`, the best in
    the buzzer stage game B of `b_values` (`_improve_state`). A state whose
    LP the kernel declines keeps its strategy and is marked in `declined`.

    `b_values` is updated too, Gauss-Seidel, with what the new stage strategy
    guarantees in B where that is better: improvements then travel along a
    chain of states in one sweep instead of one state a round.

    Change-driven: only the states marked `stale` are solved (a state's LP
    reads its successors' buzzer values, and A does not change between
    rounds); a state solved is unmarked, and a buzzer value that moves by
    more than `MOVED` marks the states that lead to it (`pred_ptr`, `pred`)."""
    a_buffer, b_buffer, held, T, basis = _state_buffers(max_cells)
    for i in range(row_ptr.shape[0] - 1):
        own = (row_ptr[i + 1] - row_ptr[i]) if row_side else (col_ptr[i + 1] - col_ptr[i])
        if own == 1 or not stale[i]:
            continue
        stale[i] = False
        before = b_values[i]
        declined[i] = not _improve_state(
            i, row_ptr, col_ptr, cell_ptr, a_out_ptr, a_out_next, a_out_prob, a_pay, a_unending, a_values,
            b_out_ptr, b_out_next, b_out_prob, b_pay, b_values, row_side, strategy, gain, caps, lone,
            answered, known_value, known_row, known_col, a_buffer, b_buffer, held, T, basis,
        )
        if abs(b_values[i] - before) > MOVED:
            for e in range(pred_ptr[i], pred_ptr[i + 1]):
                stale[pred[e]] = True


@numba.njit(cache=True)
def _state_buffers(max_cells):
    """The scratch `_improve_state` writes into: both stage matrices, the strategy
    held and the stage game A's two strategies (`held`'s rows), the LP workspace."""
    T, basis = make_workspace(16)
    return np.empty(max_cells), np.empty(max_cells), np.empty((3, 16)), T, basis


@numba.njit(cache=True)
def _improve_state(
    i, row_ptr, col_ptr, cell_ptr, a_out_ptr, a_out_next, a_out_prob, a_pay, a_unending, a_values,
    b_out_ptr, b_out_next, b_out_prob, b_pay, b_values, row_side, strategy, gain, caps, lone,
    answered, known_value, known_row, known_col, a_buffer, b_buffer, held, T, basis,
):
    """State i's stage strategy for one side: of its optimal strategies in A,
    the best in B, unless the one held is as good (the switching rule); and
    `b_values[i]` raised (P1; lowered for P2) to what it guarantees in B.
    False where the kernel declines the LP: the state keeps its strategy.

    Optimal in A, not merely keeping `a_values` at the state: those are the
    side's guarantees, a little below the value where its strategy mixes a
    nudge's worth, and the buzzer LP would spend that slack on weights of
    1e-12 that only look like play.

    A is the same in every round, so its value and the cap the tie-break
    keeps are found once per state (`caps`), and where one pure action alone
    keeps the cap (`lone`: that action; `NEEDS_LP` where the tie-break LP
    chooses; `UNSEEN` before the first visit) later rounds skip both LPs.
    So do they where the side has only one optimal strategy in A
    (`only_optimal_strategy`) and holds it (`ONLY_OPTIMAL`): the LP could
    only find it again; a strategy within `SAME_POINT` of it, weight by
    weight, counts as it. (Holding the value solve's strategy further from
    it, a state keeps its LP: that strategy may be optimal in A only to
    within the switching rule's 1e-12.) Where that strategy is also clear of
    the side's other actions (`tiebreak_is_moot`), the first visit does not run
    the LP either, as the value solve's tie-break does not. (The side's
    optimal strategy is unique at about half the states of the printed
    board's largest parts at health 1.)

    Where A's value and optimal strategies were found before (`known_value`
    not nan, `known_row`, `known_col`: `stage_optima`), the first visit
    takes them instead of solving A again."""
    m = row_ptr[i + 1] - row_ptr[i]
    n = col_ptr[i + 1] - col_ptr[i]
    own = m if row_side else n
    a = a_buffer[: m * n].reshape((m, n))
    b = b_buffer[: m * n].reshape((m, n))
    stage_matrix_kernel(i, b_values, 1.0, 0.0, cell_ptr, b_out_ptr, b_out_next, b_out_prob, b_pay, m, n, b)
    first = row_ptr[i] if row_side else col_ptr[i]
    for j in range(own):
        held[0, j] = strategy[first + j]
    now = held[0, :own]
    out = now
    solved = True
    unique = False
    if own > 1 and lone[i] != ONLY_OPTIMAL:  # else: the side holds its only optimal strategy in A, and keeps it
        stage_matrix_kernel(i, a_values, 1.0, a_unending, cell_ptr, a_out_ptr, a_out_next, a_out_prob, a_pay, m, n, a)
        x = held[1, :m]
        y = held[2, :n]
        out = x if row_side else y
        try:
            if lone[i] == UNSEEN:
                if known_value.shape[0] and not np.isnan(known_value[i]):
                    v = known_value[i]
                    x[:] = known_row[row_ptr[i] : row_ptr[i + 1]]
                    y[:] = known_col[col_ptr[i] : col_ptr[i + 1]]
                else:
                    v = matrix_game_kernel_ws(a, x, y, T, basis)
                caps[i] = tiebreak_cap(a, v, 0.0, row_side, x, y)
                if tiebreak_is_moot(a, v, x, y, row_side, 0.0):
                    unique = True  # the tie-break LP could only find `out` again, within round-off
                    lone[i] = NEEDS_LP
                else:
                    k = tiebreak_side_ws(a, b, caps[i], row_side, out, T, basis)
                    unique = k < 0 and only_optimal_strategy(a, v, x, y, row_side)
                    lone[i] = k if k >= 0 else NEEDS_LP
            elif lone[i] >= 0:
                out[:] = 0.0
                out[lone[i]] = 1.0
            else:
                tiebreak_lp_ws(a, b, caps[i], row_side, out, T, basis)
        except Exception:  # noqa: BLE001 - the state keeps the strategy it has
            out = now
            solved = False
        # Policy iteration's switching rule: the strategy held is kept unless the new one is
        # better in B by more than `gain` (and the held one is as good in A). Ties in B (many
        # stage strategies end the game equally soon) then never flip from round to round.
        # A strategy held that the tie-break itself gave (`answered`: the same A, the same cap)
        # is as good in A as its new answer: the LP keeps the cap only to its certificate's
        # tolerance, so comparing two answers' guarantees in A to 1e-12 would flip between them
        # (and a flip to an answer worse in B would leave a value it does not guarantee).
        if row_side:
            kept = ((answered[i] or row_guarantee(a, now) >= row_guarantee(a, out) - 1e-12)
                    and row_guarantee(b, out) <= row_guarantee(b, now) + gain)
        else:
            kept = ((answered[i] or col_guarantee(a, now) <= col_guarantee(a, out) + 1e-12)
                    and col_guarantee(b, out) >= col_guarantee(b, now) - gain)
        if unique and (not kept or _same_point(now, out)):
            lone[i] = ONLY_OPTIMAL  # the strategy held is the only optimal one: later rounds keep it without an LP
        if kept:
            out = now
        else:
            for j in range(own):
                strategy[first + j] = out[j]
            answered[i] = solved
    if row_side:
        b_values[i] = max(b_values[i], row_guarantee(b, out))
    else:
        b_values[i] = min(b_values[i], col_guarantee(b, out))
    return solved


@numba.njit(cache=True)
def _same_point(held, answer):
    """Whether `held` is within `SAME_POINT` of `answer`, weight by weight (no array made: a hot path)."""
    for j in range(held.shape[0]):
        if abs(held[j] - answer[j]) > SAME_POINT:
            return False
    return True


@numba.njit(cache=True)
def _settle_acyclic_side(
    ci, comp_ptr, comp_states, succ_ptr, succ,
    row_ptr, col_ptr, cell_ptr, a_out_ptr, a_out_next, a_out_prob, a_pay, a_unending, a_values,
    b_out_ptr, b_out_next, b_out_prob, b_pay, b_values, row_side, strategy, max_cells, declined, gain, caps, lone,
    answered, known_value, known_row, known_col,
):
    """Settle components ci, ci+1, ... that are one state without a self-loop
    (`_improve_state` once: its successors' buzzer values are final, so what
    its strategy guarantees in B is its exact buzzer value, from `b_values`
    at 0, the least); return the index of the first component that is not."""
    a_buffer, b_buffer, held, T, basis = _state_buffers(max_cells)
    ncomp = comp_ptr.shape[0] - 1
    while ci < ncomp:
        if comp_ptr[ci + 1] - comp_ptr[ci] != 1:
            return ci
        s = comp_states[comp_ptr[ci]]
        for e in range(succ_ptr[s], succ_ptr[s + 1]):
            if succ[e] == s:
                return ci
        declined[s] = not _improve_state(
            s, row_ptr, col_ptr, cell_ptr, a_out_ptr, a_out_next, a_out_prob, a_pay, a_unending, a_values,
            b_out_ptr, b_out_next, b_out_prob, b_pay, b_values, row_side, strategy, gain, caps, lone,
            answered, known_value, known_row, known_col, a_buffer, b_buffer, held, T, basis,
        )
        ci += 1
    return ci


def predecessors(graph: GameGraph) -> tuple[np.ndarray, np.ndarray]:
    """(pred_ptr, pred): the states with a move to each state of `graph` (`pred[pred_ptr[i]:pred_ptr[i + 1]]`)."""
    n = graph.num_states
    return predecessors_among(
        np.arange(n, dtype=np.int64), np.ascontiguousarray(graph.cell_ptr, np.int64),
        np.ascontiguousarray(graph.out_ptr, np.int64), np.ascontiguousarray(graph.out_next, np.int64), n,
    )


def mark_stale(stale: np.ndarray, moved: np.ndarray, pred_ptr: np.ndarray, pred: np.ndarray) -> None:
    """Mark in `stale` every state with a move to a state where `moved` is true."""
    at = np.flatnonzero(moved)
    if at.size:
        stale[pred[segment_positions(pred_ptr, at)]] = True


def _none() -> np.ndarray:
    return np.zeros(0)


@dataclass(frozen=True, eq=False)
class StageMemo:
    """What `improve_strategy` learns of each state's stage game A, which stays
    the same from round to round: the cap its side's tie-break keeps, and
    the one pure action keeping it where there is only one, or whether the
    side has one optimal strategy and holds it; whether the strategy held is
    an answer of that tie-break; and A's value and optimal strategies where
    they were found before the rounds (`stage_optima`). See `_improve_state`."""

    caps: np.ndarray
    lone: np.ndarray
    answered: np.ndarray  # whether the strategy held is one the state's tie-break gave (see `_improve_state`)
    value: np.ndarray = field(default_factory=_none)  # A's value per state where solved before (nan: not), or none ...
    row: np.ndarray = field(default_factory=_none)  # ... and its optimal strategies
    col: np.ndarray = field(default_factory=_none)

    @classmethod
    def fresh(cls, states: int) -> StageMemo:
        return cls(np.zeros(states), np.full(states, UNSEEN, np.int64), np.zeros(states, np.bool_))

    @classmethod
    def known(cls, value: np.ndarray, row: np.ndarray, col: np.ndarray) -> StageMemo:
        """A memo of stage games A whose value and optimal strategies are known already (nan: not this one's)."""
        n = value.shape[0]
        return cls(np.zeros(n), np.full(n, UNSEEN, np.int64), np.zeros(n, np.bool_), value, row, col)

    def of_part(self, graph: GameGraph, states: np.ndarray) -> StageMemo:
        """This memo for the part of `graph` cut out at `states` (`component_games`)."""
        if not self.value.size:
            return StageMemo.fresh(states.size)
        rows = segment_positions(np.asarray(graph.row_ptr, np.int64), states)
        cols = segment_positions(np.asarray(graph.col_ptr, np.int64), states)
        return StageMemo(
            self.caps[states], self.lone[states], self.answered[states], self.value[states], self.row[rows], self.col[cols],
        )

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """The kernels' arguments from `caps` on."""
        return self.caps, self.lone, self.answered, self.value, self.row, self.col


def improve_strategy(
    graph: GameGraph, values: np.ndarray, buzzer: GameGraph, buzzer_values: np.ndarray, side: int,
    strategy: np.ndarray, gain: float = 0.0, stale: np.ndarray | None = None,
    preds: tuple[np.ndarray, np.ndarray] | None = None, memo: StageMemo | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(strategy, buzzer values, declined): one side's optimal stage strategies
    in `graph`'s stage games at `values`, best in `buzzer`'s at `buzzer_values`
    (one Gauss-Seidel sweep, the values updated as it goes; payoffs to P1: P1
    maximises, P2 minimises). A state keeps the strategy it has unless the new
    one is better in the buzzer game by more than `gain`. With `stale` (updated
    in place) and `preds` (`predecessors(buzzer)`), only the stale states are
    solved (see `_improve_side`); without, every state. `memo` (updated in
    place) carries what was learnt of `values`' stage games to the next call
    with the same `graph` and `values`."""
    if stale is None:
        stale = np.ones(graph.num_states, np.bool_)
    pred_ptr, pred = preds if preds is not None else (np.zeros(graph.num_states + 1, np.int64), np.zeros(0, np.int64))
    out = np.array(strategy, np.float64, copy=True)
    updated = np.array(buzzer_values, np.float64, copy=True)
    declined = np.zeros(graph.num_states, np.bool_)
    memo = memo if memo is not None else StageMemo.fresh(graph.num_states)
    _improve_side(  # type: ignore[call-arg]  # numba's dispatcher passes the kernel's own arguments
        *_improve_arrays(graph, values, buzzer, updated, side),
        out, max_cells(graph), declined, gain, stale, pred_ptr, pred, *memo.arrays,
    )
    return out, updated, declined


@dataclass(frozen=True)
class Rounds:
    """How one side's strategy iteration ended: after `rounds` rounds, by its own
    stopping rule or (`capped`) at `MAX_ROUNDS`, short of it."""

    rounds: int
    capped: bool

    @property
    def label(self) -> str:
        """A tally's key: the rounds taken, or "capped"."""
        return "capped" if self.capped else str(self.rounds)


@numba.njit(cache=True)
def _stage_optima(row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, pay, unending, values, row_side, max_cells,
                  keep, value, row, col):
    """Per state, the stage game A at `values` solved: its value into `value`
    and optimal strategies into `row` and `col`, and into `keep` (over the
    side's actions) those within `BEST_REPLY` of the value against the
    opponent's optimal strategy (played by no optimal strategy otherwise,
    beyond a weight of the value's round-off over `BEST_REPLY`), and those the side's optimal strategy plays
    (so that it is a strategy of the game without the others). Where the side
    has one action, or the kernel cannot solve A, every action is kept and
    the value left nan."""
    buffer = np.empty(max_cells)
    T, basis = make_workspace(16)
    for i in range(row_ptr.shape[0] - 1):
        m = row_ptr[i + 1] - row_ptr[i]
        n = col_ptr[i + 1] - col_ptr[i]
        first = row_ptr[i] if row_side else col_ptr[i]
        own = m if row_side else n
        keep[first : first + own] = True
        if own == 1:
            continue
        a = buffer[: m * n].reshape((m, n))
        stage_matrix_kernel(i, values, 1.0, unending, cell_ptr, out_ptr, out_next, out_prob, pay, m, n, a)
        x = row[row_ptr[i] : row_ptr[i + 1]]
        y = col[col_ptr[i] : col_ptr[i + 1]]
        try:
            v = matrix_game_kernel_ws(a, x, y, T, basis)
        except Exception:  # noqa: BLE001 - every action stays, and the first visit solves A itself
            continue
        value[i] = v
        own_strategy = x if row_side else y
        for k in range(own):
            # The optimal strategy found keeps its own support, near ties of the kernel's round-off included.
            keep[first + k] = reply_shortfall(a, v, x, y, k, row_side) <= BEST_REPLY or own_strategy[k] > 0.0


@dataclass(frozen=True, eq=False)
class StageOptima:
    """One side's stage games A solved once (`stage_optima`): per state the
    value (nan where not solved), both sides' optimal strategies, and per
    action of the side whether an optimal strategy may play it."""

    keep: np.ndarray
    value: np.ndarray
    row: np.ndarray
    col: np.ndarray


def stage_optima(graph: GameGraph, values: np.ndarray, side: int) -> StageOptima:
    """The stage games of `graph` at `values` solved, and `side`'s playable actions (`StageOptima`)."""
    keep = np.zeros((graph.row_actions if side == 0 else graph.col_actions).shape[0], np.bool_)
    value = np.full(graph.num_states, np.nan)
    row, col = np.zeros(graph.row_actions.shape[0]), np.zeros(graph.col_actions.shape[0])
    _stage_optima(  # type: ignore[call-arg]  # numba's dispatcher passes the kernel's own arguments
        *graph.kernel_arrays()[:7], float(graph.unending_payoff), np.ascontiguousarray(values, np.float64), side == 0,
        max_cells(graph), keep, value, row, col,
    )
    return StageOptima(keep, value, row, col)


def hurried_side(
    graph: GameGraph, guarantee: np.ndarray, strategy: np.ndarray, buzzer: GameGraph, side: int, eta: float,
) -> tuple[np.ndarray, np.ndarray, Rounds]:
    """(strategy, buzzer values, rounds taken) of one side (`_hurried_side`), on
    the graphs without the side's actions that no optimal stage strategy plays
    (`stage_optima`): the moves they make are never made, so they tie no
    states into cycles (on the printed board at health 1, a third of the
    states on cycles of the whole buzzer game lie on none once they go). The
    stage games A solved to find them are not solved again."""
    with phase_clock.phase("hurried play: the rest"):
        optima = stage_optima(graph, guarantee, side)
        every = np.ones((graph.col_actions if side == 0 else graph.row_actions).shape[0], np.bool_)
        keep_row, keep_col = (optima.keep, every) if side == 0 else (every, optima.keep)
        pruned, rows, cols = kept_actions(graph, keep_row, keep_col)
        pruned_buzzer = kept_actions(buzzer, keep_row, keep_col)[0]
        kept = rows if side == 0 else cols
        ptr = np.asarray(pruned.row_ptr if side == 0 else pruned.col_ptr, np.int64)
        # The strategy held loses the weight it had on actions taken away (round-off, or none);
        # where it had all of it there, the optimal strategy found stands in.
        held = np.asarray(strategy, np.float64)[kept]
        total = np.add.reduceat(held, ptr[:-1]) if held.size else np.zeros(0)
        lost = total <= 0.0
        held /= np.repeat(np.where(lost, 1.0, total), np.diff(ptr))
        if lost.any():
            at = segment_positions(ptr, np.flatnonzero(lost))
            held[at] = (optima.row if side == 0 else optima.col)[kept][at]
        memo = StageMemo.known(optima.value, optima.row[rows], optima.col[cols])
    pruned_out, values, rounds = _hurried_side(pruned, guarantee, held, pruned_buzzer, side, eta, memo)
    out = np.zeros(optima.keep.shape[0])
    out[kept] = pruned_out
    return out, values, rounds


def _hurried_side(
    graph: GameGraph, guarantee: np.ndarray, strategy: np.ndarray, buzzer: GameGraph, side: int, eta: float,
    memo: StageMemo,
) -> tuple[np.ndarray, np.ndarray, Rounds]:
    """(strategy, buzzer values, rounds taken) of one side: strategy iteration on its buzzer
    game from `strategy` (the value solve's), over the stage strategies that
    keep `guarantee` (that side's exact guarantee in `graph`).

    Component by component of the buzzer game (every action of both sides in
    `graph` counted, so the order holds whatever either side picks), successors
    first: a state on no cycle is settled by one stage solve against its
    successors' final buzzer values; a cyclic component is cut out with its
    exits paying theirs and iterated (`_iterated_side`). On the printed
    board at health 1 about 40% of a rank's states are on no cycle: they
    are solved once instead of in every round of the cycles' iteration.
    `memo`: what is known of `guarantee`'s stage games (`StageMemo`)."""
    sign = 1.0 if side == 0 else -1.0
    out = np.array(strategy, np.float64, copy=True)
    values = np.zeros(graph.num_states)  # payoffs to P1 in `buzzer`: 0 is the least P1's side (the most P2's) can get
    declined = np.zeros(graph.num_states, np.bool_)
    with phase_clock.phase("hurried play: the rest"):
        succ_ptr, succ = successor_csr(buzzer)
        comp_ptr, comp_states = scc_from_csr(succ_ptr, succ)
    ptr = np.asarray(graph.row_ptr if side == 0 else graph.col_ptr, np.int64)
    local = np.full(graph.num_states, -1, np.int64)
    enough = max(IMPROVED, 1e-2 * eta)
    # `values` is filled in place, component by component: the kernel's arguments are the same arrays throughout.
    arrays = (*_improve_arrays(graph, guarantee, buzzer, values, side), out, max_cells(graph), declined, enough,
              *memo.arrays)
    spent: list[Rounds] = []
    ci, ncomp = 0, comp_ptr.shape[0] - 1
    while ci < ncomp:
        with phase_clock.phase("hurried play: tie-break sweeps"):
            ci = _settle_acyclic_side(ci, comp_ptr, comp_states, succ_ptr, succ, *arrays)
        if ci >= ncomp:
            break
        states = comp_states[comp_ptr[ci] : comp_ptr[ci + 1]]
        local[states] = np.arange(states.size)
        (part,) = component_games(graph, states, local, [guarantee])
        (part_buzzer,) = component_games(buzzer, states, local, [values])
        local[states] = -1
        at = segment_positions(ptr, states)
        out[at], part_values, rounds = _iterated_side(
            part, guarantee[states], out[at], part_buzzer, side, eta, memo.of_part(graph, states),
        )
        values[states] = sign * part_values
        spent.append(rounds)
        ci += 1
    rounds = Rounds(max((r.rounds for r in spent), default=1), any(r.capped for r in spent))
    return out, sign * values, rounds


def _improve_arrays(graph: GameGraph, a_values: np.ndarray, buzzer: GameGraph, b_values: np.ndarray, side: int) -> tuple:
    """The arguments of `_improve_state` from `row_ptr` to `row_side`, as the kernels take them."""
    return (
        np.ascontiguousarray(graph.row_ptr, np.int64), np.ascontiguousarray(graph.col_ptr, np.int64),
        np.ascontiguousarray(graph.cell_ptr, np.int64), np.ascontiguousarray(graph.out_ptr, np.int64),
        np.ascontiguousarray(graph.out_next, np.int64), np.ascontiguousarray(graph.out_prob, np.float64),
        np.ascontiguousarray(graph.terminal_payoff, np.float64), float(graph.unending_payoff),
        np.ascontiguousarray(a_values, np.float64), buzzer.out_ptr, buzzer.out_next, buzzer.out_prob,
        np.ascontiguousarray(buzzer.terminal_payoff, np.float64), b_values, side == 0,
    )


def _iterated_side(
    graph: GameGraph, guarantee: np.ndarray, strategy: np.ndarray, buzzer: GameGraph, side: int, eta: float,
    memo: StageMemo | None = None,
) -> tuple[np.ndarray, np.ndarray, Rounds]:
    """`hurried_side`'s answer for a game whose exits are final, by strategy
    iteration over all its states at once (`memo`: what is known of
    `guarantee`'s stage games, kept from round to round).

    Each round improves the strategy by Gauss-Seidel sweeps of stage
    tie-break LPs (the first from buzzer values of 0; one sweep in the first
    round, twice as many in each later one: `_sweeps_in_round`) and evaluates
    it exactly (the stalling opponent's best response); from the second round
    on, it stops once the round's first sweep changes no strategy, or gains
    less than a hundredth of a turn anywhere. (Sweeps alone creep: in a loop
    the values rise by a fraction of what is left each sweep, while the
    strategies stopped changing long before. One sweep a round creeps where
    a strategy mixes like the Big Match: its small chance moved from 1/n to
    1/(n + 1) in round n.)"""
    sign = 1.0 if side == 0 else -1.0
    current = np.asarray(strategy, np.float64)
    # The first sweep starts from buzzer values of 0, the least either side can get, not from an exact
    # evaluation of `strategy`: that evaluation (a best response with no estimate to start from) cost
    # about a quarter of hurried play's best responses, and the sweep's values are lower bounds either way.
    payoff = np.zeros(graph.num_states)
    evaluated = False
    preds = predecessors(buzzer)
    stale = np.ones(graph.num_states, np.bool_)
    # `guarantee`'s stage games are the same in every round.
    memo = memo if memo is not None else StageMemo.fresh(graph.num_states)
    # A turn saved is worth about eta of buzzer value: gains below a hundredth of a turn are not pursued.
    enough = max(IMPROVED, 1e-2 * eta)
    for done in range(1, MAX_ROUNDS + 1):
        with phase_clock.phase("hurried play: tie-break sweeps"):
            candidate, swept, _ = improve_strategy(
                graph, guarantee, buzzer, payoff, side, current, enough, stale, preds, memo,
            )
        # Neither stopping rule applies before the strategy held has been evaluated exactly once.
        if evaluated and np.max(np.abs(candidate - current), initial=0.0) <= STRATEGY_SETTLED:
            return current, sign * payoff, Rounds(done, False)
        current = candidate
        if evaluated and float(np.max(sign * (swept - payoff), initial=0.0)) <= enough:
            # The swept values are what the new strategy achieves at least (each state's
            # against values that only rose since), within a hundredth of a turn.
            return current, sign * swept, Rounds(done, False)
        with phase_clock.phase("hurried play: tie-break sweeps"):
            current, swept = _further_sweeps(
                graph, guarantee, buzzer, swept, side, current, enough, stale, preds, memo, _sweeps_in_round(done),
            )
        with phase_clock.phase("hurried play: best responses"):
            payoff = best_response_values(buzzer, side, current, swept)
        evaluated = True
        # The exact evaluation moves the buzzer values the sweep left: the states leading there are solved again.
        mark_stale(stale, np.abs(payoff - swept) > MOVED, *preds)
    return current, sign * payoff, Rounds(MAX_ROUNDS, True)


def _sweeps_in_round(done: int) -> int:
    """Tie-break sweeps before round `done`'s exact evaluation: one before
    round `MORE_SWEEPS_FROM`, then twice as many each round."""
    return 1 if done < MORE_SWEEPS_FROM else min(2 ** (done - MORE_SWEEPS_FROM + 1), MAX_SWEEPS)


def _further_sweeps(
    graph: GameGraph, guarantee: np.ndarray, buzzer: GameGraph, swept: np.ndarray, side: int,
    strategy: np.ndarray, gain: float, stale: np.ndarray, preds: tuple[np.ndarray, np.ndarray],
    memo: StageMemo, sweeps: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(strategy, buzzer values) after up to `sweeps` - 1 more Gauss-Seidel
    sweeps from `swept`, stopping early once a sweep moves no strategy or
    raises no value by more than `gain`. The values stay lower bounds of what
    the strategy achieves (they only rise, each a stage guarantee against
    its successors' values), so the round's exact evaluation can start from
    them as from one sweep's."""
    sign = 1.0 if side == 0 else -1.0
    for _ in range(sweeps - 1):
        further, raised, _ = improve_strategy(graph, guarantee, buzzer, swept, side, strategy, gain, stale, preds, memo)
        moved = np.max(np.abs(further - strategy), initial=0.0)
        rose = float(np.max(sign * (raised - swept), initial=0.0))
        strategy, swept = further, raised
        if moved <= STRATEGY_SETTLED or rose <= gain:
            break
    return strategy, swept


def _with_fallback(
    graph: GameGraph, side: int, hurried: np.ndarray, fallback: np.ndarray, guarantee: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(strategy, its exact guarantee, fell back per state, the opponent's
    stalls against it): `hurried`, except at the states where its guarantee
    misses `guarantee` (the value solve's), which take `fallback` there, round
    after round, until none misses."""
    ptr = graph.row_ptr if side == 0 else graph.col_ptr
    sign = 1.0 if side == 0 else -1.0
    strategy = np.array(hurried, np.float64, copy=True)
    fell = np.zeros(graph.num_states, np.bool_)
    for _ in range(MAX_FALLBACK_ROUNDS):
        # No guess: started from the value solve's guarantee, the best response can settle on a
        # policy short of the optimum (seen 4e-6 short at board S*M, health 2), which the
        # certificate with endless play scored as a loss, computed from scratch, then exposed.
        achieved, _, stalls = best_response_and_stalls(graph, side, strategy)
        missing = sign * (guarantee - achieved) > FALLBACK_TOL
        if not missing.any():
            return strategy, achieved, fell, stalls
        fell |= missing
        at = segment_positions(np.asarray(ptr, np.int64), np.flatnonzero(fell))
        strategy[at] = fallback[at]
    fell[:] = True
    achieved, _, stalls = best_response_and_stalls(graph, side, fallback)
    return np.array(fallback, np.float64, copy=True), achieved, fell, stalls


def hurry(
    p1_graph: GameGraph, p2_graph: GameGraph, lower: np.ndarray, upper: np.ndarray,
    row: np.ndarray, col: np.ndarray, exits: Exits, mirror: np.ndarray | None = None, eta: float | None = None,
    checked_in: tuple[GameGraph, GameGraph] | None = None,
) -> Hurried:
    """Hurried strategies of a game (or of a part of one whose exits are final)
    whose value solve gave `row` and `col`, guaranteeing `lower` (in
    `p1_graph`, exits paying P1's guarantees) and `upper` (in `p2_graph`).

    With `mirror` (every state's seat-swapped twin, in a game symmetric between
    the seats whose exits' figures mirror too), only P1's side is solved and
    P2 plays P1's strategy at the twin. `eta`: the buzzer's chance a turn (default `BUZZER`).
    `checked_in`: the graphs in which the hurried strategies' guarantees are
    computed (default: `p1_graph` and `p2_graph`), for a part of a game whose
    exits pay the hurried strategies' guarantees there."""
    with phase_clock.phase("hurried play: the rest"):
        return _hurry(p1_graph, p2_graph, lower, upper, row, col, exits, mirror, eta, checked_in)


def _hurry(
    p1_graph: GameGraph, p2_graph: GameGraph, lower: np.ndarray, upper: np.ndarray,
    row: np.ndarray, col: np.ndarray, exits: Exits, mirror: np.ndarray | None, eta: float | None,
    checked_in: tuple[GameGraph, GameGraph] | None,
) -> Hurried:
    p1_check, p2_check = checked_in or (p1_graph, p2_graph)
    eta = BUZZER if eta is None else eta
    p1_buzzer_game = buzzer_graph(p1_graph, exits.ends, exits.p1_buzzer, eta, 1.0)
    x, h1, p1_rounds = hurried_side(p1_graph, lower, row, p1_buzzer_game, 0, eta)
    x, low, p1_fell, p1_stalls = _with_fallback(p1_check, 0, x, row, lower)
    if mirror is not None:
        total = 2.0 * p1_graph.unending_payoff
        y = x[segment_positions(np.asarray(p1_graph.row_ptr, np.int64), mirror)]
        return Hurried(
            x, y, h1, h1[mirror], low, total - low[mirror], fallback_marks(p1_fell, p1_fell[mirror]),
            p1_stalls, p1_stalls[mirror], (p1_rounds,),
        )
    p2_buzzer_game = buzzer_graph(p2_graph, exits.ends, exits.p2_buzzer, eta, -1.0)
    y, h2, p2_rounds = hurried_side(p2_graph, upper, col, p2_buzzer_game, 1, eta)
    y, high, p2_fell, p2_stalls = _with_fallback(p2_check, 1, y, col, upper)
    return Hurried(x, y, h1, h2, low, high, fallback_marks(p1_fell, p2_fell), p1_stalls, p2_stalls, (p1_rounds, p2_rounds))


def fallback_marks(p1_fell: np.ndarray, p2_fell: np.ndarray) -> np.ndarray:
    """Per state: 1 where P1 fell back to the value solve's strategy, 2 where P2 did, 3 both."""
    return (p1_fell.astype(np.int8) + 2 * p2_fell.astype(np.int8)).astype(np.int8)


def scored_guarantees(
    p1_graphs: tuple[GameGraph, GameGraph], p2_graphs: tuple[GameGraph, GameGraph], row: np.ndarray, col: np.ndarray,
    mirror: np.ndarray | None = None, known: tuple[Known, Known] | None = None,
) -> ScoredGuarantees:
    """Each side's exact guarantee with endless play scored 0 and 2u: the first
    of each pair of graphs scores it 0 (its exits paying that side's guarantee
    so scored), the second 2u. With `mirror` (strategies and exits mirrored
    between the seats), P2's are P1's at the twins. With `known` (each side's
    guarantee playing `row`, `col`), a scoring that provably gives the same
    guarantee takes it (`_same_guarantee`) instead of a best response."""
    p1_known, p2_known = known or (None, None)
    p1_u0 = _scored_guarantee(p1_graphs[0], 0, row, p1_known)
    p1_u1 = _scored_guarantee(p1_graphs[1], 0, row, p1_known)
    if mirror is not None:
        # Seen from the other seat, endless play scored 0 is scored 2u, the total of the payoffs.
        total = p1_graphs[1].unending_payoff
        return ScoredGuarantees(p1_u0, total - p1_u1[mirror], p1_u1, total - p1_u0[mirror])
    p2_u0 = _scored_guarantee(p2_graphs[0], 1, col, p2_known)
    p2_u1 = _scored_guarantee(p2_graphs[1], 1, col, p2_known)
    return ScoredGuarantees(p1_u0, p2_u0, p1_u1, p2_u1)


def _scored_guarantee(graph: GameGraph, side: int, strategy: np.ndarray, known: Known | None) -> np.ndarray:
    """The guarantee of `side` playing `strategy` in `graph`: `known`'s where it is provably the same."""
    if known is not None and _same_guarantee(graph, known):
        return known.values
    return best_response_values(graph, side, strategy)


_TRANSITIONS = ("row_ptr", "col_ptr", "cell_ptr", "out_ptr", "out_next", "out_prob")


def _same_guarantee(graph: GameGraph, known: Known) -> bool:
    """Whether a side's guarantee in `graph` is `known.values`, whatever endless
    play pays in either: the two graphs share their transitions (the very
    arrays) and pay the same at every outcome, and the opponent can keep play
    going forever nowhere (no stalls). Then every reply, stationary or not,
    ends play with probability 1 (from each state, one of a bounded number of
    turns has a chance bounded below of ending it, whatever the reply), so
    what endless play pays never counts."""
    return (
        not known.stalls.any()
        and all(getattr(graph, name) is getattr(known.graph, name) for name in _TRANSITIONS)
        and np.array_equal(graph.terminal_payoff, known.graph.terminal_payoff)
    )


def scored(graph: GameGraph, unending: float) -> GameGraph:
    """`graph` with endless play paying `unending`."""
    return replace(graph, unending_payoff=float(unending))
