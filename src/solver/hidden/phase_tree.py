"""A hidden phase as a finite game tree: the public histories of H turns from
a draw, times the private cards each player may hold.

A *world* is what is true at a point of a phase: the position (its open-game
code), the bonus cards each seat's opponent has seen, and the cards each seat
drew in the phase, in order (its private observations). A *public node*
gathers the worlds that agree with everything both players have seen: the
same turns played and the same `public_view`. A player's information set is
a public node together with its own draws, so play reveals what it reveals
(a card played, or not played) and nothing else.

A public node where, in every world, each player can tell the position from
what it has seen ends the phase: from there on the game is open by the
phase's definition, and each world is worth its open value. So is a world
the game leaves (a win). The horizon's leaves are valued twice, at honest
bounds of what the rest of the phase is worth: a player who can tell the
position, and will go on telling it (`keeps_telling`: no later draw of the
opponent can be hidden from it), can hold its open value by playing its open
strategy, so the world is worth at least that to P1 if P1 keeps telling it
and at most that if P2 does; otherwise the bound is the payoff's floor (0) or
ceiling (1), or, given the wild games' bounds (`wild_table`), the bound of
the wild game of the side that cannot tell: that side's opponent plays its
wild strategy from there, which reads only what it knows. Solving the tree
at both valuations brackets the phase's value.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from rules.charge_spark.cards import Card
from rules.charge_spark.config import RuleSet
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.hidden import Known, all_known, drawn_cards, known_after_turn, public_view
from rules.charge_spark.state import Position

from ..core.game_tree import GameTree
from ..core.result import SolveResult

PAYOFF_FLOOR = 0.0
PAYOFF_CEILING = 1.0

WildBounds = Callable[[int, Known], tuple[float, float]]
"""(open-game code, each seat's seen cards) -> bounds on P1's value there from P2's and from P1's wild game."""


@dataclass(frozen=True)
class World:
    code: int
    known: Known
    draws: tuple[tuple[int, ...], tuple[int, ...]]
    """Per seat, the bonus cards (as card numbers) it drew in this phase, in order."""
    chance: float
    """Probability of this world given the public history, as far as chance decides it."""


@dataclass
class PublicNode:
    depth: int
    worlds: list[World] = field(default_factory=list)
    links: dict[tuple[int, int, int], list[tuple[float, int, int]]] | None = None
    """(world, row, column) -> [(probability, public node or -1 - outcome, world index)]; None until expanded."""
    exit: bool = False

    def tells(self, seat: int) -> dict[tuple[int, ...], bool]:
        """For each of `seat`'s own draw histories here: whether it pins down the position."""
        codes: dict[tuple[int, ...], set[int]] = defaultdict(set)
        for world in self.worlds:
            codes[world.draws[seat]].add(world.code)
        return {draws: len(found) == 1 for draws, found in codes.items()}


def keeps_telling(position: Position, rules: RuleSet, seat: int) -> bool:
    """Whether `seat`, telling `position` now, goes on telling it whatever comes: its
    opponent can draw no card `seat` could not tell, because the opponent's pawn has
    no star ahead or the pile holds one card at most (played cards never go back to
    it, so it only shrinks; a pile of one kind only would do too, and is left out to
    keep the rule simple and sound). Otherwise a later draw may hide from `seat` which world
    it is in, and its open strategy, which reads the opponent's hand, is not a strategy."""
    if len(position.bonus_pile(rules)) <= 1:
        return True
    progress = position.player(1 - seat).progress
    return not any(rules.is_star(ahead) for ahead in range(progress + 1, rules.moves_to_moon))


KEPT_TURNS = 1 << 20
"""Turns, seen cards and values an `OpenGame` keeps between phases (`OpenGame.trim`)."""


class OpenGame:
    """The open game's transitions, values and strategies, by state code."""

    def __init__(self, game: ChargeSparkGame, table: SolveResult) -> None:
        self.game = game
        self.table = table
        self.decode = lru_cache(maxsize=1 << 18)(game.decode)
        self._expansions: dict[int, tuple] = {}
        self._seen: dict[tuple, tuple] = {}
        self._values: dict[int, float] = {}
        self._telling: dict[tuple[int, int], bool] = {}

    def trim(self, most: int = KEPT_TURNS) -> None:
        """Forget what was kept of turns and values once it passes `most`
        entries, and let go the stored table's pages read so far: a phase's
        trees recur over the same turns, different phases much less, and the
        printed rules' eight phases kept 2.7 GB of them (and 5 GB of the
        table's pages) by the last."""
        if len(self._expansions) + len(self._seen) + len(self._values) + len(self._telling) + self.decode.cache_info().currsize > most:
            self._expansions.clear()
            self._seen.clear()
            self._values.clear()
            self._telling.clear()
            self.decode.cache_clear()
        self.table.release_mapped_pages()

    def expansion(self, code: int) -> tuple[tuple[int, ...], tuple[int, ...], list[list[tuple[float, int]]]]:
        """(P1's cards, P2's cards, outcomes by row * columns + column: [(probability, next code or -1 - outcome)])."""
        found = self._expansions.get(code)
        if found is None:
            e = self.game.expand(np.array([code], dtype=np.int64))
            rows = tuple(int(a) for a in e.row_actions)
            cols = tuple(int(a) for a in e.col_actions)
            outcomes, at = [], 0
            for count in e.out_count:
                outcomes.append([(float(e.out_prob[k]), int(e.out_next[k])) for k in range(at, at + count)])
                at += count
            found = (rows, cols, outcomes)
            self._expansions[code] = found
        return found

    def seen_after(
        self, code: int, known: Known, card1: int, card2: int, nxt: int, reveal: bool
    ) -> tuple[Known, tuple[int, int], tuple]:
        """After the turn (card1, card2) from `code` to `nxt`, with `known` seen before:
        what each seat has seen of the other's bonus cards, the card each drew (-1: none),
        and the public view. The same turn recurs across histories: kept once computed."""
        key = (code, known, card1, card2, nxt, reveal)
        found = self._seen.get(key)
        if found is None:
            before, after = self.decode(code), self.decode(nxt)
            cards = (Card(card1), Card(card2))
            drawn = drawn_cards(before, cards, after)
            seen = all_known(after) if reveal else known_after_turn(before, known, cards, after)
            found = (seen, (-1 if drawn[0] is None else int(drawn[0]), -1 if drawn[1] is None else int(drawn[1])),
                     public_view(after, seen))
            self._seen[key] = found
        return found

    def value(self, code: int) -> float:
        found = self._values.get(code)
        if found is None:
            found = self._values[code] = float(self.table.values[self.table.index_of(code)])
        return found

    def keeps_telling(self, code: int, seat: int) -> bool:
        """`keeps_telling` at the position `code`, kept once computed."""
        found = self._telling.get((code, seat))
        if found is None:
            found = self._telling[(code, seat)] = keeps_telling(self.decode(code), self.game.rules, seat)
        return found

    def terminal_payoff(self, outcome: int) -> float:
        return float(self.game.terminal_payoff[outcome])

    def strategy(self, code: int, seat: int) -> dict[int, float]:
        """The open game's reported strategy of `seat` at `code`: card -> probability."""
        t = self.table
        i = t.index_of(code)
        ptr, actions, probs = (t.row_ptr, t.row_actions, t.row_strategy) if seat == 0 else (t.col_ptr, t.col_actions, t.col_strategy)
        return {int(actions[k]): float(probs[k]) for k in range(ptr[i], ptr[i + 1])}


@dataclass
class PhaseTree:
    """One horizon's tree of a phase, with both valuations of its leaves."""

    tree: GameTree
    lower: np.ndarray
    upper: np.ndarray
    horizon: int
    horizon_leaves: int
    node_code: np.ndarray
    """Per decision node: the open-game code of its world (-1 elsewhere)."""


class Phase:
    """A hidden phase from its first worlds (after the draw that starts it),
    grown one turn at a time as longer horizons are asked for."""

    def __init__(
        self, open_game: OpenGame, worlds: list[World], *, reveal: bool = False, stop_when_known: bool = True,
        wild: WildBounds | None = None, open_leaves: bool = True,
    ) -> None:
        """`reveal`: every drawn card is shown (the open game, as a check of the tree);
        `stop_when_known`: end the phase where everything can be told (off: grow
        the tree to the horizon anyway, a check that doing so changes nothing);
        `wild`: the wild games' bounds, for the horizon's leaves (else the payoff's floor and ceiling);
        `open_leaves`: a horizon leaf is worth the open value on the side of a player who keeps
        telling the position (off: the floor, ceiling or wild bounds alone, the reference the tests check against)."""
        self.open = open_game
        self.wild = wild
        self.open_leaves = open_leaves
        self.reveal = reveal
        self.stop_when_known = stop_when_known
        self.nodes: list[PublicNode] = []
        self.roots: list[tuple[int, int]] = []  # per first world: (public node, world index)
        by_view: dict[tuple, int] = {}
        for world in worlds:
            if reveal:
                world = World(world.code, all_known(self.open.decode(world.code)), world.draws, world.chance)
            view = public_view(self.open.decode(world.code), world.known)
            node = by_view.get(view)
            if node is None:
                node = by_view[view] = self._new_node(0)
            self.roots.append((node, len(self.nodes[node].worlds)))
            self.nodes[node].worlds.append(world)
        for node in set(by_view.values()):
            self._settle(node)

    def _new_node(self, depth: int) -> int:
        self.nodes.append(PublicNode(depth))
        return len(self.nodes) - 1

    def _settle(self, index: int) -> None:
        node = self.nodes[index]
        node.exit = self.stop_when_known and all(all(node.tells(seat).values()) for seat in (0, 1))

    def _expand(self, index: int) -> list[int]:
        """Play one turn from every world of public node `index`; returns the new public nodes."""
        node = self.nodes[index]
        node.links = {}
        children: dict[tuple, int] = {}
        for w, world in enumerate(node.worlds):
            rows, cols, outcomes = self.open.expansion(world.code)
            for i, card1 in enumerate(rows):
                for j, card2 in enumerate(cols):
                    links = node.links[(w, i, j)] = []
                    for probability, nxt in outcomes[i * len(cols) + j]:
                        if nxt < 0:
                            links.append((probability, nxt, -1))
                            continue
                        known, drawn, seen = self.open.seen_after(world.code, world.known, card1, card2, nxt, self.reveal)
                        draws = tuple(d + ((card,) if card >= 0 else ()) for d, card in zip(world.draws, drawn))
                        child_world = World(nxt, known, (draws[0], draws[1]), world.chance * probability)
                        view = (card1, card2, seen)
                        child = children.get(view)
                        if child is None:
                            child = children[view] = self._new_node(node.depth + 1)
                        links.append((probability, child, len(self.nodes[child].worlds)))
                        self.nodes[child].worlds.append(child_world)
        new = list(children.values())
        for child in new:
            self._settle(child)
        return new

    def grow_to(self, horizon: int) -> None:
        """Expand every public node above `horizon` that play can continue from."""
        index = 0
        while index < len(self.nodes):  # nodes added on the way are visited too
            node = self.nodes[index]
            if node.links is None and not node.exit and node.depth < horizon:
                self._expand(index)
            index += 1

    def _holds_open(self, node: PublicNode, world: World, seat: int) -> bool:
        """Whether `seat` can hold `world`'s open value from this leaf on: it tells the
        position now and no later draw can hide it (telling it now is not enough: an
        opponent's draw from a pile of two kinds would leave it guessing again)."""
        return (self.open_leaves and node.tells(seat)[world.draws[seat]]
                and self.open.keeps_telling(world.code, seat))

    def tree(self, horizon: int) -> PhaseTree:
        """The game tree of the first `horizon` turns (0: the leaves at the draw)."""
        self.grow_to(horizon)
        tree = GameTree()
        lower: list[float] = []
        upper: list[float] = []
        node_code: list[int] = []
        horizon_leaves = 0
        open_game = self.open

        def inner(node: int, code: int = -1) -> int:
            """Record a node that is not a leaf (with its world's code at a decision)."""
            lower.append(0.0)
            upper.append(0.0)
            node_code.append(code)
            return node

        def leaf(low: float, high: float, parent: int, edge: int, probability: float) -> None:
            tree.add_leaf(low, parent, edge, probability)
            lower.append(low)
            upper.append(high)
            node_code.append(-1)

        def emit(index: int, w: int, parent: int, edge: int, probability: float) -> None:
            nonlocal horizon_leaves
            node = self.nodes[index]
            world = node.worlds[w]
            if node.exit:
                value = open_game.value(world.code)
                leaf(value, value, parent, edge, probability)
                return
            if node.depth >= horizon:
                horizon_leaves += 1
                value = open_game.value(world.code)
                low = value if self._holds_open(node, world, 0) else PAYOFF_FLOOR
                high = value if self._holds_open(node, world, 1) else PAYOFF_CEILING
                if self.wild is not None:
                    # Each side may instead play its wild strategy, a function of what it knows alone:
                    # its bound holds in every world it cannot tell apart (it is the same there).
                    wild_low, wild_high = self.wild(world.code, world.known)
                    low, high = max(low, wild_low), min(high, wild_high)
                leaf(low, high, parent, edge, probability)
                return
            rows, cols, _ = open_game.expansion(world.code)
            assert node.links is not None
            row_labels = [Card(c).label for c in rows]
            col_labels = [Card(c).label for c in cols]
            row_node = inner(tree.add_decision(0, (index, world.draws[0]), row_labels, parent, edge, probability), world.code)
            for i in range(len(rows)):
                # P2 does not see P1's card: its information set is the same under each of them.
                col_node = inner(tree.add_decision(1, (index, world.draws[1]), col_labels, row_node, i), world.code)
                for j in range(len(cols)):
                    links = node.links[(w, i, j)]
                    if len(links) == 1:
                        targets = [(col_node, j, 1.0, links[0])]
                    else:
                        chance = inner(tree.add_chance(col_node, j))
                        targets = [(chance, k, link[0], link) for k, link in enumerate(links)]
                    for at, into, p, (_, child, child_world) in targets:
                        if child < 0:
                            value = open_game.terminal_payoff(-1 - child)
                            leaf(value, value, at, into, p)
                        else:
                            emit(child, child_world, at, into, p)

        root = inner(tree.add_chance(label="the draw"))
        total = sum(self.nodes[n].worlds[w].chance for n, w in self.roots)
        for k, (n, w) in enumerate(self.roots):
            emit(n, w, root, k, self.nodes[n].worlds[w].chance / total)
        return PhaseTree(tree, np.array(lower), np.array(upper), horizon, horizon_leaves, np.array(node_code, dtype=np.int64))
