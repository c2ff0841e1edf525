r"""Gambit extensive-form (.efg) files of `GameTree`s, written.

The format (version 4, "EFG 2 R"): a header naming the game and the two
players, then one line per node in depth-first order, a node's children
following it in edge order:

    c "name" <chance set> "" { "outcome" <probability> ... } 0
    p "name" <player> <information set> "set name" { "action" ... } 0
    t "name" <outcome> "" { <payoff to player 1>, <payoff to player 2> }

Information sets are numbered per player from 1, in the order `GameTree`
met them; each chance node is a chance set of its own; each leaf is an
outcome of its own. Player 1 is seat 0 and gets the leaf payoff, player 2
gets its negative.

Numbers are written as rationals: each float as the first convergent of its
continued fraction that rounds back to that same float (1/3 for 0.333...,
not the float's exact binary value 6004799503160661/18014398509481984; the
exact value where nothing shorter rounds to it), so a reader working in
doubles gets the tree's floats back exactly and Gambit, which computes with
rationals, gets the intended ones. Gambit wants a chance node's
probabilities to sum to exactly one: where the rationals do not, the largest
is written as one minus the others (a change within `GameTree.problem`'s
tolerance of 1e-12).

Names are quoted with `\"` and `\\` escapes, as Gambit writes them. Gambit
wants node labels unique, so a repeated one gets " #2", " #3", ...; actions
are told apart by name, so repeated and empty action names are made unique
the same way. (Gambit 16.7's reader reads `\\` back as three backslashes,
and a name ending in one runs on past its closing quote: names with
backslashes do not survive it.)

Two options serve readers that take less. OpenSpiel's reader parses a
rational's numerator and denominator as 32-bit integers and reads quoted
names without undoing escapes: `decimal=True` writes each float as the
shortest decimal that reads back as it, and `labels=False` leaves node and
set names empty and numbers the actions 1, 2, ... The latter also suits a
big tree going to Gambit, whose reader compares each node label with every
other node's (12,001 labelled nodes: 35 s to read, unlabelled 0.3 s).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np

from .files import write_text_atomically
from .game_tree import CHANCE, LEAF, GameTree

PLAYERS = ("Player 1", "Player 2")


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@functools.lru_cache(maxsize=1 << 16)
def simplest_fraction(x: float) -> Fraction:
    """The first continued-fraction convergent of the float `x` that rounds back to `x`
    (1/3 for 0.333...): a small denominator where there is one, else `x` exactly."""
    if not math.isfinite(x):
        raise ValueError(f"{x} is not a finite number")
    exact = Fraction(x)
    n, d = exact.numerator, exact.denominator
    h0, h1, k0, k1 = 0, 1, 1, 0  # the convergents before the first: 0/1 and 1/0
    while d:
        a, (n, d) = n // d, (d, n % d)
        h0, h1, k0, k1 = h1, a * h1 + h0, k1, a * k1 + k0
        if h1 / k1 == x:  # int / int rounds correctly
            return Fraction(h1, k1)
    return exact  # not reached: the last convergent is x itself


def _fraction(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def _rational(x: float) -> str:
    return _fraction(simplest_fraction(x))


def _decimal(x: float) -> str:
    if not math.isfinite(x):
        raise ValueError(f"{x} is not a finite number")
    # Positional, not 1e-05: Gambit's reader takes no exponent with a sign.
    return np.format_float_positional(x + 0.0, unique=True, trim="-")


def _rational_probabilities(values: Sequence[float]) -> list[str]:
    fractions = [simplest_fraction(p) for p in values]
    total = sum(fractions, Fraction(0))
    if total != 1:  # Gambit wants exactly one
        largest = max(range(len(fractions)), key=lambda i: fractions[i])
        fractions[largest] += 1 - total
    return [_fraction(f) for f in fractions]


def _decimal_probabilities(values: Sequence[float]) -> list[str]:
    return [_decimal(p) for p in values]


class _Distinct:
    """Names made unique in the order they come: a repeat gets " #2", " #3", ...
    The empty name (an unlabelled node, which Gambit allows) is left alone."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.repeats: dict[str, int] = {}

    def __call__(self, name: str) -> str:
        candidate = name
        while candidate in self.seen:
            self.repeats[name] = self.repeats.get(name, 1) + 1
            candidate = f"{name} #{self.repeats[name]}"
        if candidate:
            self.seen.add(candidate)
        return candidate


def _distinct(names: Sequence[str]) -> list[str]:
    """Action names, unique (readers tell actions apart by name): an empty one is numbered by its place."""
    distinct = _Distinct()
    return [distinct(name or str(i + 1)) for i, name in enumerate(names)]


def write_efg(
    tree: GameTree, payoffs: np.ndarray | None = None, title: str = "Game tree",
    labels: bool = True, decimal: bool = False,
) -> str:
    """The zero-sum game `tree` (leaf payoffs to player 1, from `payoffs` per node if given; player 2 gets their negatives)."""
    problem = tree.problem()
    if problem is not None:
        raise ValueError(problem)
    values = tree.payoffs() if payoffs is None else np.asarray(payoffs, dtype=np.float64)
    if values.shape != (len(tree),):
        raise ValueError(f"payoffs has shape {values.shape}, not ({len(tree)},) (one per node)")

    number = _decimal if decimal else _rational
    probabilities = _decimal_probabilities if decimal else _rational_probabilities

    set_number: list[int] = []  # per information set: its number among its player's, from 1
    counts = [0, 0]
    for infoset in tree.infosets:
        counts[infoset.player] += 1
        set_number.append(counts[infoset.player])
    if labels:
        actions = [" ".join(map(_quoted, _distinct(infoset.actions))) for infoset in tree.infosets]
        set_name = [_quoted(str(infoset.key)) for infoset in tree.infosets]
    else:
        actions = [" ".join(_quoted(str(a + 1)) for a in range(len(infoset.actions))) for infoset in tree.infosets]
        set_name = ['""'] * len(tree.infosets)

    lines = [f"EFG 2 R {_quoted(title)} {{ {' '.join(map(_quoted, PLAYERS))} }}", '""', ""]
    node_name = _Distinct()  # Gambit wants node labels unique
    chance_sets = outcomes = 0
    stack = [0]
    while stack:
        node = stack.pop()
        name = _quoted(node_name(tree.label[node])) if labels else '""'
        player = tree.player[node]
        children = tree.children[node]
        if player == LEAF:
            outcomes += 1
            x = float(values[node])
            lines.append(f't {name} {outcomes} "" {{ {number(x)}, {number(-x)} }}')
        elif player == CHANCE:
            chance_sets += 1
            child_names = [tree.label[c] for c in children]
            if not labels or not all(child_names) or len(set(child_names)) < len(child_names):
                child_names = [str(i + 1) for i in range(len(children))]
            ps = probabilities([tree.probability[c] for c in children])
            branches = " ".join(f"{_quoted(n)} {p}" for n, p in zip(child_names, ps))
            lines.append(f'c {name} {chance_sets} "" {{ {branches} }} 0')
        else:
            index = tree.infoset[node]
            lines.append(f"p {name} {player + 1} {set_number[index]} {set_name[index]} {{ {actions[index]} }} 0")
        stack.extend(reversed(children))
    return "\n".join(lines) + "\n"


def save_efg(
    tree: GameTree, path: Path | str, payoffs: np.ndarray | None = None, title: str = "Game tree",
    labels: bool = True, decimal: bool = False,
) -> None:
    """`write_efg` into `path`, whole or not at all (`OutputError` names the file and why)."""
    text = write_efg(tree, payoffs, title, labels=labels, decimal=decimal)
    write_text_atomically(Path(path), text)
