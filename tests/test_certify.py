"""Tests for solver.core.components, linear_solve, best_response, absorption and certify on hand-built and random GameGraphs."""

from __future__ import annotations

import itertools
import time
from dataclasses import replace

import networkx as nx
import numpy as np
import pytest
from scipy.optimize import linprog

import solver.core.best_response as br
import solver.core.linear_solve as linear_solve_mod
from random_games import random_graph, random_strategy
from solver.core.absorption import (
    chain_values,
    expected_length_and_distribution,
    outcome_probabilities,
    outcomes_and_ending_turns,
)
from solver.core.best_response import best_response, best_response_and_stalls, best_response_values, pure_strategy
from solver.core.certify import certify
from solver.core.components import component_of, predecessors_among, strongly_connected_components, successor_csr
from solver.core.graph import GameGraph
from solver.core.hurry import Known, ScoredGuarantees, scored, scored_guarantees
from solver.core.shapley import bellman_residual

# --------------------------------------------------------------------------
# Builders.


def build(spec: dict, terminals: dict[str, float], unending: float = 0.5) -> GameGraph:
    """GameGraph from {state: {(a, b): [(prob, target)]}}; a target is a state key or a terminal name.

    States get codes 0..n-1 in dict order; P1's actions at a state are the
    distinct `a` in first-seen order, P2's the distinct `b`.
    """
    index = {s: i for i, s in enumerate(spec)}
    tindex = {t: i for i, t in enumerate(terminals)}
    labels: dict[str, int] = {}
    row_ptr, col_ptr, cell_ptr, out_ptr = [0], [0], [0], [0]
    row_actions, col_actions, out_next, out_prob = [], [], [], []
    for s in spec:
        cells = spec[s]
        rows = list(dict.fromkeys(a for a, _ in cells))
        cols = list(dict.fromkeys(b for _, b in cells))
        assert len(cells) == len(rows) * len(cols), f"state {s}: incomplete stage game"
        row_actions += [labels.setdefault(a, len(labels)) for a in rows]
        col_actions += [labels.setdefault(b, len(labels)) for b in cols]
        for a in rows:
            for b in cols:
                for prob, target in cells[(a, b)]:
                    out_next.append(index[target] if target in index else -1 - tindex[target])
                    out_prob.append(prob)
                out_ptr.append(len(out_next))
        row_ptr.append(len(row_actions))
        col_ptr.append(len(col_actions))
        cell_ptr.append(len(out_ptr) - 1)
    return GameGraph(
        states=np.arange(len(spec), dtype=np.int64),
        row_ptr=np.array(row_ptr, np.int64),
        row_actions=np.array(row_actions, np.int16),
        col_ptr=np.array(col_ptr, np.int64),
        col_actions=np.array(col_actions, np.int16),
        cell_ptr=np.array(cell_ptr, np.int64),
        out_ptr=np.array(out_ptr, np.int64),
        out_next=np.array(out_next, np.int64),
        out_prob=np.array(out_prob, np.float64),
        terminal_payoff=np.array(list(terminals.values()), np.float64),
        terminal_labels=tuple(terminals),
        unending_payoff=unending,
        action_labels=tuple(labels),
    )


def uniform(ptr: np.ndarray) -> np.ndarray:
    sizes = np.diff(ptr)
    return np.repeat(1.0 / sizes, sizes)


def pair_values(graph: GameGraph, row: np.ndarray, col: np.ndarray) -> np.ndarray:
    term, unend = outcome_probabilities(graph, row, col)
    return term @ graph.terminal_payoff + unend * graph.unending_payoff


def lp_value(a: np.ndarray) -> float:
    """Value of the matrix game A (row player maximises) by linear programming."""
    m, n = a.shape
    c = np.zeros(m + 1)
    c[-1] = -1.0  # maximise v
    a_ub = np.hstack([-a.T, np.ones((n, 1))])  # v - x^T A[:, j] <= 0
    a_eq = np.hstack([np.ones((1, m)), np.zeros((1, 1))])
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(n), A_eq=a_eq, b_eq=[1.0],
                  bounds=[(0, None)] * m + [(None, None)], method="highs")
    return float(res.x[-1])


W, L = "W", "L"
TERMS = {W: 1.0, L: 0.0}

# --------------------------------------------------------------------------
# Components.


@pytest.mark.parametrize("seed", range(12))
def test_successors_and_scc_match_networkx(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    g = random_graph(rng, n, max_actions=2, max_outcomes=2, p_terminal=0.2,
                     local=None if seed % 2 else 3)
    ptr, succ = successor_csr(g)
    dg = nx.DiGraph()
    dg.add_nodes_from(range(n))
    for s in range(n):
        lo, hi = g.out_ptr[g.cell_ptr[s]], g.out_ptr[g.cell_ptr[s + 1]]
        expected = {int(t) for t in g.out_next[lo:hi] if t >= 0}
        got = succ[ptr[s] : ptr[s + 1]].tolist()
        assert len(got) == len(set(got)) and set(got) == expected
        dg.add_edges_from((s, t) for t in expected)
    comp_ptr, comp_states = strongly_connected_components(g)
    assert sorted(comp_states.tolist()) == list(range(n))
    ours = {frozenset(comp_states[comp_ptr[c] : comp_ptr[c + 1]].tolist()) for c in range(len(comp_ptr) - 1)}
    assert ours == {frozenset(c) for c in nx.strongly_connected_components(dg)}
    comp = component_of(comp_ptr, comp_states, n)
    for u, v in dg.edges:
        assert comp[v] <= comp[u]  # successors solved first
    # Same order as networkx's condensation, read backwards, up to ties: check it is a valid topological order.
    cond = nx.condensation(dg)
    label = {frozenset(cond.nodes[c]["members"]): c for c in cond.nodes}
    order = [label[frozenset(comp_states[comp_ptr[c] : comp_ptr[c + 1]].tolist())] for c in range(len(comp_ptr) - 1)]
    pos = {c: i for i, c in enumerate(reversed(order))}
    assert all(pos[a] < pos[b] for a, b in cond.edges)


def test_scc_long_cycle_no_recursion():
    n = 200_000  # one big cycle: a recursive Tarjan would overflow
    ptr = np.arange(n + 1, dtype=np.int64)
    g = GameGraph(
        states=np.arange(n, dtype=np.int64), row_ptr=ptr, row_actions=np.zeros(n, np.int16), col_ptr=ptr,
        col_actions=np.zeros(n, np.int16), cell_ptr=ptr, out_ptr=ptr, out_next=(np.arange(n) + 1) % n,
        out_prob=np.ones(n), terminal_payoff=np.array([1.0]), terminal_labels=("W",), unending_payoff=0.5,
        action_labels=("a",),
    )
    comp_ptr, comp_states = strongly_connected_components(g)
    assert len(comp_ptr) == 2 and comp_ptr[-1] == n


# --------------------------------------------------------------------------
# Hand-worked games.


def win_or_wait() -> GameGraph:
    return build({0: {("win", "-"): [(1.0, W)], ("wait", "-"): [(1.0, 0)]}}, TERMS)


def test_waiting_is_exploitable():
    g = win_or_wait()
    col = np.array([1.0])
    wait, win = np.array([0.0, 1.0]), np.array([1.0, 0.0])
    assert best_response_values(g, 0, wait)[0] == pytest.approx(0.5, abs=1e-14)
    assert best_response_values(g, 0, win)[0] == pytest.approx(1.0, abs=1e-14)
    assert best_response_values(g, 1, col)[0] == pytest.approx(1.0, abs=1e-14)
    cert = certify(g, np.array([1.0]), wait, col)
    assert cert.p1_guarantee[0] == pytest.approx(0.5)
    assert cert.p2_guarantee[0] == pytest.approx(1.0)
    assert cert.exploitability[0] == pytest.approx(0.5)
    assert cert.max_exploitability == pytest.approx(0.5)
    assert cert.gap[0] == pytest.approx(0.5)
    good = certify(g, np.array([1.0]), win, col)
    assert good.max_exploitability == pytest.approx(0.0, abs=1e-14)
    # Mixing in waiting still wins eventually: guarantee 1.
    assert best_response_values(g, 0, np.array([0.1, 0.9]))[0] == pytest.approx(1.0, abs=1e-12)
    term, unend = outcome_probabilities(g, wait, col)
    assert term.tolist() == [[0.0, 0.0]] and unend.tolist() == [1.0]


def pennies() -> GameGraph:
    # Match: 1/2 P1 wins, 1/2 replay. Mismatch: 1/2 P2 wins, 1/2 to a chance
    # state that draws (payoff 0.5) or returns, 1/2 each.
    return build(
        {
            0: {
                ("H", "h"): [(0.5, W), (0.5, 0)],
                ("H", "t"): [(0.5, L), (0.5, 1)],
                ("T", "h"): [(0.5, L), (0.5, 1)],
                ("T", "t"): [(0.5, W), (0.5, 0)],
            },
            1: {("-", "-"): [(0.5, 0), (0.5, "D")]},
        },
        {W: 1.0, L: 0.0, "D": 0.5},
    )


def test_pennies_by_hand():
    g = pennies()
    row, col = uniform(g.row_ptr), uniform(g.col_ptr)
    term, unend = outcome_probabilities(g, row, col)
    # From 0 each turn: W 1/4, L 1/4, stay 1/4, to 1 1/4: W = 1/4 + W/4 + W/8 -> 0.4.
    np.testing.assert_allclose(term, [[0.4, 0.4, 0.2], [0.2, 0.2, 0.6]], atol=1e-14)
    np.testing.assert_allclose(unend, 0.0, atol=1e-14)
    cert = certify(g, np.array([0.5, 0.5]), row, col)
    np.testing.assert_allclose(cert.p1_guarantee, 0.5, atol=1e-13)
    np.testing.assert_allclose(cert.p2_guarantee, 0.5, atol=1e-13)
    assert cert.max_exploitability < 1e-13
    # Every turn ends the game with probability 1/2, wherever play is.
    expected, pmf = expected_length_and_distribution(g, row, col, 0, 60)
    assert expected == pytest.approx(2.0, abs=1e-12)
    np.testing.assert_allclose(pmf, 0.5 ** np.arange(1, 61), atol=1e-15)
    # P1 biased to H (0.7): P2's best reply is t; v0 = 0.2375 / 0.675 = 19/54, v1 = v0/2 + 1/4.
    biased = np.array([0.7, 0.3, 1.0])
    values, actions = best_response(g, 0, biased)
    np.testing.assert_allclose(values, [19 / 54, 23 / 54], atol=1e-13)
    assert actions[0] == 1
    residual = bellman_residual(g, np.array([0.5, 0.5]), solve=lp_value)
    np.testing.assert_allclose(residual, 0.0, atol=1e-9)
    assert bellman_residual(g, np.array([0.6, 0.5]), solve=lp_value)[1] == pytest.approx(0.05, abs=1e-9)


def stall_loop(unending: float) -> GameGraph:
    # P1 can cycle 0 <-> 1 forever, quit (lose) at 0, or gamble 0.4 at 1.
    return build(
        {
            0: {("go", "-"): [(1.0, 1)], ("quit", "-"): [(1.0, L)]},
            1: {("back", "-"): [(1.0, 0)], ("gamble", "-"): [(0.4, W), (0.6, L)]},
        },
        TERMS,
        unending,
    )


def test_responder_prefers_never_ending_to_losing():
    col = np.ones(2)
    values, actions = best_response(stall_loop(0.5), 1, col)
    np.testing.assert_allclose(values, [0.5, 0.5], atol=1e-14)
    assert actions.tolist() == [0, 0]  # go, back: keep it going
    g = stall_loop(0.5)
    np.testing.assert_allclose(pair_values(g, pure_strategy(g, 0, actions), col), values, atol=1e-14)
    # With unending worth 0.3 the 0.4 gamble is better.
    np.testing.assert_allclose(best_response_values(stall_loop(0.3), 1, col), [0.4, 0.4], atol=1e-14)
    # P2 stalling: it can end the game with P1 winning, or loop.
    g2 = build({0: {("-", "end"): [(1.0, W)], ("-", "loop"): [(1.0, 0)]}}, TERMS)
    assert best_response_values(g2, 0, np.ones(1))[0] == pytest.approx(0.5)
    # Stalling must be sure: a loop through a state with a 10% exit to a loss is worth 0, not 0.5.
    g3 = build(
        {
            0: {("stay", "-"): [(1.0, 1)], ("lose", "-"): [(1.0, L)]},
            1: {("-", "-"): [(0.9, 0), (0.1, L)]},
        },
        TERMS,
    )
    np.testing.assert_allclose(best_response_values(g3, 1, np.ones(2)), [0.0, 0.0], atol=1e-14)
    # ... and a loop with a 10% exit to a win is worth 1.
    g4 = build(
        {
            0: {("stay", "-"): [(1.0, 1)], ("lose", "-"): [(1.0, L)]},
            1: {("-", "-"): [(0.9, 0), (0.1, W)]},
        },
        TERMS,
    )
    np.testing.assert_allclose(best_response_values(g4, 1, np.ones(2)), [1.0, 1.0], atol=1e-12)


def test_minimiser_prefers_low_terminal_to_looping():
    g = build(
        {
            0: {("-", "take"): [(1.0, "X")], ("-", "next"): [(1.0, 1)]},
            1: {("-", "next"): [(1.0, 0)], ("-", "loop"): [(1.0, 1)]},
        },
        {"X": 0.3, W: 1.0},
    )
    values, actions = best_response(g, 0, np.ones(2))
    np.testing.assert_allclose(values, [0.3, 0.3], atol=1e-14)
    assert actions[0] == 0 and actions[1] == 0
    # A maximiser in the same spot loops for 0.5 instead.
    gmax = build(
        {
            0: {("take", "-"): [(1.0, "X")], ("next", "-"): [(1.0, 1)]},
            1: {("next", "-"): [(1.0, 0)], ("loop", "-"): [(1.0, 1)]},
        },
        {"X": 0.3, W: 1.0},
    )
    np.testing.assert_allclose(best_response_values(gmax, 1, np.ones(2)), [0.5, 0.5], atol=1e-14)


# --------------------------------------------------------------------------
# Random graphs against brute force.


def brute_force(graph: GameGraph, seat: int, strategy: np.ndarray) -> np.ndarray:
    ptr = graph.col_ptr if seat == 0 else graph.row_ptr
    sizes = np.diff(ptr)
    best = None
    for actions in itertools.product(*(range(k) for k in sizes)):
        resp = pure_strategy(graph, 1 - seat, np.array(actions))
        v = pair_values(graph, strategy, resp) if seat == 0 else pair_values(graph, resp, strategy)
        best = v if best is None else (np.minimum(best, v) if seat == 0 else np.maximum(best, v))
    return best


def stalls_by_peeling(graph: GameGraph, seat: int, strategy: np.ndarray) -> np.ndarray:
    """The states from which the responder can keep play going forever with
    probability 1, by the definition: the greatest set in which every state
    has an action all of whose outcomes (over the strategy's support) stay in it."""
    keep = np.ones(graph.num_states, bool)
    changed = True
    while changed:
        changed = False
        for s in np.flatnonzero(keep):
            m, n = graph.row_ptr[s + 1] - graph.row_ptr[s], graph.col_ptr[s + 1] - graph.col_ptr[s]
            ptr = graph.row_ptr if seat == 0 else graph.col_ptr
            support = [f for f in range(m if seat == 0 else n) if strategy[ptr[s] + f] > 0]
            replies = range(n if seat == 0 else m)

            def stays(a, s=s, n=n, support=support):
                for f in support:
                    k = graph.cell_ptr[s] + (f * n + a if seat == 0 else a * n + f)
                    for o in range(graph.out_ptr[k], graph.out_ptr[k + 1]):
                        t = graph.out_next[o]
                        if graph.out_prob[o] > 0 and (t < 0 or not keep[t]):
                            return False
                return True

            if not any(stays(a) for a in replies):
                keep[s] = False
                changed = True
    return keep


@pytest.mark.parametrize("seed", range(12))
def test_stalls_are_the_states_where_the_responder_can_go_on_forever(seed):
    rng = np.random.default_rng(seed)
    g = random_graph(rng, 30, max_actions=3, p_terminal=(0.1, 0.5, 0.8)[seed % 3], local=3)
    for seat in (0, 1):
        strategy = random_strategy(rng, g.row_ptr if seat == 0 else g.col_ptr)
        _, _, stalls = best_response_and_stalls(g, seat, strategy)
        np.testing.assert_array_equal(stalls, stalls_by_peeling(g, seat, strategy))


@pytest.mark.parametrize("seed", range(12))
def test_a_scored_guarantee_is_the_known_one_exactly_when_no_endless_play_is_possible(seed):
    """Without stalls every reply ends play surely: endless play's score never
    counts, so the guarantee scored 0 or 2u is the one scored u, and
    `scored_guarantees` takes it without a best response. With stalls, or with
    different outcome payoffs, it computes them."""
    rng = np.random.default_rng(seed)
    g = random_graph(rng, 40, max_actions=3, p_terminal=(0.3, 0.6, 0.9)[seed % 3], local=4)
    row, col = random_strategy(rng, g.row_ptr), random_strategy(rng, g.col_ptr)
    p1, _, p1_stalls = best_response_and_stalls(g, 0, row)
    p2, _, p2_stalls = best_response_and_stalls(g, 1, col)
    pairs = (scored(g, 0.0), scored(g, 1.0))
    known = (Known(g, p1, p1_stalls), Known(g, p2, p2_stalls))
    fast = scored_guarantees(pairs, pairs, row, col, known=known)
    full = scored_guarantees(pairs, pairs, row, col)
    for name, values, stalls in (("p1_u0", p1, p1_stalls), ("p1_u1", p1, p1_stalls), ("p2_u0", p2, p2_stalls),
                                 ("p2_u1", p2, p2_stalls)):
        if stalls.any():
            np.testing.assert_array_equal(getattr(fast, name), getattr(full, name))
        else:
            assert getattr(fast, name) is values
            np.testing.assert_allclose(getattr(full, name), values, rtol=0, atol=1e-12)
    other = replace(g, terminal_payoff=g.terminal_payoff[::-1].copy())  # same transitions, other payoffs
    moved = scored_guarantees((scored(other, 0.0),) * 2, (scored(other, 0.0),) * 2, row, col, known=known)
    np.testing.assert_array_equal(moved.p1_u0, best_response_values(scored(other, 0.0), 0, row))


def test_stalling_is_scored_apart_from_the_known_guarantee():
    g = stall_loop(0.5)
    col = np.ones(2)
    values, _, stalls = best_response_and_stalls(g, 1, col)
    assert stalls.all()  # P1 can go back and forth forever
    got = scored_guarantees((g, g), (scored(g, 0.0), scored(g, 1.0)), uniform(g.row_ptr), col,
                            known=(Known(g, values, stalls), Known(g, values, stalls)))
    assert isinstance(got, ScoredGuarantees)
    np.testing.assert_allclose(got.p2_u0, [0.4, 0.4], atol=1e-14)  # endless play a loss: P1 gambles
    np.testing.assert_allclose(got.p2_u1, [1.0, 1.0], atol=1e-14)  # endless play a win: P1 stalls


@pytest.mark.parametrize("seed", range(40))
def test_best_response_matches_brute_force(seed):
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(1, 6))
    g = random_graph(rng, n, max_actions=3 if n <= 3 else 2, max_outcomes=2,
                     p_terminal=float(rng.choice([0.0, 0.1, 0.3])))
    for seat in (0, 1):
        strategy = random_strategy(rng, g.row_ptr if seat == 0 else g.col_ptr)
        values, actions = best_response(g, seat, strategy)
        np.testing.assert_allclose(values, brute_force(g, seat, strategy), atol=1e-10)
        # The returned pure policy attains the values in the real game.
        resp = pure_strategy(g, 1 - seat, actions)
        pair = pair_values(g, strategy, resp) if seat == 0 else pair_values(g, resp, strategy)
        np.testing.assert_allclose(pair, values, atol=1e-10)


def cyclic_cases(seed: int):
    """A random graph of 20 to 60 states with cycles, and per seat a random strategy: (rng, graph, [(seat, strategy)])."""
    rng = np.random.default_rng(seed)
    g = random_graph(rng, int(rng.integers(20, 60)), max_actions=3, max_outcomes=3,
                     p_terminal=float(rng.choice([0.02, 0.1])))
    return rng, g, [(seat, random_strategy(rng, g.row_ptr if seat == 0 else g.col_ptr)) for seat in (0, 1)]


@pytest.mark.parametrize("seed", range(12))
def test_a_starting_guess_changes_nothing_but_the_time(seed):
    # The guess only starts each cyclic component's policy iteration: a wrong
    # guess (random, or far outside the payoffs) and the exact answer give the same values.
    rng, g, cases = cyclic_cases(3000 + seed)
    for seat, strategy in cases:
        exact = best_response_values(g, seat, strategy)
        for guess in (exact, rng.random(g.num_states), np.full(g.num_states, 7.0)):
            np.testing.assert_allclose(best_response_values(g, seat, strategy, guess), exact, atol=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_a_starting_reply_changes_nothing_but_the_time(seed):
    # A reply only starts each cyclic component's policy iteration: the best reply itself, a
    # random one, and none given (-1) at some states give the exact answer; a reply naming an
    # action the responder does not have is refused.
    rng, g, cases = cyclic_cases(4000 + seed)
    for seat, strategy in cases:
        exact, best = best_response(g, seat, strategy)
        counts = np.diff(g.col_ptr if seat == 0 else g.row_ptr)
        some = np.floor(rng.random(g.num_states) * counts).astype(np.int64)
        some[rng.random(g.num_states) < 0.3] = -1
        for reply in (best, some):
            for guess in (None, exact):
                np.testing.assert_allclose(best_response_values(g, seat, strategy, guess, reply), exact, atol=1e-12)
        with pytest.raises(ValueError, match="reply"):
            best_response_values(g, seat, strategy, exact, counts)


@pytest.mark.parametrize("seed", range(12))
def test_an_improvement_sweep_skips_only_states_that_cannot_switch(seed):
    # After a sweep records each kept state's lead over its other options, the
    # values move by at most `drift`; the next sweep skips the states leading by
    # more than twice that, and must make exactly the switches of a full sweep.
    rng, g, cases = cyclic_cases(5000 + seed)
    G = g.kernel_arrays()
    cs = np.arange(g.num_states, dtype=np.int64)
    in_k = rng.random(g.num_states) < 0.2  # stalling allowed at some states, worth w_u
    skipped = switched = 0
    for seat, strategy in cases:
        resp_is_row = seat == 1
        sign, w_u = (1.0 if resp_is_row else -1.0), 0.5 * rng.random()
        resp_w = np.zeros(int((G[0] if resp_is_row else G[1])[-1]))
        choice, stall = np.zeros(g.num_states, np.int64), np.zeros(g.num_states, np.bool_)
        X = rng.random((g.num_states, 1))
        br._greedy(G, cs, resp_is_row, strategy, sign, w_u, in_k, X, choice, stall, resp_w, 0.0, np.zeros(0, np.int64))
        lead, drift = np.full(g.num_states, -np.inf), np.zeros(g.num_states)
        br._improve(G, cs, resp_is_row, strategy, sign, w_u, in_k, X, choice, stall, resp_w, 1e-13, lead, drift)
        for moved in (1e-4, 1e-2, 1e-1):
            drift += moved
            X = X + rng.uniform(-moved, moved, X.shape)
            skipped += int(np.sum(lead > 2.0 * drift + br._LEAD_ROUNDING))
            full = [a.copy() for a in (choice, stall, resp_w)]
            changes = br._improve(G, cs, resp_is_row, strategy, sign, w_u, in_k, X, *full, 1e-13,
                                  np.full(g.num_states, -np.inf), np.zeros(g.num_states))
            assert br._improve(G, cs, resp_is_row, strategy, sign, w_u, in_k, X, choice, stall, resp_w, 1e-13,
                               lead, drift) == changes
            for got, want in zip((choice, stall, resp_w), full):
                np.testing.assert_array_equal(got, want)
            switched += changes
    assert skipped > 0 and switched > 0  # both kinds of state were met


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.filterwarnings("ignore:iterative solve did not converge")
def test_iterative_and_sparse_lu_paths_match_dense_path(seed, monkeypatch):
    rng = np.random.default_rng(2000 + seed)
    g = random_graph(rng, 300, max_actions=3, max_outcomes=2, p_terminal=0.05, local=None if seed % 2 else 4)
    row, col = random_strategy(rng, g.row_ptr), random_strategy(rng, g.col_ptr)

    def everything():
        return [best_response_values(g, 0, row), best_response_values(g, 1, col), *outcome_probabilities(g, row, col),
                expected_length_and_distribution(g, row, col, 0, 50)[0]]

    monkeypatch.setattr(linear_solve_mod, "DENSE_MAX", 10**9)  # every component by exact dense elimination
    dense = everything()
    monkeypatch.setattr(linear_solve_mod, "DENSE_MAX", 0)  # every component by BiCGSTAB
    iterative = everything()
    monkeypatch.setattr(linear_solve_mod, "ITER_MAX", 0)  # BiCGSTAB "fails": exact dense fallback ...
    monkeypatch.setattr(linear_solve_mod, "_LU_FIRST", False)
    gth = everything()
    monkeypatch.setattr(linear_solve_mod, "_LU_FIRST", True)  # ... or scipy's sparse LU with refinement
    monkeypatch.setattr(linear_solve_mod, "_GTH_MAX", 0)
    sparse_lu = everything()
    for a, *others in zip(dense, iterative, gth, sparse_lu):
        for b in others:
            np.testing.assert_allclose(b, a, atol=1e-11)


def cycle_with_tiny_exit(length: int, exit_p: float, chords: bool = False) -> GameGraph:
    """0 -> 1 -> ... -> length-1 -> 0; at 0 P1 may quit (a loss), and chance
    leaves the cycle for a win with probability exit_p (so cycling wins surely).
    With `chords`, chance also skips a state half the time (i -> i + 2), so no
    state has a lone successor and none is eliminated before the linear solve
    (`elimination`): the solvers below it see the whole cycle."""
    def moves(i: int, mass: float) -> list:
        if not chords:
            return [(mass, (i + 1) % length)]
        return [(mass / 2, (i + 1) % length), (mass / 2, (i + 2) % length)]
    spec = {i: {("-", "-"): moves(i, 1.0)} for i in range(length)}
    spec[0] = {("cycle", "-"): [*moves(0, 1 - exit_p), (exit_p, W)], ("quit", "-"): [(1.0, L)]}
    return build(spec, TERMS)


def cycle_figures(g: GameGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Outcome probabilities when P1 always cycles, and P1's best response (values, actions)."""
    cycle = np.zeros(len(g.row_actions))
    cycle[g.row_ptr[:-1]] = 1.0
    term, unend = outcome_probabilities(g, cycle, np.ones(len(g.col_actions)))
    values, actions = best_response(g, 1, np.ones(len(g.col_actions)))
    return term, unend, values, actions


@pytest.mark.parametrize("chords", [False, True], ids=["a cycle", "a cycle with chords"])
@pytest.mark.parametrize("length, exit_p", [(5, 1e-20), (100, 1e-12), (100, 1e-20), (500, 1e-9)])
@pytest.mark.parametrize("mode", ["default", "iterative", "fallback", "dense fallback", "sparse LU"])
@pytest.mark.filterwarnings("ignore:iterative solve did not converge")
def test_nearly_closed_components_stay_exact(length, exit_p, mode, chords, monkeypatch):
    # Expected stay ~ length / exit_p turns: plain LU of I - P would be off by ~eps * that.
    if mode == "sparse LU" and exit_p < 1e-16:
        pytest.skip("the exit is below rounding: only the GTH elimination can see it")
    settings = {"default": {}, "iterative": {"DENSE_MAX": 0},
                "fallback": {"DENSE_MAX": 0, "ITER_MAX": 0},  # sparse LU, dense GTH where it falls short
                "dense fallback": {"DENSE_MAX": 0, "ITER_MAX": 0, "_LU_FIRST": False},
                "sparse LU": {"DENSE_MAX": 0, "ITER_MAX": 0, "_GTH_MAX": 0}}[mode]
    for name, value in settings.items():
        monkeypatch.setattr(linear_solve_mod, name, value)
    term, unend, values, actions = cycle_figures(cycle_with_tiny_exit(length, exit_p, chords))
    np.testing.assert_allclose(term[:, 0], 1.0, atol=1e-14)
    np.testing.assert_allclose(unend, 0.0, atol=1e-14)
    np.testing.assert_allclose(values, 1.0, atol=1e-14)
    assert actions[0] == 0


def test_a_component_bicgstab_crawls_on_goes_to_sparse_lu_and_stays_exact(monkeypatch):
    # 500 states, expected stay 5e11 turns: far more than 300 BiCGSTAB steps. (Without
    # chords the elimination before the linear solve settles the cycle alone.)
    outcomes = []
    solve = linear_solve_mod._sparse_lu_solve

    def counted(*args):
        sol, outcome = solve(*args)
        outcomes.append(outcome)
        return sol, outcome

    monkeypatch.setattr(linear_solve_mod, "_sparse_lu_solve", counted)
    term, _, values, _ = cycle_figures(cycle_with_tiny_exit(500, 1e-9, chords=True))
    assert outcomes and set(outcomes) == {"exact"}
    np.testing.assert_allclose(term[:, 0], 1.0, atol=1e-14)
    np.testing.assert_allclose(values, 1.0, atol=1e-14)


@pytest.mark.parametrize("seed", range(10))
def test_certificate_sandwich_and_probabilities(seed):
    rng = np.random.default_rng(3000 + seed)
    g = random_graph(rng, 80, max_actions=3, max_outcomes=2, p_terminal=0.1, local=5)
    row, col = random_strategy(rng, g.row_ptr), random_strategy(rng, g.col_ptr)
    values = pair_values(g, row, col)
    cert = certify(g, values, row, col)
    assert cert.min_gap >= -1e-12
    # The pair's own values sit inside the sandwich.
    assert np.all(cert.p1_guarantee <= values + 1e-12) and np.all(values <= cert.p2_guarantee + 1e-12)
    np.testing.assert_allclose(cert.exploitability,
                               np.maximum(np.maximum(values - cert.p1_guarantee, cert.p2_guarantee - values), 0))
    term, unend = outcome_probabilities(g, row, col)
    assert term.min() >= -1e-14 and unend.min() >= -1e-14
    np.testing.assert_allclose(term.sum(axis=1) + unend, 1.0, atol=1e-12)
    start = int(rng.integers(g.num_states))
    expected, pmf = expected_length_and_distribution(g, row, col, start, 3000)
    p_end = 1.0 - unend[start]
    assert pmf.min() >= 0
    assert pmf.sum() <= p_end + 1e-12
    np.testing.assert_allclose(pmf.sum(), p_end, atol=1e-9)  # tail is negligible after 3000 turns
    if p_end > 1e-9:
        turns = np.arange(1, len(pmf) + 1)
        assert expected == pytest.approx(turns @ pmf / pmf.sum(), rel=1e-8)
    # Every state's ending turns at once, by the same linear solves as the table's.
    _, _, ending_turns = outcomes_and_ending_turns(g, row, col, terminal_turns=np.zeros(len(g.terminal_payoff)))
    if p_end > 1e-9:
        assert ending_turns[start] / p_end == pytest.approx(expected, rel=1e-9)


def test_closed_class_never_ends_and_length_tail():
    # 0 -> (1/2) closed 2-cycle {1, 2} or (1/2) a geometric exit loop at 3.
    g = build(
        {
            0: {("-", "-"): [(0.5, 1), (0.5, 3)]},
            1: {("-", "-"): [(1.0, 2)]},
            2: {("-", "-"): [(1.0, 1)]},
            3: {("-", "-"): [(0.25, W), (0.75, 3)]},
        },
        TERMS,
    )
    row, col = uniform(g.row_ptr), uniform(g.col_ptr)
    term, unend = outcome_probabilities(g, row, col)
    np.testing.assert_allclose(unend, [0.5, 1.0, 1.0, 0.0], atol=1e-14)
    np.testing.assert_allclose(term[:, 0], [0.5, 0.0, 0.0, 1.0], atol=1e-14)
    expected, pmf = expected_length_and_distribution(g, row, col, 0, 10)
    # Ends at turn t >= 2 with prob 1/2 * 0.75^(t-2) * 0.25; given ending, T = 1 + Geom(1/4): E = 5.
    want = np.r_[0.0, 0.5 * 0.25 * 0.75 ** np.arange(9)]
    np.testing.assert_allclose(pmf, want, atol=1e-15)
    tail = 0.5 * 0.75**9  # still in the exit loop after 10 turns
    assert pmf.sum() + tail + unend[0] == pytest.approx(1.0, abs=1e-14)
    assert expected == pytest.approx(5.0, abs=1e-12)
    # Per state, E[T 1{end}]: 0 ends with prob 1/2 after 1 + 4 turns on average; 1 and 2 never end.
    _, _, turns = outcomes_and_ending_turns(g, row, col, terminal_turns=np.zeros(len(g.terminal_payoff)))
    np.testing.assert_allclose(turns, [2.5, 0.0, 0.0, 4.0], atol=1e-13)


def test_ending_turns_of_a_cut_out_part_add_what_each_exit_carries():
    # State 0 exits half the time to an exit standing for a state that ends (with
    # probability 0.8) after 3 more turns on average, so E[T 1{end}] there is 2.4;
    # the other half it ends at once: P(end) = 0.5 + 0.4, and
    # E[T 1{end}] = 0.9 (this turn, for every ending) + 0.5 * 2.4.
    g = build({0: {("-", "-"): [(0.5, W), (0.5, "exit")]}}, {W: 1.0, L: 0.0, "exit": 0.5})
    row, col = uniform(g.row_ptr), uniform(g.col_ptr)
    # One row per terminal (W, L, the exit): the chances of W, L, then of never ending.
    outcomes = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.8, 0.0, 0.2]])
    term, unend, turns = outcomes_and_ending_turns(g, row, col, outcomes, np.array([0.0, 0.0, 2.4]))
    assert term[0].sum() == pytest.approx(0.9, abs=1e-14) and unend[0] == pytest.approx(0.1, abs=1e-14)
    assert turns[0] == pytest.approx(0.9 + 0.5 * 2.4, abs=1e-14)
    assert turns[0] / term[0].sum() == pytest.approx((0.5 * 1 + 0.4 * 4) / 0.9, abs=1e-13)


def test_rejects_bad_strategies():
    g = win_or_wait()
    with pytest.raises(ValueError):
        best_response_values(g, 0, np.array([0.5, 0.4]))
    with pytest.raises(ValueError):
        best_response_values(g, 0, np.array([1.0]))
    with pytest.raises(ValueError):
        best_response_values(g, 2, np.array([1.0]))


def test_bellman_residual_with_stage_kernel():
    pytest.importorskip("solver.core.stage")
    rng = np.random.default_rng(7)
    g = random_graph(rng, 30, max_actions=3, max_outcomes=2, p_terminal=0.2)
    values = rng.random(g.num_states)
    np.testing.assert_allclose(bellman_residual(g, values), bellman_residual(g, values, solve=lp_value), atol=1e-9)


# --------------------------------------------------------------------------
# Scale (run with -m slow).


def synthetic_graph(n: int, seed: int = 0, block: int = 4, actions: int = 3, outcomes: int = 2) -> GameGraph:
    """n states, actions x actions cells, `outcomes` outcomes per cell: mostly short
    cycles (targets inside the state's block of `block` states), some forward jumps
    (a DAG between blocks) and terminals."""
    rng = np.random.default_rng(seed)
    cells = n * actions * actions
    k = cells * outcomes
    owner = np.repeat(np.arange(n), actions * actions * outcomes)
    kind = rng.random(k)
    block_start = owner - owner % block
    in_block = np.minimum(block_start + rng.integers(0, block, k), n - 1)
    forward = np.minimum(owner + rng.integers(1, 1000, k), n - 1)
    term = -1 - rng.integers(0, 3, k)
    out_next = np.where(kind < 0.55, in_block, np.where(kind < 0.9, forward, term))
    out_next[(owner == n - 1) & (out_next == n - 1)] = -1
    probs = rng.random((cells, outcomes)) + 0.1
    probs /= probs.sum(axis=1, keepdims=True)
    return GameGraph(
        states=np.arange(n, dtype=np.int64),
        row_ptr=np.arange(n + 1, dtype=np.int64) * actions,
        row_actions=np.tile(np.arange(actions, dtype=np.int16), n),
        col_ptr=np.arange(n + 1, dtype=np.int64) * actions,
        col_actions=np.tile(np.arange(actions, dtype=np.int16), n),
        cell_ptr=np.arange(n + 1, dtype=np.int64) * actions * actions,
        out_ptr=np.arange(cells + 1, dtype=np.int64) * outcomes,
        out_next=out_next.astype(np.int64),
        out_prob=probs.ravel(),
        terminal_payoff=np.array([0.0, 1.0, 0.3]),
        terminal_labels=("p2", "p1", "x"),
        unending_payoff=0.5,
        action_labels=("a", "b", "c"),
    )


@pytest.mark.slow
def test_speed_one_million_states():
    g = synthetic_graph(1_000_000)
    rng = np.random.default_rng(1)
    row = random_strategy(rng, g.row_ptr)
    best_response_values(synthetic_graph(1000), 0, row[:3000])  # compile
    t0 = time.perf_counter()
    values = best_response_values(g, 0, row)
    elapsed = time.perf_counter() - t0
    print(f"best_response_values on {g.num_states} states: {elapsed:.2f}s")
    assert np.all(np.isfinite(values))


@pytest.mark.parametrize("seed", range(6))
def test_chain_values_are_the_pairs_values_and_without_choices_both_guarantees(seed):
    rng = np.random.default_rng(5000 + seed)
    g = random_graph(rng, 60, max_actions=3, max_outcomes=2, p_terminal=0.15, local=4)
    row, col = random_strategy(rng, g.row_ptr), random_strategy(rng, g.col_ptr)
    np.testing.assert_allclose(chain_values(g, row, col), pair_values(g, row, col), atol=1e-12)
    # Without a choice on either side, a best response only evaluates the chain.
    single = random_graph(rng, 60, max_actions=1, max_outcomes=3, p_terminal=0.15, local=4)
    ones = np.ones(single.num_states)
    values = chain_values(single, ones, ones)
    np.testing.assert_allclose(values, best_response_values(single, 0, ones), atol=1e-12)
    np.testing.assert_allclose(values, best_response_values(single, 1, ones), atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_predecessors_among_some_states_are_those_a_plain_scan_finds(seed):
    # A few states of a big graph are looked up by binary search, many through a map of the
    # whole graph: both give, for each listed state, the listed states with a move to it.
    rng = np.random.default_rng(6000 + seed)
    graph = random_graph(rng, 200, max_actions=3, max_outcomes=3, p_terminal=0.1)
    for count in (1, 7, 24, 25, 120, 200):
        states = rng.permutation(graph.num_states)[:count].astype(np.int64)
        ptr, pred = predecessors_among(states, graph.cell_ptr, graph.out_ptr, graph.out_next, graph.num_states)
        place = {int(s): j for j, s in enumerate(states)}
        expected = [[] for _ in states]
        for j, s in enumerate(states):
            for o in range(graph.out_ptr[graph.cell_ptr[s]], graph.out_ptr[graph.cell_ptr[s + 1]]):
                t = int(graph.out_next[o])
                if t >= 0 and t in place:
                    expected[place[t]].append(j)
        assert [list(pred[ptr[j] : ptr[j + 1]]) for j in range(count)] == expected
