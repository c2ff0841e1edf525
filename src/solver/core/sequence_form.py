"""Exact solution of a `GameTree` through its sequence form (Koller, Megiddo, von Stengel).

A player's *sequence* is the list of its own (information set, action) pairs on
the way to a node; perfect recall makes a sequence determined by its last pair,
so sequence 0 is the empty one and the others are one per (set, action). A
*realization plan* gives each sequence the probability that the player plays
it: E x = e for player 1 (seat 0), F y = f for player 2, x, y >= 0, and the
expected payoff is x^T A y. The game is one LP of the size of the tree
instead of the exponential normal form.

Behaviour strategies (`Behaviour`) are dicts from an information-set index
(into `tree.infosets`) to that set's action probabilities, one dict per
player holding exactly that player's sets. Values are player 1's payoff
throughout (player 1 maximises, player 2 minimises).

`best_response` is a plain bottom-up pass, no LP: it checks the LP's
strategies independently (`exploitability`).

The LP works in floating point: a decision whose stakes (its reach times the
payoffs it moves) are below ~1e-12 of the leaves' payoff range may be taken
either way, and sets a player's own plan never reaches get uniform play.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.optimize
import scipy.sparse as sp

from .game_tree import CHANCE, LEAF, GameTree

__all__ = [
    "Behaviour",
    "BestResponse",
    "SequenceForm",
    "SequenceFormError",
    "TreeSolution",
    "best_response",
    "exploitability",
    "sequence_form",
    "solve_tree",
    "strategy_value",
]

Behaviour = dict[int, np.ndarray]
"""Information-set index -> probabilities of its actions (float64, summing to 1)."""

# The least values HiGHS accepts; it ignores smaller ones with only a warning. By default it reads
# matrix entries below 1e-9 as zero, which loses decisions a leaf's reach times stakes make that small.
_HIGHS_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10, "small_matrix_value": 1e-12}
_METHOD = "highs-ds"
# Residuals a vertex solution of the normalised LP (payoffs in [0, 1]) stays far below.
_CHECK_TOL = 1e-8


class SequenceFormError(ValueError):
    """A tree that cannot be solved, or an LP that did not end in a checked optimum."""


@dataclass(frozen=True, eq=False)
class SequenceForm:
    sequences: tuple[list[tuple[int, int]], list[tuple[int, int]]]
    """Per player: the (information set, action) ending each sequence; (-1, -1) at index 0, the empty one."""
    parent: tuple[dict[int, int], dict[int, int]]
    """Per player: information set -> the sequence leading to it."""
    first: tuple[dict[int, int], dict[int, int]]
    """Per player: information set -> its action 0's sequence (action a's is first + a)."""
    E: sp.csr_matrix
    e: np.ndarray
    F: sp.csr_matrix
    f: np.ndarray
    A: sp.csr_matrix
    """Player 1's sequences x player 2's: chance-weighted leaf payoffs."""


@dataclass(frozen=True, eq=False)
class TreeSolution:
    value: float
    """Player 1's payoff at equilibrium."""
    behaviour: tuple[Behaviour, Behaviour]
    """Player 1's and player 2's optimal behaviour strategies."""
    realization: tuple[np.ndarray, np.ndarray]
    """The realization plans x and y they come from, indexed like `SequenceForm.sequences`."""
    method: str
    status: int
    message: str
    iterations: int
    """linprog's method, status (0: optimal), message and simplex iterations."""


@dataclass(frozen=True, eq=False)
class BestResponse:
    value: float
    """Player 1's payoff when `player` best-responds."""
    behaviour: Behaviour
    """Pure: a one-hot array per information set of `player`."""


def _check_tree(tree: GameTree) -> None:
    problem = tree.problem()
    if problem is not None:
        raise SequenceFormError(f"not a solvable game tree: {problem}")


def _leaf_payoffs(tree: GameTree, payoffs: np.ndarray | None) -> np.ndarray:
    if payoffs is None:
        return tree.payoffs()
    u = np.asarray(payoffs, dtype=np.float64)
    if u.shape != (len(tree),):
        raise ValueError(f"payoffs must have one entry per node ({len(tree)}), got shape {u.shape}")
    if not np.all(np.isfinite(u[tree.leaves()])):
        raise ValueError("payoffs has non-finite leaf entries")
    return u


def _node_sequences(tree: GameTree, player: int, first: dict[int, int]) -> np.ndarray:
    """Per node: `player`'s sequence leading to it (parents precede children, so one pass)."""
    seq = np.zeros(len(tree), dtype=np.int64)
    for node in range(1, len(tree)):
        parent = tree.parent[node]
        if tree.player[parent] == player:
            seq[node] = first[tree.infoset[parent]] + tree.edge[node]
        else:
            seq[node] = seq[parent]
    return seq


def sequence_form(tree: GameTree, payoffs: np.ndarray | None = None) -> SequenceForm:
    """The sequence-form matrices of `tree`, at `payoffs` (per node, as `tree.payoffs()`; only leaves count) if given."""
    _check_tree(tree)
    return _sequence_form(tree, _leaf_payoffs(tree, payoffs))


def _sequence_form(tree: GameTree, u: np.ndarray) -> SequenceForm:
    sequences: list[list[tuple[int, int]]] = []
    parents: list[dict[int, int]] = []
    firsts: list[dict[int, int]] = []
    constraints: list[sp.csr_matrix] = []
    node_seq: list[np.ndarray] = []
    for player in (0, 1):
        seqs, first = [(-1, -1)], {}
        for i in tree.infosets_of(player):
            first[i] = len(seqs)
            seqs.extend((i, a) for a in range(len(tree.infosets[i].actions)))
        node_seq.append(_node_sequences(tree, player, first))
        # Perfect recall: every node of a set has the same parent sequence.
        parent = {i: int(node_seq[-1][tree.infosets[i].nodes[0]]) for i in first}
        rows, cols, vals = [0], [0], [1.0]
        for r, i in enumerate(first, start=1):
            k = len(tree.infosets[i].actions)
            rows += [r] * (k + 1)
            cols += [parent[i], *range(first[i], first[i] + k)]
            vals += [-1.0] + [1.0] * k
        constraints.append(sp.csr_matrix((vals, (rows, cols)), shape=(len(first) + 1, len(seqs))))
        sequences.append(seqs)
        parents.append(parent)
        firsts.append(first)
    leaves = tree.leaves()
    weight = tree.chance_reach()[leaves] * u[leaves]
    # Leaves sharing both sequences add up (coo -> csr sums duplicates).
    A = sp.csr_matrix(
        (weight, (node_seq[0][leaves], node_seq[1][leaves])), shape=(len(sequences[0]), len(sequences[1]))
    )
    unit = [np.eye(1, m.shape[0]).ravel() for m in constraints]
    return SequenceForm(
        (sequences[0], sequences[1]), (parents[0], parents[1]), (firsts[0], firsts[1]),
        constraints[0], unit[0], constraints[1], unit[1], A,
    )


def _behaviour(tree: GameTree, sf: SequenceForm, player: int, plan: np.ndarray) -> Behaviour:
    """Realization plan -> behaviour; uniform at sets the plan never reaches."""
    out: Behaviour = {}
    for i, first in sf.first[player].items():
        k = len(tree.infosets[i].actions)
        weights = plan[first:first + k]
        # The children's sum equals x[parent] by the constraint, and makes the row sum to 1 exactly.
        total = weights.sum()
        out[i] = weights / total if total > 0.0 else np.full(k, 1.0 / k)
    return out


def solve_tree(tree: GameTree, payoffs: np.ndarray | None = None) -> TreeSolution:
    """Value and optimal behaviour strategies: player 1's LP by HiGHS's dual simplex, player 2's plan from its duals."""
    _check_tree(tree)
    u = _leaf_payoffs(tree, payoffs)
    leaves = tree.leaves()
    # Payoffs mapped onto [0, 1] so HiGHS's absolute tolerances mean the same at every scale;
    # each plan pair's leaf reaches sum to 1, so the value maps back affinely and strategies are unchanged.
    lo, hi = float(u[leaves].min()), float(u[leaves].max())
    span = hi - lo if hi > lo else 1.0
    normalised = np.zeros(len(tree))
    normalised[leaves] = (u[leaves] - lo) / span
    sf = _sequence_form(tree, normalised)
    n1, n2 = sf.A.shape
    # Variables (x, q): max f^T q  s.t.  F^T q - A^T x <= 0,  E x = e,  x >= 0, q free.
    c = np.concatenate((np.zeros(n1), -sf.f))
    A_ub = sp.hstack((-sf.A.T, sf.F.T), format="csr")
    A_eq = sp.hstack((sf.E, sp.csr_matrix((sf.E.shape[0], len(sf.f)))), format="csr")
    bounds = [(0.0, None)] * n1 + [(None, None)] * len(sf.f)
    with warnings.catch_warnings():
        # scipy passes HiGHS's own small_matrix_value on verbatim, and says so; an option HiGHS
        # rejects would silently loosen the solve, so that is an error.
        warnings.filterwarnings("ignore", "Unrecognized options", scipy.optimize.OptimizeWarning)
        warnings.filterwarnings("error", "Invalid option value", scipy.optimize.OptimizeWarning)
        try:
            res = scipy.optimize.linprog(
                c, A_ub=A_ub, b_ub=np.zeros(n2), A_eq=A_eq, b_eq=sf.e, bounds=bounds, method=_METHOD,
                options=_HIGHS_OPTIONS,
            )
        except scipy.optimize.OptimizeWarning as rejected:
            raise SequenceFormError(f"HiGHS rejected an option of {_HIGHS_OPTIONS}: {rejected}") from rejected
    if res.status != 0 or res.x is None or res.ineqlin is None:
        raise SequenceFormError(f"sequence-form LP failed (status {res.status}): {res.message}")
    # HiGHS may return -1e-17 for a zero. linprog minimises, so a <= row's marginal is -(its dual) <= 0.
    x = np.clip(res.x[:n1], 0.0, None)
    y = np.clip(-np.asarray(res.ineqlin.marginals), 0.0, None)
    v = -float(res.fun)
    residuals = {
        "E x = e": float(np.abs(sf.E @ x - sf.e).max()),
        "F y = f": float(np.abs(sf.F @ y - sf.f).max()),
        "x^T A y = value": abs(float(x @ (sf.A @ y)) - v),
    }
    for name, r in residuals.items():
        if not r <= _CHECK_TOL:
            raise SequenceFormError(f"sequence-form LP ended {res.message!r} but misses {name} by {r:.3g}")
    return TreeSolution(
        lo + span * v, (_behaviour(tree, sf, 0, x), _behaviour(tree, sf, 1, y)), (x, y), _METHOD, int(res.status),
        str(res.message), int(res.nit),
    )


def _reach(tree: GameTree, behaviours: dict[int, Behaviour]) -> np.ndarray:
    """Per node: chance reach times the reach of the players in `behaviours` (the others count 1)."""
    for player, behaviour in behaviours.items():
        for i in tree.infosets_of(player):
            p = behaviour.get(i)
            if p is None or np.shape(p) != (len(tree.infosets[i].actions),):
                raise ValueError(f"player {player + 1}'s behaviour lacks the {len(tree.infosets[i].actions)} probabilities of information set {i}")
    reach = np.ones(len(tree))
    for node in range(1, len(tree)):
        parent = tree.parent[node]
        mover = tree.player[parent]
        if mover == CHANCE:
            factor = tree.probability[node]
        elif mover in behaviours:
            factor = float(behaviours[mover][tree.infoset[parent]][tree.edge[node]])
        else:
            factor = 1.0
        reach[node] = reach[parent] * factor
    return reach


def strategy_value(
    tree: GameTree, behaviour_p1: Behaviour, behaviour_p2: Behaviour, payoffs: np.ndarray | None = None
) -> float:
    """Player 1's expected payoff when the players follow these behaviour strategies."""
    _check_tree(tree)
    u = _leaf_payoffs(tree, payoffs)
    leaves = tree.leaves()
    return float(_reach(tree, {0: behaviour_p1, 1: behaviour_p2})[leaves] @ u[leaves])


def best_response(
    tree: GameTree, player: int, opponent_behaviour: Behaviour, payoffs: np.ndarray | None = None
) -> BestResponse:
    """`player`'s best pure reply to the other's fixed behaviour, by one bottom-up pass (no LP)."""
    if player not in (0, 1):
        raise ValueError(f"player must be 0 or 1, not {player}")
    _check_tree(tree)
    u = _leaf_payoffs(tree, payoffs)
    weight = _reach(tree, {1 - player: opponent_behaviour})
    # Level = how many own moves lead to a node. Perfect recall puts a set's nodes on one level and
    # the sets below its actions on deeper ones, so deciding sets level by level, deepest first,
    # only ever needs decisions already taken (nodes of one set may lie at different tree depths).
    level = np.zeros(len(tree), dtype=np.int64)
    for node in range(1, len(tree)):
        parent = tree.parent[node]
        level[node] = level[parent] + (tree.player[parent] == player)
    by_level: list[list[int]] = [[] for _ in range(int(level.max()) + 1)]
    for node in range(len(tree)):
        by_level[level[node]].append(node)
    sign = 1.0 if player == 0 else -1.0
    value = np.zeros(len(tree))
    choice: dict[int, int] = {}
    for nodes in reversed(by_level):
        # This level's sets: their children are one level down, already valued.
        for i in {tree.infoset[n] for n in nodes if tree.player[n] == player}:
            totals = sum(value[tree.children[n]] for n in tree.infosets[i].nodes)
            choice[i] = int(np.argmax(sign * totals))
        # Children on the same level were added later, so a reverse pass values them first.
        for n in reversed(nodes):
            if tree.player[n] == LEAF:
                value[n] = weight[n] * u[n]
            elif tree.player[n] == player:
                value[n] = value[tree.children[n][choice[tree.infoset[n]]]]
            else:
                value[n] = value[tree.children[n]].sum()
    behaviour = {i: np.eye(len(tree.infosets[i].actions))[a] for i, a in choice.items()}
    return BestResponse(float(value[0]), behaviour)


def exploitability(tree: GameTree, solution: TreeSolution, payoffs: np.ndarray | None = None) -> tuple[float, float]:
    """(player 1's loss, player 2's loss) against a best response, relative to `solution.value`.

    Pass the `payoffs` the solution was solved at; both are >= 0 up to round-off, 0 at an equilibrium.
    """
    p1, p2 = solution.behaviour
    return (
        solution.value - best_response(tree, 1, p1, payoffs).value,
        best_response(tree, 0, p2, payoffs).value - solution.value,
    )
