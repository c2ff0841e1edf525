"""Where and when play ends under a pair of stationary strategies: the
absorbing Markov chain they make, solved exactly component by component
(`linear_solve`): its value (`chain_values`), the chance of each outcome and
of never ending (`outcome_probabilities`), the expected turns of the games
that end, and the distribution of the game's length (`length_distribution`,
propagated turn by turn). Closed classes with no way out never end.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .components import component_of_kernel, tarjan
from .graph import GameGraph
from .linear_solve import chain_components, chain_solve, check_strategy


def chain_values(
    graph: GameGraph, row_strategy: np.ndarray, col_strategy: np.ndarray, terminal_payoffs: np.ndarray | None = None,
) -> np.ndarray:
    """P1's expected payoff per state when both players play the given
    stationary strategies: the Markov chain they make, solved exactly
    (component by component), play that never ends paying the unending payoff.
    Where neither side has a choice this is also each side's guarantee. With
    `terminal_payoffs` (terminals x k), k payoff columns of the same chain at
    once, shape (n, k); else the graph's own payoffs, shape (n,)."""
    G = graph.kernel_arrays()
    n = graph.num_states
    row_w = check_strategy(row_strategy, G[0], "P1")
    col_w = check_strategy(col_strategy, G[1], "P2")
    comp_ptr, comp_states, comp_of = chain_components(G, row_w, col_w, n)
    payoff = np.ascontiguousarray(G[6] if terminal_payoffs is None else terminal_payoffs, np.float64)
    payoff = payoff.reshape(payoff.shape[0], -1)
    if payoff.shape[0] != G[6].shape[0]:
        raise ValueError(f"terminal_payoffs needs {G[6].shape[0]} rows, got {payoff.shape[0]}")
    unending = np.full(payoff.shape[1], float(graph.unending_payoff))
    X = chain_solve(G, row_w, col_w, comp_ptr, comp_states, comp_of, payoff, unending, np.zeros((0, payoff.shape[1])), n)
    return X[:, 0].copy() if terminal_payoffs is None else X


def outcome_probabilities(
    graph: GameGraph, row_strategy: np.ndarray, col_strategy: np.ndarray,
    terminal_outcomes: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per start state: probability of ending in each terminal outcome, shape (n, T),
    and of never ending, shape (n,), under the two stationary strategies.

    With `terminal_outcomes` (one row per terminal of `graph`, K + 1 columns:
    K outcomes, then never ending), reaching a terminal counts as that row's
    distribution instead (a cut-out part of a game, whose exits lead to states
    with known outcome probabilities); the result then has K columns."""
    terminal, unending, _turns = outcomes_and_ending_turns(graph, row_strategy, col_strategy, terminal_outcomes)
    return terminal, unending


def outcomes_and_ending_turns(
    graph: GameGraph, row_strategy: np.ndarray, col_strategy: np.ndarray,
    terminal_outcomes: np.ndarray | None = None, terminal_turns: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """`outcome_probabilities`, and given `terminal_turns` also each state's
    ending turns, E[T 1{the game ends}] (T the turns played
    until it ends): divided by the probability of ending, the expected length
    of the games that end. `terminal_turns` (one per terminal of `graph`, 0 for
    a real end) is what reaching each terminal adds beyond its turn: a cut-out
    part's exits pay the ending turns of the states they lead to."""
    G = graph.kernel_arrays()
    n = graph.num_states
    row_w = check_strategy(row_strategy, G[0], "P1")
    col_w = check_strategy(col_strategy, G[1], "P2")
    T = G[6].shape[0]
    if terminal_outcomes is None:
        term_vec = np.zeros((T, T + 1))
        term_vec[np.arange(T), np.arange(T)] = 1.0
    else:
        term_vec = np.ascontiguousarray(terminal_outcomes, np.float64)
        if term_vec.ndim != 2 or term_vec.shape[0] != T:
            raise ValueError(f"terminal_outcomes needs {T} rows, got shape {term_vec.shape}")
    K = term_vec.shape[1] - 1
    comp_ptr, comp_states, comp_of = chain_components(G, row_w, col_w, n)
    inf_vec = np.zeros(K + 1)
    inf_vec[K] = 1.0
    X = chain_solve(G, row_w, col_w, comp_ptr, comp_states, comp_of, term_vec, inf_vec, np.zeros((0, K + 1)), n)
    if terminal_turns is None:
        return X[:, :K].copy(), X[:, K].copy(), None
    turns_vec = np.ascontiguousarray(terminal_turns, np.float64).reshape(-1, 1)
    if turns_vec.shape[0] != T:
        raise ValueError(f"terminal_turns needs {T} entries, got {turns_vec.shape[0]}")
    # h(s) = P(end | s) + sum_s' P(s, s') h(s') + sum_exits P(s, e) h(e): the turn just
    # played counts once for every way of ending, and play that never ends adds nothing.
    ending = np.ascontiguousarray(X[:, :K].sum(axis=1).reshape(-1, 1))
    H = chain_solve(G, row_w, col_w, comp_ptr, comp_states, comp_of, turns_vec, np.zeros(1), ending, n)
    return X[:, :K].copy(), X[:, K].copy(), H[:, 0].copy()


@njit(cache=True)
def _reachable(G, row_w, col_w, start):
    row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, _pay = G
    n = row_ptr.shape[0] - 1
    seen = np.zeros(n, np.bool_)
    order = np.empty(n, np.int64)
    order[0] = start
    seen[start] = True
    qt = 1
    qh = 0
    while qh < qt:
        s = order[qh]
        qh += 1
        r0 = row_ptr[s]
        c0 = col_ptr[s]
        nn = col_ptr[s + 1] - c0
        for r in range(row_ptr[s + 1] - r0):
            if row_w[r0 + r] <= 0.0:
                continue
            for c in range(nn):
                if col_w[c0 + c] <= 0.0:
                    continue
                k = cell_ptr[s] + r * nn + c
                for o in range(out_ptr[k], out_ptr[k + 1]):
                    t = out_next[o]
                    if t >= 0 and out_prob[o] > 0.0 and not seen[t]:
                        seen[t] = True
                        order[qt] = t
                        qt += 1
    return order[:qt].copy()


@njit(cache=True)
def _merged_chain(G, row_w, col_w, reach, loc):
    """Transition matrix of the pair on the reachable states (local CSR, merged
    duplicates) and each state's probability of ending this turn."""
    row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, _pay = G
    m_states = reach.shape[0]
    cap = 0
    for j in range(m_states):
        s = reach[j]
        cap += out_ptr[cell_ptr[s + 1]] - out_ptr[cell_ptr[s]]
    ptr = np.zeros(m_states + 1, np.int64)
    idx = np.empty(cap, np.int64)
    data = np.empty(cap, np.float64)
    term = np.zeros(m_states, np.float64)
    slot = np.full(m_states, -1, np.int64)  # slot[t] = position of t in the current row
    nnz = 0
    for j in range(m_states):
        s = reach[j]
        row_start = nnz
        r0 = row_ptr[s]
        c0 = col_ptr[s]
        nn = col_ptr[s + 1] - c0
        for r in range(row_ptr[s + 1] - r0):
            wr = row_w[r0 + r]
            if wr <= 0.0:
                continue
            for c in range(nn):
                wc = col_w[c0 + c]
                if wc <= 0.0:
                    continue
                k = cell_ptr[s] + r * nn + c
                for o in range(out_ptr[k], out_ptr[k + 1]):
                    p = out_prob[o]
                    if p <= 0.0:
                        continue
                    q = wr * wc * p
                    t = out_next[o]
                    if t < 0:
                        term[j] += q
                        continue
                    lt = loc[t]
                    if slot[lt] >= row_start:
                        data[slot[lt]] += q
                    else:
                        slot[lt] = nnz
                        idx[nnz] = lt
                        data[nnz] = q
                        nnz += 1
        ptr[j + 1] = nnz
    return ptr, idx[:nnz].copy(), data[:nnz].copy(), term


def expected_length_and_distribution(
    graph: GameGraph, row_strategy: np.ndarray, col_strategy: np.ndarray, start: int, max_turns: int
) -> tuple[float, np.ndarray]:
    """Game length from state index `start` under the two strategies.

    Returns `(expected_turns_given_end, pmf)`: `pmf[t - 1]` is the probability
    that the game ends at turn t (t = 1..max_turns); the expectation is exact
    (linear solves): E[T | the game ends], nan if it never ends.
    """
    G, row_w, col_w, reach, (ptr, idx, data, term) = _reachable_chain(graph, row_strategy, col_strategy, start)
    n = graph.num_states
    # Exact: p(s) = P(end | s); h(s) = E[T 1{end} | s] = p(s) + sum_s' P(s, s') h(s').
    comp_ptr, local_states = tarjan(ptr, idx)
    comp_states = reach[local_states]
    comp_of = component_of_kernel(comp_ptr, comp_states, n)
    T = G[6].shape[0]
    zero = np.zeros(1)
    p = chain_solve(G, row_w, col_w, comp_ptr, comp_states, comp_of, np.ones((T, 1)), zero, np.zeros((0, 1)), n)
    h = chain_solve(G, row_w, col_w, comp_ptr, comp_states, comp_of, np.zeros((T, 1)), zero, p, n)
    p_end = p[start, 0]
    expected = float(h[start, 0] / p_end) if p_end > 0 else float("nan")
    return expected, _propagate(ptr, idx, data, term, int(max_turns))


def length_distribution(
    graph: GameGraph, row_strategy: np.ndarray, col_strategy: np.ndarray, start: int, max_turns: int
) -> np.ndarray:
    """`pmf[t - 1]`: the probability that the game ends at turn t (t = 1..max_turns)
    from state index `start` under the two strategies; the distribution half of
    `expected_length_and_distribution`, without its linear solves."""
    _G, _row_w, _col_w, _reach, (ptr, idx, data, term) = _reachable_chain(graph, row_strategy, col_strategy, start)
    return _propagate(ptr, idx, data, term, int(max_turns))


def _reachable_chain(graph: GameGraph, row_strategy: np.ndarray, col_strategy: np.ndarray, start: int) -> tuple:
    """The kernel arrays, both strategies' weights, the states the pair reaches
    from `start` (it first) and the chain on them (`_merged_chain`)."""
    G = graph.kernel_arrays()
    n = graph.num_states
    if not 0 <= start < n:
        raise IndexError(start)
    row_w = check_strategy(row_strategy, G[0], "P1")
    col_w = check_strategy(col_strategy, G[1], "P2")
    reach = _reachable(G, row_w, col_w, int(start))
    loc = np.full(n, -1, np.int64)
    loc[reach] = np.arange(reach.shape[0])
    return G, row_w, col_w, reach, _merged_chain(G, row_w, col_w, reach, loc)


@njit(cache=True)
def _propagate(ptr, idx, data, term, max_turns):
    """pmf[t-1] = P(end at turn t) from local state 0: the distribution (a row
    vector) times P, turn by turn, pushing only from states holding mass (few
    in the early turns)."""
    size = ptr.shape[0] - 1
    dist = np.zeros(size)
    nxt = np.zeros(size)
    dist[0] = 1.0
    pmf = np.zeros(max_turns)
    for t in range(max_turns):
        ended = 0.0
        for j in range(size):
            mass = dist[j]
            if mass == 0.0:
                continue
            dist[j] = 0.0
            ended += mass * term[j]
            for e in range(ptr[j], ptr[j + 1]):
                nxt[idx[e]] += mass * data[e]
        pmf[t] = ended
        dist, nxt = nxt, dist
    return pmf


@njit(cache=True)
def weights_of_outcomes(cell, out_count, prob):
    """Per outcome of expanded states: its cell's weight (`cell_weights`; cells
    row-major per state, `out_count` outcomes each) times the outcome's
    probability (0 where that is not positive); `core.play.follow_play`'s,
    compiled."""
    out = np.zeros(prob.shape[0])
    o = 0
    for k in range(cell.shape[0]):
        for _ in range(out_count[k]):
            p = prob[o]
            out[o] = cell[k] * p if p > 0.0 else 0.0
            o += 1
    return out


@njit(cache=True)
def cell_weights(row_count, col_count, row_w, col_w):
    """Per cell of each state (row-major per state): P1's weight on its row
    times P2's on its column, 0 where either is not positive. Following play
    resolves only the cells of positive weight."""
    cells = 0
    for s in range(row_count.shape[0]):
        cells += row_count[s] * col_count[s]
    out = np.zeros(cells)
    k = 0
    r0 = 0
    c0 = 0
    for s in range(row_count.shape[0]):
        m = row_count[s]
        n = col_count[s]
        for r in range(m):
            wr = row_w[r0 + r]
            for c in range(n):
                wc = col_w[c0 + c]
                out[k] = wr * wc if wr > 0.0 and wc > 0.0 else 0.0
                k += 1
        r0 += m
        c0 += n
    return out


@njit(cache=True)
def merged_moves(row_count, col_count, out_count, weight, target, terminals):
    """`core.play.kept_of`'s merge, compiled: per state of an expansion (cells
    row-major per state), its outcomes of positive `weight` merged by
    `target` (a table index, or -1 - k for terminal outcome k), each merged
    weight summed in outcome order from zero, as `bincount` sums it. Returns
    the probability of ending this turn (the terminals' merged weights added
    in their order), each state's count of moves to a state, their targets
    (ascending within a state) and probabilities."""
    states = row_count.shape[0]
    ending = np.zeros(states)
    count = np.zeros(states, np.int32)
    kept = 0
    for o in range(weight.shape[0]):
        if weight[o] > 0.0:
            kept += 1
    to = np.empty(kept, np.int64)
    prob = np.empty(kept)
    order = np.empty(kept, np.int64)  # a state's kept outcomes, sorted by target, then by position
    by_terminal = np.zeros(terminals)
    k = 0
    o = 0
    e = 0
    for s in range(states):
        first = o
        for _ in range(row_count[s] * col_count[s]):
            o += out_count[k]
            k += 1
        n = 0
        for j in range(first, o):
            if weight[j] > 0.0:
                # Insertion by (target, position): equal targets keep their outcomes' order.
                i = n
                while i > 0 and target[order[i - 1]] > target[j]:
                    order[i] = order[i - 1]
                    i -= 1
                order[i] = j
                n += 1
        i = 0
        while i < n:
            t = target[order[i]]
            total = 0.0
            while i < n and target[order[i]] == t:
                total += weight[order[i]]
                i += 1
            if t < 0:
                by_terminal[-1 - t] = total
            else:
                to[e] = t
                prob[e] = total
                e += 1
                count[s] += 1
        for t in range(terminals):
            ending[s] += by_terminal[t]
            by_terminal[t] = 0.0
    return ending, count, to[:e], prob[:e]


@njit(cache=True)
def sorted_positions(haystack, needles):
    """The position of each of `needles` (ascending, distinct) in `haystack`
    (ascending), -1 where it is absent. Each search gallops on from where the
    last one ended: following play looks up a chunk's successors in a table
    of tens of millions of codes, where a search from the whole range misses
    the cache at each of its last dozen steps (on the printed rules' table,
    this took a third of numpy's `searchsorted` time)."""
    out = np.empty(needles.shape[0], np.int64)
    n = haystack.shape[0]
    lo = 0
    for i in range(needles.shape[0]):
        x = needles[i]
        hi = lo
        step = 1
        while hi < n and haystack[hi] < x:  # everything before lo is below x
            lo = hi + 1
            hi += step
            step *= 2
        hi = min(hi, n)
        while lo < hi:
            mid = (lo + hi) >> 1
            if haystack[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo if lo < n and haystack[lo] == x else -1
    return out


@njit(cache=True)
def propagate_figures(ptr, idx, data, ending, start, max_turns, alive_below, sets, choice_ptr, choice_label,
                      choice_weight, labels):
    """The propagation of `chain.turn_by_turn` (its figures, from a chain's
    CSR arrays): the mass pushed along the chain's rows (P^T m, as
    `PlayChain.masses` computes it), only from states holding some. The
    first `sets` of the tuples `choice_ptr`, `choice_label`, `choice_weight`
    are the labelled weights summed (each a seat's strategy, as it is)."""
    n = ptr.shape[0] - 1
    mass = np.zeros(n)
    pushed = np.zeros(n)
    visits = np.zeros(n)
    pmf = np.zeros(max_turns)
    alive = np.zeros(max_turns)
    chosen = np.zeros((sets, max_turns, labels))
    mass[start] = 1.0
    followed = 0
    following = True
    for t in range(max_turns):
        if following:
            total = 0.0
            for j in range(n):
                total += mass[j]
            if total < alive_below:
                following = False
            else:
                alive[t] = total
                followed = t + 1
        ended = 0.0
        held = False
        for j in range(n):
            m = mass[j]
            if m == 0.0:
                continue
            held = True
            mass[j] = 0.0
            ended += m * ending[j]
            if following:
                visits[j] += m
                for k in range(sets):
                    at, label, weight = choice_ptr[k], choice_label[k], choice_weight[k]
                    for e in range(at[j], at[j + 1]):
                        chosen[k, t, label[e]] += m * weight[e]
            for e in range(ptr[j], ptr[j + 1]):
                pushed[idx[e]] += m * data[e]
        pmf[t] = ended
        if not held:
            break
        mass, pushed = pushed, mass
    return visits, pmf, alive[:followed].copy(), chosen[:, :followed].copy()
