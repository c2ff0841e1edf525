"""A finite two-player zero-sum game tree with chance and imperfect information.

The tree is built node by node (`GameTree.add_*`), parents before children.
A decision node belongs to an *information set*: any hashable key, unique per
player, naming what that player knows there; every node of one information
set offers the same actions. Simultaneous moves are written as P1 deciding
first and P2 deciding at nodes grouped into information sets that do not
tell P1's action apart. Leaves hold player 1's payoff; a solve may pass other
leaf payoffs (`payoffs`), so one tree serves several valuations of its leaves
(a horizon's leaves at a lower and at an upper bound).

Players are seats: 0 maximises, 1 minimises. The tree must have perfect
recall (`perfect_recall_problem` says where it does not), which the
sequence form needs.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

CHANCE = -1
"""The `player` of a chance node."""
LEAF = -2
"""The `player` of a leaf."""


@dataclass
class InformationSet:
    player: int
    key: Hashable
    actions: tuple[str, ...]
    nodes: list[int] = field(default_factory=list)


class GameTree:
    """Nodes numbered from 0 (the root) in the order they are added."""

    def __init__(self) -> None:
        self.player: list[int] = []
        self.parent: list[int] = []
        self.edge: list[int] = []
        """Per node: the action (decision parent) or outcome (chance parent) index leading here."""
        self.probability: list[float] = []
        """Per node: the chance probability of the edge into it (1.0 below a decision)."""
        self.infoset: list[int] = []
        """Per decision node: its information set's index in `infosets` (-1 elsewhere)."""
        self.payoff: list[float] = []
        """Per leaf: player 1's payoff (0.0 elsewhere)."""
        self.label: list[str] = []
        self.children: list[list[int]] = []
        self.infosets: list[InformationSet] = []
        self._infoset_index: dict[tuple[int, Hashable], int] = {}

    def __len__(self) -> int:
        return len(self.player)

    def _add(self, parent: int, edge: int, probability: float, player: int, infoset: int, payoff: float, label: str) -> int:
        node = len(self.player)
        if parent < 0:
            if node != 0:
                raise ValueError("only the first node is the root")
        else:
            if self.player[parent] == LEAF:
                raise ValueError(f"node {parent} is a leaf and has no children")
            if edge != len(self.children[parent]):
                raise ValueError(f"node {parent}'s children must be added in edge order (expected {len(self.children[parent])}, got {edge})")
            if self.player[parent] >= 0 and edge >= len(self.infosets[self.infoset[parent]].actions):
                raise ValueError(f"node {parent} has no action {edge}")
            self.children[parent].append(node)
        self.player.append(player)
        self.parent.append(parent)
        self.edge.append(edge)
        self.probability.append(probability)
        self.infoset.append(infoset)
        self.payoff.append(payoff)
        self.label.append(label)
        self.children.append([])
        return node

    def add_chance(self, parent: int = -1, edge: int = 0, probability: float = 1.0, label: str = "") -> int:
        """A chance node; its children's `probability` must sum to 1."""
        return self._add(parent, edge, probability, CHANCE, -1, 0.0, label)

    def add_decision(
        self, player: int, key: Hashable, actions: Sequence[str], parent: int = -1, edge: int = 0,
        probability: float = 1.0, label: str = "",
    ) -> int:
        """A node where `player` (0 or 1) picks one of `actions`, in information set `key`."""
        if player not in (0, 1):
            raise ValueError(f"player must be 0 or 1, not {player}")
        actions = tuple(actions)
        if not actions:
            raise ValueError("a decision node needs at least one action")
        index = self._infoset_index.get((player, key))
        if index is None:
            index = len(self.infosets)
            self._infoset_index[(player, key)] = index
            self.infosets.append(InformationSet(player, key, actions))
        elif self.infosets[index].actions != actions:
            raise ValueError(f"information set {key!r} of player {player + 1} offers {self.infosets[index].actions}, not {actions}")
        node = self._add(parent, edge, probability, player, index, 0.0, label)
        self.infosets[index].nodes.append(node)
        return node

    def add_leaf(self, payoff: float, parent: int = -1, edge: int = 0, probability: float = 1.0, label: str = "") -> int:
        return self._add(parent, edge, probability, LEAF, -1, float(payoff), label)

    # --- reading -------------------------------------------------------------

    def leaves(self) -> np.ndarray:
        return np.flatnonzero(np.asarray(self.player) == LEAF)

    def payoffs(self) -> np.ndarray:
        """Player 1's payoff per node (0 away from leaves): the default valuation."""
        return np.asarray(self.payoff, dtype=np.float64)

    def chance_reach(self) -> np.ndarray:
        """Per node: the product of chance probabilities on its path."""
        reach = np.ones(len(self))
        for node in range(1, len(self)):
            reach[node] = reach[self.parent[node]] * self.probability[node]
        return reach

    def infosets_of(self, player: int) -> list[int]:
        """Indices (into `infosets`) of `player`'s information sets, in the order they were first met."""
        return [i for i, infoset in enumerate(self.infosets) if infoset.player == player]

    def problem(self) -> str | None:
        """What makes this not a finished, well-formed tree (None: nothing)."""
        if not self.player:
            return "the tree is empty"
        for node, player in enumerate(self.player):
            children = self.children[node]
            if player == LEAF:
                continue
            if not children:
                return f"node {node} ({self.label[node] or 'unlabelled'}) has no children"
            if player == CHANCE:
                total = sum(self.probability[c] for c in children)
                if abs(total - 1.0) > 1e-12 or any(self.probability[c] < 0 for c in children):
                    return f"chance node {node}'s probabilities sum to {total}, not 1"
            elif len(children) != len(self.infosets[self.infoset[node]].actions):
                return f"node {node} has {len(children)} children for {len(self.infosets[self.infoset[node]].actions)} actions"
        return self.perfect_recall_problem()

    def own_history(self, node: int, player: int) -> tuple[tuple[int, int], ...]:
        """The (information set, action) pairs `player` took on the path to `node`."""
        history = []
        child = node
        parent = self.parent[node]
        while parent >= 0:
            if self.player[parent] == player:
                history.append((self.infoset[parent], self.edge[child]))
            child, parent = parent, self.parent[parent]
        return tuple(reversed(history))

    def perfect_recall_problem(self) -> str | None:
        """An information set whose nodes were reached by different own histories (None: none)."""
        for infoset in self.infosets:
            histories = {self.own_history(node, infoset.player) for node in infoset.nodes}
            if len(histories) > 1:
                return f"information set {infoset.key!r} of player {infoset.player + 1} mixes different own histories (no perfect recall)"
        return None
