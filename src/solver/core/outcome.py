"""Seats and terminal outcomes as data.

Who won an outcome, and how, is read from its `Outcome`, never from its
label: a label is display text, free to change. A game states them as plain
data (`StochasticGame.terminal_winners`, `terminal_kinds`), since a game
imports nothing of the solver; `terminal_outcomes` turns them into these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .protocol import StochasticGame


class Seat(IntEnum):
    """A player: P1 (the maximiser, the stage game's rows) or P2. An int, so
    it indexes per-seat arrays and goes wherever a seat number did."""

    P1 = 0
    P2 = 1

    @property
    def other(self) -> Seat:
        return Seat(1 - self)

    def __str__(self) -> str:
        return self.name

    def __format__(self, spec: str) -> str:
        return format(self.name, spec)


@dataclass(frozen=True)
class Outcome:
    """A terminal outcome: who won it (None: nobody) and how (`kind`, e.g. "moon");
    `label` is for display only."""

    winner: Seat | None
    kind: str
    label: str

    def to_json(self) -> dict:
        return {"winner": None if self.winner is None else int(self.winner), "kind": self.kind, "label": self.label}

    @classmethod
    def from_json(cls, entry: Mapping) -> Outcome:
        winner = entry["winner"]
        return cls(None if winner is None else Seat(winner), str(entry["kind"]), str(entry["label"]))


def terminal_outcomes(game: StochasticGame) -> tuple[Outcome, ...]:
    """The `Outcome` of each terminal outcome of `game` (a `StochasticGame`)."""
    labels, winners, kinds = tuple(game.terminal_labels), tuple(game.terminal_winners), tuple(game.terminal_kinds)
    if not len(labels) == len(winners) == len(kinds) == len(game.terminal_payoff):
        raise ValueError("a game's terminal labels, payoffs, winners and kinds must be one per terminal outcome")
    return tuple(Outcome(None if w is None else Seat(w), str(k), str(label)) for label, w, k in zip(labels, winners, kinds))


def won_by(outcomes: Sequence[Outcome], seat: Seat) -> list[int]:
    """Indices of the outcomes `seat` wins."""
    return [t for t, outcome in enumerate(outcomes) if outcome.winner == seat]


def win_probability(probability: Mapping[str, float], outcomes: Iterable[Outcome], seat: Seat) -> float:
    """P(`seat` wins), over every way of winning, from each outcome's probability by label."""
    return sum(probability.get(o.label, 0.0) for o in outcomes if o.winner == seat)


def kind_probability(probability: Mapping[str, float], outcomes: Iterable[Outcome], kind: str) -> float:
    """P(the game ends in an outcome of `kind`, whoever wins it)."""
    return sum(probability.get(o.label, 0.0) for o in outcomes if o.kind == kind)
