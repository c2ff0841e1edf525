"""Solve component by component, bracketing each value between two exact guarantees.

Components are taken in an order where every successor outside the current
one is finished. For each finished state we hold `lower`, what P1's strategy
guarantees there against every reply, and `upper`, what P2's strategy
guarantees; the true value lies between them.

- A component that is one state without a self-loop is one stage game per side:
  P1 solves it with continuation values `lower` (its own guarantees further
  on), and what its stage strategy guarantees against each column is exact;
  P2 likewise with `upper`.
- A cyclic component is cut out as a small game of its own whose exits are
  terminal outcomes paying `lower` (for P1's side) or `upper` (for P2's).
  A few Shapley sweeps give first values; then rounds of exact best responses
  (`best_response.best_response_values`) alternate with re-solving each side's stage
  games aimed just past an estimate of the value, sweeps from the bounds found
  so far (`refine_by_best_responses`), until the bracket closes.

Value iteration alone stalls on the slow cyclic components of this kind of game
(residual ~1e-6 after thousands of sweeps, and far worse errors in the values
because play can circle for long); global best-response rounds halve the gap
per round but every round costs a pass over the whole graph. Here each round
costs a pass over one component, and a component starts from exits that are
already bracketed to ~1e-11.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np

from . import phase_clock
from .best_response import best_response, best_response_values
from .everett import costly_delay_strategy
from .graph import GameGraph, segment_positions
from .shapley import max_actions, max_cells, shapley_sweeps, stage_matrix_kernel, stage_strategies
from .stage import col_guarantee, make_workspace, matrix_game_kernel_ws, row_guarantee

GAP_TOL = 2e-11  # a cyclic component is done when its widest bracket is this narrow ...
NUDGE = 5e-12  # ... which twice the nudge (each side aims this far past the value) must undercut
WARM_SWEEPS = 60  # Shapley sweeps for a cyclic component's first values
"""As many from a warm start's estimates (`bracket_values`'s `warm`): on board S*M, health 2, a
variant and a restricted game started from the rules' values took 33% to 97% more best-response
rounds after 0, 5 or 20 sweeps than after 60 (and more time), and no fewer after 120."""
MAX_ROUNDS = 60
PATIENCE = 4
PROGRESS = 0.9  # a round that leaves the gap (or the unbracketed states) above this share of the best is no progress
ANCHOR_SWEEPS = 20  # Shapley sweeps from each side's bound toward the value, per round
ANCHOR_SETTLED = 1e-13  # a sweep changing nothing by more than this has settled
RETRY_GAP = 1e-10  # a component left wider than this is retried ...
RETRY_SWEEPS = (200, 1000)  # ... after this many more sweeps, while each retry narrows it


@dataclass(frozen=True, eq=False)
class Bracket:
    """Stationary strategies of both sides and what each provably guarantees."""

    row_strategy: np.ndarray
    col_strategy: np.ndarray
    lower: np.ndarray  # P1's guarantee per state
    upper: np.ndarray  # P2's guarantee per state
    rounds: np.ndarray  # best-response rounds spent on each cyclic component (0: one stage solve)
    values: np.ndarray  # the value estimate per state, within [lower, upper]
    p1_reply: np.ndarray | None = None  # per state, P2's best reply to `row_strategy` where known (its local action), else -1
    p2_reply: np.ndarray | None = None  # P1's to `col_strategy`


@numba.njit(cache=True)
def _settle_acyclic(
    ci, comp_ptr, comp_states, row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob,
    terminal_payoff, unending, lower, upper, middle, row_strategy, col_strategy, max_cells,
    mirror, done, p2_terminal_payoff, max_dim,
):
    """Settle components ci, ci+1, ... that are one state without a self-loop
    (or whose seat-swapped twin is settled); return the index of the first
    component that is not (or whose stage game the kernel declines), for the
    caller."""
    buffer = np.empty(max_cells)
    T, basis = make_workspace(max_dim)
    strategies = np.empty((4, max_dim))  # each side's stage game's two strategies: no allocation per state
    ncomp = comp_ptr.shape[0] - 1
    while ci < ncomp:
        if comp_ptr[ci + 1] - comp_ptr[ci] != 1:
            return ci
        s = comp_states[comp_ptr[ci]]
        if mirror.shape[0] and mirror[s] != s and done[mirror[s]]:
            _copy_twin(s, mirror[s], 2.0 * unending, row_ptr, col_ptr, lower, upper, middle, row_strategy, col_strategy)
            done[s] = True
            ci += 1
            continue
        for o in range(out_ptr[cell_ptr[s]], out_ptr[cell_ptr[s + 1]]):
            if out_next[o] == s:
                return ci
        m = row_ptr[s + 1] - row_ptr[s]
        n = col_ptr[s + 1] - col_ptr[s]
        a = buffer[: m * n].reshape((m, n))
        stage_matrix_kernel(s, lower, 1.0, unending, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff, m, n, a)
        x = strategies[0, :m]
        try:
            matrix_game_kernel_ws(a, x, strategies[1, :n], T, basis)
        except Exception:  # noqa: BLE001 - left to the general path
            return ci
        worst = row_guarantee(a, x)
        stage_matrix_kernel(s, upper, 1.0, unending, cell_ptr, out_ptr, out_next, out_prob, p2_terminal_payoff, m, n, a)
        if mirror.shape[0] and mirror[s] == s:
            y = x  # its own twin: P2 plays P1's strategy, so the two sides mirror (see `bracket_values`)
        else:
            y = strategies[3, :n]
            try:
                matrix_game_kernel_ws(a, strategies[2, :m], y, T, basis)
            except Exception:  # noqa: BLE001
                return ci
        best = col_guarantee(a, y)
        lower[s] = worst
        upper[s] = best
        middle[s] = 0.5 * (worst + best)
        row_strategy[row_ptr[s] : row_ptr[s + 1]] = x
        col_strategy[col_ptr[s] : col_ptr[s + 1]] = y
        done[s] = True
        ci += 1
    return ci


@numba.njit(cache=True)
def _copy_twin(s, t, total, row_ptr, col_ptr, lower, upper, middle, row_strategy, col_strategy):
    """State s is state t with the seats swapped: P1 at s plays what P2 plays at
    t and guarantees what P2 concedes there (payoffs p -> total - p)."""
    lower[s] = total - upper[t]
    upper[s] = total - lower[t]
    middle[s] = total - middle[t]
    row_strategy[row_ptr[s] : row_ptr[s + 1]] = col_strategy[col_ptr[t] : col_ptr[t + 1]]
    col_strategy[col_ptr[s] : col_ptr[s + 1]] = row_strategy[row_ptr[t] : row_ptr[t + 1]]


@numba.njit(cache=True)
def _copy_twins(states, mirror, total, row_ptr, col_ptr, lower, upper, middle, row_strategy, col_strategy, done):
    for s in states:
        _copy_twin(s, mirror[s], total, row_ptr, col_ptr, lower, upper, middle, row_strategy, col_strategy)
        done[s] = True


@numba.njit(cache=True)
def _cut_out(row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, row_actions, col_actions, states, local, num_terminals):
    """Arrays of the game restricted to `states` (`local[s]` = index in it, -1
    outside). Each distinct outside successor becomes a terminal outcome,
    numbered after the original ones; also returns those successors in order.
    Outside successors are marked in `local` as -2 - slot while building, and
    reset to -1 at the end."""
    c = states.shape[0]
    rp = np.zeros(c + 1, np.int64)
    cp = np.zeros(c + 1, np.int64)
    kp = np.zeros(c + 1, np.int64)
    outs = 0
    for j in range(c):
        s = states[j]
        rp[j + 1] = rp[j] + row_ptr[s + 1] - row_ptr[s]
        cp[j + 1] = cp[j] + col_ptr[s + 1] - col_ptr[s]
        kp[j + 1] = kp[j] + cell_ptr[s + 1] - cell_ptr[s]
        outs += out_ptr[cell_ptr[s + 1]] - out_ptr[cell_ptr[s]]
    ra = np.empty(rp[c], row_actions.dtype)
    ca = np.empty(cp[c], col_actions.dtype)
    op = np.zeros(kp[c] + 1, np.int64)
    on = np.empty(outs, np.int64)
    ob = np.empty(outs, np.float64)
    exits = np.empty(outs, np.int64)
    num_exits = 0
    k = 0
    o = 0
    for j in range(c):
        s = states[j]
        ra[rp[j] : rp[j + 1]] = row_actions[row_ptr[s] : row_ptr[s + 1]]
        ca[cp[j] : cp[j + 1]] = col_actions[col_ptr[s] : col_ptr[s + 1]]
        for kk in range(cell_ptr[s], cell_ptr[s + 1]):
            for oo in range(out_ptr[kk], out_ptr[kk + 1]):
                t = out_next[oo]
                if t < 0:
                    on[o] = t
                elif local[t] >= 0:
                    on[o] = local[t]
                else:
                    if local[t] == -1:
                        local[t] = -2 - num_exits
                        exits[num_exits] = t
                        num_exits += 1
                    on[o] = -1 - (num_terminals + (-2 - local[t]))
                ob[o] = out_prob[oo]
                o += 1
            k += 1
            op[k] = o
    for e in range(num_exits):
        local[exits[e]] = -1
    return rp, ra, cp, ca, kp, op, on, ob, exits[:num_exits].copy()


def component_games(
    graph: GameGraph, states: np.ndarray, local: np.ndarray, exit_values: list[np.ndarray],
    terminal_payoffs: list[np.ndarray] | None = None,
) -> list[GameGraph]:
    """The game restricted to `states`, once per entry of `exit_values`: moving
    to an outside state t ends play with payoff `exit_values[i][t]`, and the
    graph's own terminal outcomes pay `terminal_payoffs[i]` (default: theirs).
    `states` of the result holds the states' indices in `graph`."""
    rp, ra, cp, ca, kp, op, on, ob, exits = _cut_out(
        graph.row_ptr, graph.col_ptr, graph.cell_ptr, graph.out_ptr, graph.out_next, graph.out_prob,
        graph.row_actions, graph.col_actions, states, local, graph.terminal_payoff.shape[0],
    )
    labels = graph.terminal_labels + tuple(f"exit to {int(t)}" for t in exits)
    return [
        GameGraph(
            states=states, row_ptr=rp, row_actions=ra, col_ptr=cp, col_actions=ca, cell_ptr=kp,
            out_ptr=op, out_next=on, out_prob=ob,
            terminal_payoff=np.concatenate([base, np.asarray(values)[exits]]),
            terminal_labels=labels, unending_payoff=graph.unending_payoff, action_labels=graph.action_labels,
        )
        for values, base in zip(exit_values, terminal_payoffs or [graph.terminal_payoff] * len(exit_values))
    ]


class Refined(NamedTuple):
    """`refine_by_best_responses`' answer: each side's strategy, its guarantee and
    the other side's best reply to it (local action per state), and the rounds."""

    row: np.ndarray
    col: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    rounds: int
    p1_reply: np.ndarray
    p2_reply: np.ndarray


def refine_by_best_responses(
    graph: GameGraph,
    values: np.ndarray,
    gap_tol: float = GAP_TOL,
    max_rounds: int = MAX_ROUNDS,
    nudge: float = NUDGE,
    patience: int = PATIENCE,
    p2_graph: GameGraph | None = None,
) -> Refined:
    """Bracket the true values between what each side's strategy guarantees.

    P1's stage strategies (tie-broken toward ending the game) guarantee
    `lower`, P2's guarantee `upper`, each computed exactly by a best response;
    the true value lies in between. `p2_graph`, when given, is the same game
    with the terminal payoffs P2's side uses (a cut-out component whose exits
    pay P2's guarantees).

    Value iteration can creep toward the value very slowly where a player has
    only epsilon-optimal strategies (Everett's recursive games: e.g. both pawns
    one step from the moon, Move against Move cancels forever, and the side
    that must attack eventually has to mix its attack in with a vanishing
    probability). So after each round both sides re-solve their stage games
    aimed at one set of values, `_anchor`'s estimate of the value (Shapley
    sweeps from each side's bound), P1's target `nudge` below it and P2's
    `nudge` above: the nudge sets the small mixing probability, and the
    bracket closes to about twice the nudge. The tie-break among optimal
    stage strategies prefers the side's own guarantee, so a won position is
    converted by moves already known to win instead of stalling. Aimed at
    values that are not near a fixed point (the other side's guarantee, or
    the bracket's middle), each side only halved its distance to the value
    per round on the slow components, which took 25 to 50 rounds instead of
    two or three.

    What a strategy guarantees does not depend on what the other side plays,
    so each side keeps its best strategy across rounds, and the sweeps start
    from the tightest bounds found so far, state by state (every round's
    guarantee bounds the value). Rounds continue while the widest gap or the
    number of unbracketed states shrinks below `PROGRESS` of its best (up to
    `patience` rounds without either): near the floor that the exits' own
    brackets set, the gap can shrink by a hair a round for dozens of rounds.
    Returns (row strategy, column strategy, lower, upper, rounds): each
    side's best strategy and its guarantees.
    """
    p1_graph, p2_graph = graph, p2_graph or graph
    row = stage_strategies(p1_graph, values, side=0)[0]
    col = stage_strategies(p2_graph, values, side=1)[1]
    aim_low = aim_high = values  # what each side's strategy was built to guarantee: its best response's first estimate
    best: tuple[tuple, tuple] | None = None  # each side's best (strategy, guarantee, the other's reply) so far
    gap, best_bad, stalled = np.inf, np.inf, 0
    bound_low, bound_high = np.full(values.shape[0], -np.inf), np.full(values.shape[0], np.inf)
    for rounds in range(1, max_rounds + 1):  # noqa: B007 - the count is returned
        round_low, low_reply = best_response(p1_graph, 0, row, aim_low)
        round_high, high_reply = best_response(p2_graph, 1, col, aim_high)
        previous = gap
        p1_choices = [best[0], (row, round_low, low_reply)] if best else [(row, round_low, low_reply)]
        p2_choices = [best[1], (col, round_high, high_reply)] if best else [(col, round_high, high_reply)]
        gap, best = np.inf, None
        for p1, p2 in itertools.product(p1_choices, p2_choices):  # the first of equally narrow pairs
            width = float(np.max(p2[1] - p1[1], initial=0.0))
            if best is None or width < gap:
                gap, best = width, (p1, p2)
        assert best is not None  # the pairings are never empty
        (_, lower, _), (_, upper, _) = best
        bad = int(np.count_nonzero(upper - lower > gap_tol))
        stalled = 0 if gap < PROGRESS * previous or bad < PROGRESS * best_bad else stalled + 1
        best_bad = min(best_bad, bad)
        if gap <= gap_tol or stalled >= patience:
            break
        # Every round's guarantees bound the value: the tightest, state by state, start the sweeps.
        bound_low, bound_high = np.maximum(bound_low, round_low), np.minimum(bound_high, round_high)
        anchor = _anchor(p1_graph, p2_graph, bound_low, bound_high)
        aim_low, aim_high = np.maximum(bound_low, anchor - nudge), np.minimum(bound_high, anchor + nudge)
        row = stage_strategies(p1_graph, aim_low, lower, side=0)[0]
        col = stage_strategies(p2_graph, aim_high, upper, side=1)[1]
    assert best is not None  # at least one round ran
    return Refined(best[0][0], best[1][0], lower, upper, rounds, best[0][2], best[1][2])


def _anchor(p1_graph: GameGraph, p2_graph: GameGraph, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Values near the fixed point of Shapley's operator between `low` and `high`, where both sides aim.

    Aimed at values that are a fixed point, up to a consistent shift, both
    sides' re-solves reach their targets in one round; aimed at anything else
    (the bracket's middle, the other side's guarantee) each side only halves
    its distance to the value on the slow components. Sweeps from a
    subsolution (P1's guarantees) rise toward the value and from a
    supersolution (P2's) fall; on these components one of the two settles in
    a few sweeps while the other crawls, so the one that changed less in its
    last sweep is taken (rising sweeps stay below the value only up to
    rounding, so the estimate is clipped to [low, high])."""
    states = np.arange(low.size)
    estimate = low.copy()
    change = shapley_sweeps(p1_graph, states, estimate, ANCHOR_SWEEPS)
    if change > ANCHOR_SETTLED:
        other = high.copy()
        if shapley_sweeps(p2_graph, states, other, ANCHOR_SWEEPS) < change:
            estimate = other
    return np.clip(estimate, low, np.maximum(low, high))


def seat_mirror(
    graph: GameGraph, swapped_codes: np.ndarray | None, check_payoffs: bool = True,
) -> np.ndarray | None:
    """Index of each state's seat-swapped twin, given the swapped codes of
    `graph.states`; None unless the game is symmetric: every twin present,
    payoffs p <-> 2u - p (u the unending payoff), and P1's actions at each
    state listed as P2's at its twin. `check_payoffs=False` skips the payoff
    test, for a cut-out part of a symmetric game whose exits pay the
    guarantees of twins (P1's at one, P2's at the other)."""
    if swapped_codes is None:
        return None
    states = graph.states
    twin = np.searchsorted(states, swapped_codes)
    if twin.size and (twin.max() >= states.size or np.any(states[twin] != swapped_codes)):
        return None
    if check_payoffs and not payoffs_swap(graph):
        return None
    if not np.array_equal(np.diff(graph.row_ptr), np.diff(graph.col_ptr)[twin]):
        return None
    if not np.array_equal(graph.row_actions, graph.col_actions[segment_positions(graph.col_ptr, twin)]):
        return None
    return twin.astype(np.int64)


def payoffs_swap(graph: GameGraph) -> bool:
    """Whether every terminal payoff p has its seat-swapped counterpart 2u - p
    among the graph's own outcomes (u the unending payoff)."""
    total = 2.0 * graph.unending_payoff
    own = np.asarray(graph.terminal_payoff, np.float64)
    return bool(np.all(np.isin(total - own, own)))


def mirrors_strategies(graph: GameGraph, mirror: np.ndarray, row: np.ndarray, col: np.ndarray) -> bool:
    """Whether P2's strategy at every state is P1's at its twin (`mirror`), exactly:
    then what P2's strategies guarantee is what P1's do, seen from the other seat."""
    return bool(np.array_equal(col, row[segment_positions(graph.row_ptr, mirror)]))


def bracket_values(
    graph: GameGraph,
    components: tuple[np.ndarray, np.ndarray],
    progress: Callable[[int], None] | None = None,
    mirror: np.ndarray | None = None,
    p2_terminal_payoff: np.ndarray | None = None,
    warm: np.ndarray | None = None,
) -> Bracket:
    """Strategies and guarantees for every state, component by component (see
    the module docstring). `progress(states)` is called as states are settled.
    With `mirror` (see `seat_mirror`), a component whose seat-swapped twin is
    settled is copied from it instead of solved, and in a component that is its
    own twin P2 plays P1's strategy seen from the other seat: every state's
    strategies then mirror its twin's (`mirrors_strategies`), which lets a
    certificate compute one side's guarantees and mirror the other's. With
    `p2_terminal_payoff`, P2's guarantees use those terminal payoffs instead of
    the graph's (a cut-out part of a game whose exits pay each side its own
    guarantee). With `warm`, first estimates of the values per state (nan
    where there is none: the values of a game with the same states, say), a
    cyclic component starts its sweeps from them instead of the unending
    payoff; every guarantee is still computed exactly, so the estimates
    change how soon the bracket closes, never what it certifies."""
    p1_pay = np.ascontiguousarray(graph.terminal_payoff, np.float64)
    p2_pay = p1_pay if p2_terminal_payoff is None else np.ascontiguousarray(p2_terminal_payoff, np.float64)
    comp_ptr, comp_states = (np.asarray(a, np.int64) for a in components)
    n = graph.num_states
    ncomp = comp_ptr.shape[0] - 1
    lower = np.zeros(n)
    upper = np.zeros(n)
    middle = np.full(n, graph.unending_payoff)
    row = np.zeros(graph.row_actions.shape[0])
    col = np.zeros(graph.col_actions.shape[0])
    rounds = []
    p1_reply, p2_reply = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    local = np.full(n, -1, np.int64)
    arrays = (
        comp_ptr, comp_states, graph.row_ptr, graph.col_ptr, graph.cell_ptr, graph.out_ptr,
        graph.out_next, graph.out_prob, graph.terminal_payoff, graph.unending_payoff,
    )
    done = np.zeros(n, np.bool_)
    twin = np.zeros(0, np.int64) if mirror is None else np.ascontiguousarray(mirror, np.int64)
    total = 2.0 * graph.unending_payoff
    ci = 0
    while ci < ncomp:
        nxt = _settle_acyclic(
            ci, *arrays, lower, upper, middle, row, col, max_cells(graph), twin, done, p2_pay, max_actions(graph),
        )
        if progress is not None and nxt > ci:
            progress(int(comp_ptr[nxt] - comp_ptr[ci]))
        ci = nxt
        if ci >= ncomp:
            break
        lo, hi = int(comp_ptr[ci]), int(comp_ptr[ci + 1])
        states = comp_states[lo:hi]
        if twin.size and np.all(done[twin[states]]):
            _copy_twins(states, twin, total, graph.row_ptr, graph.col_ptr, lower, upper, middle, row, col, done)
            # P2's reply at a state to what P1 plays there is P1's at the twin, the seats swapped.
            p1_reply[states], p2_reply[states] = p2_reply[twin[states]], p1_reply[twin[states]]
            rounds.append(0)
            if progress is not None:
                progress(int(hi - lo))
            ci += 1
            continue
        middle[states] = _first_estimates(states, warm, graph.unending_payoff)
        shapley_sweeps(graph, states, middle, WARM_SWEEPS)
        local[states] = np.arange(states.size)
        p1_game, p2_game = component_games(graph, states, local, [lower, upper], [p1_pay, p2_pay])
        local[states] = -1
        r, c, low, high, spent, r_reply, c_reply = refine_by_best_responses(p1_game, middle[states], p2_graph=p2_game)
        retries = 0
        while float(np.max(high - low, initial=0.0)) > RETRY_GAP and retries < len(RETRY_SWEEPS):
            # Stuck far from closing: better first values (more sweeps from
            # the bracket's middle) give the rounds a better start.
            middle[states] = 0.5 * (low + high)
            shapley_sweeps(graph, states, middle, RETRY_SWEEPS[retries])
            retry = refine_by_best_responses(p1_game, middle[states], p2_graph=p2_game)
            spent += retry.rounds
            retries += 1
            if not np.max(retry.upper - retry.lower, initial=0.0) < np.max(high - low, initial=0.0):
                break  # more sweeps did not help: the next, longer ones would not either
            r, c, low, high, _, r_reply, c_reply = retry
        estimate = 0.5 * (low + high)
        floor = max(RETRY_GAP, 2.0 * _exits_gap(p1_game, p2_game))
        if float(np.max(high - low, initial=0.0)) > floor:
            r, c, low, high, estimate = _epsilon_optimal(p1_game, p2_game, r, c, low, high, 0.5 * floor)
            r_reply = c_reply = np.full(states.size, -1, np.int64)  # not kept: the certificate finds them
        row[segment_positions(graph.row_ptr, states)] = r
        if twin.size and np.all(np.isin(twin[states], states)):
            # Its own twin: P2 plays P1's strategy seen from the other seat, so that every
            # state's strategies mirror those of its twin (`mirrors_strategies`).
            c = row[segment_positions(graph.row_ptr, twin[states])]
            high, c_reply = best_response(p2_game, 1, c, high)
        col[segment_positions(graph.col_ptr, states)] = c
        p1_reply[states], p2_reply[states] = r_reply, c_reply
        lower[states], upper[states] = low, high
        middle[states] = np.clip(estimate, low, np.maximum(low, high))
        done[states] = True
        rounds.append(spent)
        if progress is not None:
            progress(int(hi - lo))
        ci += 1
    return Bracket(row, col, lower, upper, np.asarray(rounds, np.int64), middle, p1_reply, p2_reply)


def _exits_gap(p1_game: GameGraph, p2_game: GameGraph) -> float:
    """The widest bracket among a cut-out component's exits: a component left that wide
    only inherits its exits' width, which no strategy of its own can narrow."""
    return float(np.max(np.asarray(p2_game.terminal_payoff) - np.asarray(p1_game.terminal_payoff), initial=0.0))


EPSILON_ROUNDS = 20
"""Rounds of `everett.costly_delay_strategy` for a component left open, at most. The bracket
narrows about as 1/rounds there (1.3e-3 after 12 rounds on the S*M component of `everett`, about
3 s a round at 6,000 states), so more rounds buy little; a component whose exits are already
that wide reaches their floor in fewer."""
EPSILON_PROGRESS = 0.99  # a round that leaves the width above this share of the last one ends the rounds
EPSILON_MARGIN = 0.1  # each side's stop pays its bound moved this share of the bracket's width against it


def _epsilon_optimal(
    p1_game: GameGraph, p2_game: GameGraph, row: np.ndarray, col: np.ndarray, low: np.ndarray, high: np.ndarray,
    enough: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A component whose bracket would not close: where a side has no stationary
    optimal strategy (`everett`), rounds of costly-delay strategies, each
    side's stop paying a little less than its own guarantee, replace each
    side's strategy wherever they narrow the bracket, until it is `enough`
    wide per side or stops narrowing. The value estimate is the bracket's
    middle. Returns (row, col, lower, upper, estimate)."""
    with phase_clock.phase("bracket: costly-delay rounds"):
        return _costly_delay_rounds(p1_game, p2_game, row, col, low, high, enough)


def _costly_delay_rounds(
    p1_game: GameGraph, p2_game: GameGraph, row: np.ndarray, col: np.ndarray, low: np.ndarray, high: np.ndarray,
    enough: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    p1_start, p2_start = low, high
    width = float(np.max(high - low, initial=0.0))
    for _ in range(EPSILON_ROUNDS):
        if width <= 2.0 * enough:
            break
        margin = EPSILON_MARGIN * width
        r, p1_start = costly_delay_strategy(p1_game, 0, low, margin, p1_start)
        c, p2_start = costly_delay_strategy(p2_game, 1, high, margin, p2_start)
        new_low = best_response_values(p1_game, 0, r, low)
        new_high = best_response_values(p2_game, 1, c, high)
        # Each side's new strategy is kept if it narrows the widest gap, or keeps it and gains on average.
        if _narrows(high - new_high, new_high - low, high - low):
            col, high = c, new_high
        if _narrows(new_low - low, high - new_low, high - low):
            row, low = r, new_low
        last, width = width, float(np.max(high - low, initial=0.0))
        if not width < EPSILON_PROGRESS * last:
            break
    return row, col, low, high, 0.5 * (low + np.maximum(low, high))


def _narrows(gain: np.ndarray, new_width: np.ndarray, old_width: np.ndarray) -> bool:
    """Whether a side's new guarantee (gaining `gain` per state) gives a narrower bracket."""
    widest, was = float(np.max(new_width, initial=0.0)), float(np.max(old_width, initial=0.0))
    return widest < was or (widest <= was and float(np.mean(gain)) > 0.0)


def _first_estimates(states: np.ndarray, warm: np.ndarray | None, unending: float) -> np.ndarray:
    """Where a component's sweeps start: `warm`'s estimates, the unending payoff where it has none."""
    if warm is None:
        return np.full(states.size, unending)
    first = warm[states]
    return np.where(np.isnan(first), unending, first)
