"""Exact best response to a stationary strategy in a cyclic stochastic game.

Fixing one player's stationary strategy leaves the other player (the
*responder*) an MDP whose run pays the terminal payoff where play ends and
`unending_payoff` (u) if it never ends. Below, payoffs are taken from the
responder's side (w = payoff for P1 responding, w = -payoff for P2), so the
responder maximises w; m = min(all terminal w, w_u) is its worst payoff.

u lies between the terminal payoffs, so this is neither maximum reachability
nor a discounted problem, and value iteration converges to whichever fixed
point its start leads to: from the bottom, a maximiser with a self-loop and a
0.3 exit settles at 0.3 instead of 0.5; from the top, a pure self-loop stays at
1 instead of 0.5. The method:

1. K = the states from which the responder can keep play going forever with
   probability 1: the greatest set such that every state in it has an action
   all of whose possible successors (over the fixed player's support and
   chance) are non-terminal and in K. Computed by peeling (a worklist removes
   states without such an action and re-checks their predecessors).
2. Give the responder an extra "stall" action at K states worth exactly w_u.
   It is realisable: from a K state the responder can really keep play going
   forever. Now let runs that never end (without stalling) pay m, the worst
   payoff. The true value equals the value of this modified problem: a
   modified strategy is emulated in the real game by playing the K-staying
   action instead of stalling (never worse, since real unending pays u >= m),
   and conversely under an optimal stationary policy every never-ending run
   falls into a closed class lying inside K, where stalling yields the same u.
3. The modified problem is a reachability-reward problem whose value is the
   *least* fixed point above m of
       V(s) = max( max_a Q(s, a; V),  w_u if s in K ).
   It is solved component by component in SCC order of the graph of play
   against the fixed strategy (successor components are final first). Inside
   a component: a few Gauss-Seidel value-iteration sweeps from m (from below;
   only a warm start), the greedy policy, then policy iteration with exact
   evaluation: states from which the policy can never leave the component (no
   terminal, no outside successor, no stall reachable) get m, the others solve
   (I - P) v = b. Improvement switches an action only for a gain > eps (1e-13
   times the payoff scale). With "never-ending runs pay m" every switch
   strictly raises the policy's value, so this terminates; at the end v is the
   value of a real policy (so v <= lfp) and a fixed point of the operator (so
   v >= lfp): optimal, up to eps times the expected time spent in the
   component. (A gain below rounding is invisible: if a loop's only way out
   has probability 1e-20, Q(loop) = 0.9 + 1e-21 rounds to 0.9 and a 0.9 exit
   is kept although looping is worth 1. Such exits come from strategy weights
   that are noise; zero them before certifying if they are.)

Each component's policy evaluation is an exact linear solve (`linear_solve`).

The returned responder policy replaces "stall" by a K-staying action; the pure
stationary policy obtained attains the values in the real game.
"""

from __future__ import annotations

import weakref

import numpy as np
from numba import njit

from . import linear_solve
from .components import component_of_kernel, successor_kernel, tarjan
from .graph import GameGraph
from .linear_solve import build_system, check_strategy, component_solve, fallback_solve, reach_exit

_VI_SWEEPS = 20  # Gauss-Seidel warm-start sweeps before policy iteration ...
_VI_MIN_SIZE = 8  # ... skipped for components this small
_VI_TOL = 1e-14
_MAX_POLICY_ITERATIONS = 10_000
_EPS = 1e-13  # policy-improvement threshold, times the payoff scale
_LEAD_ROUNDING = 1e-14
"""Slack for round-off in a skipped state's Q values (payoffs of order 1): a
state is swept again unless its lead clears twice its drift by this much,
and the improvement threshold (at least 1e-13) lies beyond it too."""


@njit(cache=True)
def _n_resp(G, s, resp_is_row):
    row_ptr, col_ptr = G[0], G[1]
    if resp_is_row:
        return row_ptr[s + 1] - row_ptr[s]
    return col_ptr[s + 1] - col_ptr[s]


@njit(cache=True, inline="always")
def _fixed_side(G, s, resp_is_row):
    """(first weight index, action count) of the fixed player at s, the row
    length of s's cell block and its first cell: cell (responder a, fixed f)
    is base + a * nn + f when the responder picks rows, base + f * nn + a
    otherwise."""
    row_ptr, col_ptr, cell_ptr = G[0], G[1], G[2]
    nn = col_ptr[s + 1] - col_ptr[s]
    if resp_is_row:
        return col_ptr[s], nn, nn, cell_ptr[s]
    return row_ptr[s], row_ptr[s + 1] - row_ptr[s], nn, cell_ptr[s]


@njit(cache=True)
def _q(G, s, a, resp_is_row, fixed_w, sign, X):
    """Responder's expected w after action a at s, continuation values X[:, 0]."""
    _r, _c, _k, out_ptr, out_next, out_prob, pay = G
    f0, nf, nn, base = _fixed_side(G, s, resp_is_row)
    total = 0.0
    for f in range(nf):
        wf = fixed_w[f0 + f]
        if wf <= 0.0:
            continue
        k = base + a * nn + f if resp_is_row else base + f * nn + a
        acc = 0.0
        for o in range(out_ptr[k], out_ptr[k + 1]):
            p = out_prob[o]
            if p <= 0.0:
                continue
            t = out_next[o]
            if t < 0:
                acc += p * sign * pay[-1 - t]
            else:
                acc += p * X[t, 0]
        total += wf * acc
    return total


@njit(cache=True)
def _stays(G, s, a, resp_is_row, fixed_w, in_k):
    """Whether action a at s surely leads to a state of K (never to a terminal)."""
    _r, _c, _k, out_ptr, out_next, out_prob, _pay = G
    f0, nf, nn, base = _fixed_side(G, s, resp_is_row)
    for f in range(nf):
        if fixed_w[f0 + f] <= 0.0:
            continue
        k = base + a * nn + f if resp_is_row else base + f * nn + a
        for o in range(out_ptr[k], out_ptr[k + 1]):
            if out_prob[o] <= 0.0:
                continue
            t = out_next[o]
            if t < 0 or not in_k[t]:
                return False
    return True


@njit(cache=True)
def _check_k(G, s, resp_is_row, fixed_w, in_k, witness):
    for a in range(_n_resp(G, s, resp_is_row)):
        if _stays(G, s, a, resp_is_row, fixed_w, in_k):
            witness[s] = a
            return True
    return False


@njit(cache=True)
def _some_move_may_go_on_surely(out_ptr, out_next, out_prob):
    """Whether some cell's outcomes all go on (none ends play with a positive
    chance). Without one no reply keeps play going surely: K is empty, whatever
    the strategies (a buzzer game, where every turn may be the last)."""
    for k in range(out_ptr.shape[0] - 1):
        ends = False
        for o in range(out_ptr[k], out_ptr[k + 1]):
            if out_next[o] < 0 and out_prob[o] > 0.0:
                ends = True
                break
        if not ends:
            return True
    return False


_MAY_GO_ON: weakref.WeakKeyDictionary[GameGraph, bool] = weakref.WeakKeyDictionary()
"""`_some_move_may_go_on_surely` of each graph still in use: a buzzer game, where
no move goes on surely, is scanned whole, and hurried play asks it of the same
graph every round."""


def _may_go_on(graph: GameGraph, G: tuple) -> bool:
    if graph not in _MAY_GO_ON:
        _MAY_GO_ON[graph] = bool(_some_move_may_go_on_surely(G[3], G[4], G[5]))
    return _MAY_GO_ON[graph]


@njit(cache=True)
def _k_component(G, cs, ci, comp_of, loc, succ_ptr, succ, resp_is_row, fixed_w, in_k, witness):
    """Greatest fixed point K restricted to one component (later components'
    membership is final). Worklist peeling: a removal re-checks predecessors."""
    c = cs.shape[0]
    for j in range(c):
        in_k[cs[j]] = True
    cnt = np.zeros(c + 1, np.int64)
    for j in range(c):
        s = cs[j]
        for e in range(succ_ptr[s], succ_ptr[s + 1]):
            t = succ[e]
            if comp_of[t] == ci:
                cnt[loc[t] + 1] += 1
    for j in range(c):
        cnt[j + 1] += cnt[j]
    pos = cnt[:-1].copy()
    pred = np.empty(cnt[c], np.int64)
    for j in range(c):
        s = cs[j]
        for e in range(succ_ptr[s], succ_ptr[s + 1]):
            t = succ[e]
            if comp_of[t] == ci:
                lt = loc[t]
                pred[pos[lt]] = j
                pos[lt] += 1
    queue = np.empty(c, np.int64)  # circular; each state queued at most once at a time
    in_q = np.ones(c, np.bool_)
    for j in range(c):
        queue[j] = j
    qh = 0
    size = c
    while size > 0:
        j = queue[qh]
        qh = (qh + 1) % c
        size -= 1
        in_q[j] = False
        s = cs[j]
        if not in_k[s]:
            continue
        if _check_k(G, s, resp_is_row, fixed_w, in_k, witness):
            continue
        in_k[s] = False
        for e in range(cnt[j], cnt[j + 1]):
            i = pred[e]
            if in_k[cs[i]] and not in_q[i]:
                in_q[i] = True
                queue[(qh + size) % c] = i
                size += 1


@njit(cache=True)
def _vi_sweeps(G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, max_sweeps, tol):
    """Gauss-Seidel value iteration (from below): only a warm start."""
    for _ in range(max_sweeps):
        delta = 0.0
        for j in range(cs.shape[0]):
            s = cs[j]
            best = w_u if in_k[s] else -np.inf
            for a in range(_n_resp(G, s, resp_is_row)):
                q = _q(G, s, a, resp_is_row, fixed_w, sign, X)
                if q > best:
                    best = q
            d = abs(best - X[s, 0])
            if d > delta:
                delta = d
            X[s, 0] = best
        if delta < tol:
            return


@njit(cache=True)
def _set_choice(G, s, a, resp_is_row, choice, resp_w):
    p0 = G[0][s] if resp_is_row else G[1][s]
    for i in range(_n_resp(G, s, resp_is_row)):
        resp_w[p0 + i] = 0.0
    resp_w[p0 + a] = 1.0
    choice[s] = a


@njit(cache=True)
def _argmax_q(G, s, resp_is_row, fixed_w, sign, X):
    best, best_a, _, _ = _argmax_q_and(G, s, resp_is_row, fixed_w, sign, X, -1)
    return best, best_a


@njit(cache=True)
def _argmax_q_and(G, s, resp_is_row, fixed_w, sign, X, held):
    """(best Q, its action, the Q of action `held`, the best Q of the other
    actions): one pass over the actions."""
    best = -np.inf
    best_a = 0
    q_held = -np.inf
    rival = -np.inf
    for a in range(_n_resp(G, s, resp_is_row)):
        q = _q(G, s, a, resp_is_row, fixed_w, sign, X)
        if a == held:
            q_held = q
        elif q > rival:
            rival = q
        if q > best:
            best = q
            best_a = a
    return best, best_a, q_held, rival


@njit(cache=True)
def _greedy(G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, choice, stall, resp_w, eps, reply):
    """Policy iteration's first policy: the greedy action on X, or `reply`'s
    where it gives one (not -1; `reply` may be empty): a reply known to be
    best, or nearly, leaves its first evaluation and improvement sweep the
    only ones."""
    for j in range(cs.shape[0]):
        s = cs[j]
        best, best_a = _argmax_q(G, s, resp_is_row, fixed_w, sign, X)
        _set_choice(G, s, reply[s] if reply.shape[0] and reply[s] >= 0 else best_a, resp_is_row, choice, resp_w)
        # Ties go to stalling: it is an exit, so it never creates a dead loop.
        stall[s] = in_k[s] and w_u >= best - eps


@njit(cache=True)
def _improve(G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, choice, stall, resp_w, eps, lead, drift):
    """One policy-improvement sweep on the evaluated X; switch only for a gain > eps.

    `lead` (per local state): by how much the option held beat every other
    when the state was last looked at (-inf where unknown: never looked at,
    or just switched); `drift`: how far X has moved since then, at most,
    anywhere in the component (`_record_drift`). No option's Q can have moved
    by more than the drift, so a state whose lead exceeds twice its drift
    cannot switch: it is skipped, and the sweep makes the very switches of a
    full one. (In best responses to hurried play's buzzer game on the printed
    board at health 1, about half the states are skipped after the first
    sweep: from none to 98% by iteration.)"""
    changes = 0
    for j in range(cs.shape[0]):
        if lead[j] > 2.0 * drift[j] + _LEAD_ROUNDING:
            continue
        s = cs[j]
        best, best_a, q_held, rival = _argmax_q_and(G, s, resp_is_row, fixed_w, sign, X, choice[s])
        cur = w_u if stall[s] else q_held
        lead[j] = -np.inf  # unknown after a switch
        drift[j] = 0.0
        if in_k[s] and w_u >= best:
            if w_u > cur + eps:
                stall[s] = True
                changes += 1
                continue
        elif best > cur + eps:
            stall[s] = False
            _set_choice(G, s, best_a, resp_is_row, choice, resp_w)
            changes += 1
            continue
        # Kept: the other options are every action (stalling held), or the other
        # actions and stalling where it is allowed.
        lead[j] = cur - (best if stall[s] else max(rival, w_u if in_k[s] else -np.inf))
    return changes


@njit(cache=True)
def _record_drift(cs, X, sol, drift):
    """Write the component's new values `sol` into X, and add the largest move to every state's `drift`."""
    moved = 0.0
    for j in range(cs.shape[0]):
        moved = max(moved, abs(sol[j, 0] - X[cs[j], 0]))
        X[cs[j], 0] = sol[j, 0]
    for j in range(cs.shape[0]):
        drift[j] += moved


@njit(cache=True)
def _pi_eps(eps, iteration):
    # Evaluation noise (iterative solves of big, slow-mixing components) could
    # make switches between near-equal actions cycle; widening the threshold
    # tenfold every 100 rounds guarantees termination. Normally PI ends in < 20.
    return eps * 10.0 ** (iteration // 100)


@njit(cache=True)
def _has_self_loop(succ_ptr, succ, s):
    for e in range(succ_ptr[s], succ_ptr[s + 1]):
        if succ[e] == s:
            return True
    return False


@njit(cache=True)
def _br_run(
    G, resp_is_row, fixed_w, sign, w_u, worst, comp_ptr, comp_states, comp_of, loc, succ_ptr, succ,
    in_k, witness, X, choice, stall, resp_w, term_vec, may_stall, start, dense_max, iter_max, eps, max_sweeps, max_iter,
    warm, reply,
):
    """Best response on components from `start` on; stop at the first one the
    iterative solver fails on and return its index (the caller redoes it with
    `fallback_solve`)."""
    ncomp = comp_ptr.shape[0] - 1
    no_reward = np.zeros((0, 1), np.float64)
    inf_vec = np.full(1, worst)
    stall_val = np.full(1, w_u)
    for ci in range(start, ncomp):
        lo = comp_ptr[ci]
        hi = comp_ptr[ci + 1]
        c = hi - lo
        cs = comp_states[lo:hi]
        if c == 1 and not _has_self_loop(succ_ptr, succ, cs[0]):
            # Acyclic state (the common case): one Bellman backup is exact.
            s = cs[0]
            in_k[s] = may_stall and _check_k(G, s, resp_is_row, fixed_w, in_k, witness)
            best, best_a = _argmax_q(G, s, resp_is_row, fixed_w, sign, X)
            if in_k[s] and w_u >= best:
                stall[s] = True
                choice[s] = witness[s]
                X[s, 0] = w_u
            else:
                choice[s] = best_a
                X[s, 0] = best
            continue
        for j in range(c):
            loc[cs[j]] = j
            X[cs[j], 0] = warm[cs[j]] if warm.shape[0] else worst
        if may_stall:
            _k_component(G, cs, ci, comp_of, loc, succ_ptr, succ, resp_is_row, fixed_w, in_k, witness)
        if c > _VI_MIN_SIZE and not warm.shape[0]:  # tiny components: a sweep costs about as much as an exact solve
            _vi_sweeps(G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, max_sweeps, _VI_TOL)
        _greedy(G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, choice, stall, resp_w, eps, reply)
        converged = False
        lead = np.full(c, -np.inf)
        drift = np.zeros(c)
        for it in range(max_iter):
            if resp_is_row:
                rows, cols, vals, rhs, exitm = build_system(
                    G, resp_w, fixed_w, cs, ci, comp_of, loc, X, term_vec, no_reward, stall, stall_val
                )
            else:
                rows, cols, vals, rhs, exitm = build_system(
                    G, fixed_w, resp_w, cs, ci, comp_of, loc, X, term_vec, no_reward, stall, stall_val
                )
            in_r = reach_exit(c, rows, cols, exitm)
            x0 = np.empty((c, 1))
            for j in range(c):
                x0[j, 0] = X[cs[j], 0]  # warm start: the previous policy's values
            sol, ok = component_solve(c, rows, cols, vals, exitm, rhs, in_r, inf_vec, x0, dense_max, iter_max)
            if not ok:
                return ci
            _record_drift(cs, X, sol, drift)
            if _improve(
                G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, choice, stall, resp_w, _pi_eps(eps, it), lead, drift,
            ) == 0:
                converged = True
                break
        if not converged:
            raise RuntimeError("policy iteration did not converge")
        for j in range(c):
            if stall[cs[j]]:
                choice[cs[j]] = witness[cs[j]]
    return ncomp


def _br_big_component(
    G, resp_is_row, fixed_w, sign, w_u, worst, comp_ptr, comp_states, comp_of, loc, succ_ptr, succ,
    in_k, witness, X, choice, stall, resp_w, term_vec, may_stall, ci, eps,
) -> None:
    """The same steps as `_br_run` for one component, with `fallback_solve`
    (when the iterative solve failed on it)."""
    cs = comp_states[comp_ptr[ci] : comp_ptr[ci + 1]]
    c = cs.shape[0]
    loc[cs] = np.arange(c)
    X[cs, 0] = worst
    if may_stall:
        _k_component(G, cs, ci, comp_of, loc, succ_ptr, succ, resp_is_row, fixed_w, in_k, witness)
    _vi_sweeps(G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, _VI_SWEEPS, _VI_TOL)
    _greedy(G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, choice, stall, resp_w, eps, np.zeros(0, np.int64))
    no_reward = np.zeros((0, 1))
    inf_vec = np.full(1, worst)
    stall_val = np.full(1, w_u)
    row_w, col_w = (resp_w, fixed_w) if resp_is_row else (fixed_w, resp_w)
    lead = np.full(c, -np.inf)
    drift = np.zeros(c)
    for it in range(_MAX_POLICY_ITERATIONS):
        rows, cols, vals, rhs, exitm = build_system(
            G, row_w, col_w, cs, ci, comp_of, loc, X, term_vec, no_reward, stall, stall_val
        )
        in_r = reach_exit(c, rows, cols, exitm)
        _record_drift(cs, X, fallback_solve(c, rows, cols, vals, exitm, rhs, in_r, inf_vec), drift)
        if _improve(
            G, cs, resp_is_row, fixed_w, sign, w_u, in_k, X, choice, stall, resp_w, _pi_eps(eps, it), lead, drift,
        ) == 0:
            break
    else:
        raise RuntimeError("policy iteration did not converge")
    stalled = cs[stall[cs]]
    choice[stalled] = witness[stalled]


def best_response_and_stalls(
    graph: GameGraph, seat: int, strategy: np.ndarray, guess: np.ndarray | None = None,
    reply: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact best response to the stationary strategy of the player at `seat`.

    Returns `(values, actions, stalls)`: `values[i]` is the optimal value (P1's payoff)
    the other player achieves from state i, and `actions[i]` the local index of
    the responder's action at state i in an optimal pure stationary policy
    (into `col_actions[col_ptr[i]:]` when seat == 0, `row_actions[row_ptr[i]:]`
    when seat == 1), and `stalls[i]` whether i is in the set K of the module
    docstring (the responder can keep play going forever from there with
    probability 1: a set that depends on the strategy and the graph's
    transitions, never on the payoffs). See the module docstring for the
    method.

    `guess` (P1's payoff per state), when given, is where each cyclic
    component's value iteration starts instead of the worst payoff: a good
    guess (the guarantee the strategy was built to have) leaves policy
    iteration one exact evaluation to confirm it. The answer does not depend
    on the guess, only the time it takes.

    `reply` (the responder's local action per state, as `actions` returns
    them; -1 where there is none), when given, is the policy each cyclic
    component's policy iteration evaluates first instead of the greedy one:
    a best reply to the same strategy found before leaves one evaluation and
    one improvement sweep to confirm it. The answer does not depend on it
    either.
    """
    if seat not in (0, 1):
        raise ValueError("seat must be 0 (P1) or 1 (P2)")
    G = graph.kernel_arrays()
    n = graph.num_states
    resp_is_row = seat == 1
    fixed_w = check_strategy(strategy, G[0] if seat == 0 else G[1], "P1" if seat == 0 else "P2")
    sign = 1.0 if resp_is_row else -1.0  # responder maximises w = sign * payoff
    pay = G[6]
    w_u = sign * float(graph.unending_payoff)
    worst = float(min(w_u, (sign * pay).min())) if pay.size else w_u
    scale = max(1.0, float(np.abs(pay).max()) if pay.size else 0.0, abs(w_u))
    eps = _EPS * scale
    term_vec = np.ascontiguousarray((sign * pay).reshape(-1, 1))

    ones = np.ones(int((G[0] if resp_is_row else G[1])[-1]), np.float64)  # every responder action counts
    row_w, col_w = (ones, fixed_w) if resp_is_row else (fixed_w, ones)
    succ_ptr, succ = successor_kernel(*G[:6], row_w, col_w)  # type: ignore[call-arg]  # numba's dispatcher passes the kernel's own arguments
    comp_ptr, comp_states = tarjan(succ_ptr, succ)
    comp_of = component_of_kernel(comp_ptr, comp_states, n)

    X = np.zeros((n, 1), np.float64)
    loc = np.zeros(n, np.int64)
    in_k = np.zeros(n, np.bool_)
    witness = np.zeros(n, np.int64)
    choice = np.zeros(n, np.int64)
    stall = np.zeros(n, np.bool_)
    resp_w = np.zeros_like(ones)
    ncomp = comp_ptr.shape[0] - 1
    warm = np.zeros(0) if guess is None else sign * np.ascontiguousarray(guess, np.float64)
    first_reply = np.zeros(0, np.int64) if reply is None else _checked_reply(reply, G[1] if seat == 0 else G[0])
    shared = (  # what `_br_run` and `_br_big_component` both take first
        G, resp_is_row, fixed_w, sign, w_u, worst, comp_ptr, comp_states, comp_of, loc, succ_ptr, succ,
        in_k, witness, X, choice, stall, resp_w, term_vec, _may_go_on(graph, G),
    )
    ci = 0
    while True:
        ci = _br_run(
            *shared, ci, linear_solve.DENSE_MAX, linear_solve.ITER_MAX, eps, _VI_SWEEPS, _MAX_POLICY_ITERATIONS, warm,
            first_reply,
        )
        if ci >= ncomp:
            break
        _br_big_component(*shared, ci, eps)
        ci += 1
    return sign * X[:, 0] + 0.0, choice, in_k  # + 0.0: no -0.0 from the sign flip


def _checked_reply(reply: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """`reply` as the kernel reads it, once each entry is -1 or one of its state's responder actions."""
    reply = np.ascontiguousarray(reply, np.int64)
    if reply.shape != (ptr.shape[0] - 1,) or np.any((reply < -1) | (reply >= np.diff(ptr))):
        raise ValueError("reply must give each state -1 or one of the responder's actions there")
    return reply


def best_response(
    graph: GameGraph, seat: int, strategy: np.ndarray, guess: np.ndarray | None = None,
    reply: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """`(values, actions)` of `best_response_and_stalls`."""
    values, actions, _ = best_response_and_stalls(graph, seat, strategy, guess, reply)
    return values, actions


def best_response_values(
    graph: GameGraph, seat: int, strategy: np.ndarray, guess: np.ndarray | None = None,
    reply: np.ndarray | None = None,
) -> np.ndarray:
    """Optimal value (P1's payoff) of the player opposite `seat` against `strategy`, per state.

    seat 0: P1 plays `strategy` (aligned with `row_actions`) and P2 minimises,
    so this is what the strategy guarantees P1. seat 1: P2 plays it (aligned
    with `col_actions`) and P1 maximises. `guess`, `reply`: where policy
    iteration starts (`best_response_and_stalls`).
    """
    return best_response(graph, seat, strategy, guess, reply)[0]


def pure_strategy(graph: GameGraph, seat: int, actions: np.ndarray) -> np.ndarray:
    """The stationary strategy array of a pure policy (`actions[i]` local index at state i)."""
    ptr = np.asarray(graph.row_ptr if seat == 0 else graph.col_ptr, np.int64)
    out = np.zeros(int(ptr[-1]), np.float64)
    out[ptr[:-1] + np.asarray(actions, np.int64)] = 1.0
    return out
