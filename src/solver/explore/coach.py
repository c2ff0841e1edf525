"""Playing one seat against the solver, and what each of the designer's cards cost.

A game is its start, the designer's seat, a seed and the designer's cards in
order; it is replayed from those alone, so its URL replays it. Turn t takes the
t-th pair of numbers from numpy's generator seeded with the seed: the first
picks the solver's card from its optimal strategy, the second the turn's
chance outcome (a bonus draw, a contested coin). The solver's card depends on
the position and its own number only, never on the designer's card that turn:
both cards are revealed at once.

A card's cost is the value of the best card against the solver's strategy
minus the value of the card played (the stage's values after each pair of
cards, weighted by the solver's strategy). Against an optimal strategy the
best cards are worth the position's value, so the costs of a game add up to
how much of the start's value the designer gave away, in expectation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from rules.charge_spark.cards import Card
from rules.charge_spark.game import WINNER_LABELS
from rules.charge_spark.state import Position
from rules.charge_spark.turn import Winner

from ..core.result import StateAnswer
from .answers import Branch, ExploreInputError, Explorer

COST_TOLERANCE = 1e-9
"""A smaller cost is rounding: values are certified to about 1e-11, not a card given away."""
MAX_TURNS = 1000
SEATS = {"1": 0, "2": 1, "p1": 0, "p2": 1}


def to_seat(value_to_p1: float, seat: int) -> float:
    """A value to P1 seen from `seat`: the payoffs to the two seats add up to 1
    (P(P1 wins) + P(P2 wins) + P(unending), the unending half to each)."""
    return value_to_p1 if seat == 0 else 1.0 - value_to_p1


def card_values(answer: StateAnswer, seat: int) -> dict[str, float]:
    """The value to `seat` (0: P1, 1: P2) of each of its cards against the
    other side's strategy in `answer`: its row (or column) of the stage matrix
    weighted by that strategy."""
    matrix = np.asarray(answer.matrix, dtype=np.float64)
    if seat == 0:
        return dict(zip(answer.rows, (matrix @ np.fromiter(answer.col_strategy.values(), float)).tolist(), strict=True))
    against = np.fromiter(answer.row_strategy.values(), float) @ matrix
    return dict(zip(answer.cols, (1.0 - against).tolist(), strict=True))


def pick(weights: Sequence[float], u: float) -> int:
    """The index that `u` in [0, 1) falls on when the weights are laid end to end
    (scaled to their sum: stored strategies add up to 1 within rounding)."""
    cumulative = np.cumsum(np.asarray(weights, dtype=np.float64))
    return min(int(np.searchsorted(cumulative, u * cumulative[-1], side="right")), len(cumulative) - 1)


@dataclass(frozen=True)
class Turn:
    """One turn of a coached game, from the designer's seat."""

    number: int  # from 1
    position: Position
    value: float  # the position's value to the designer
    mine: Card
    theirs: Card
    values: dict[str, float]  # each of the designer's cards against the solver's strategy
    chance: Fraction  # of the outcome drawn
    outcome: Branch

    @property
    def chosen(self) -> float:
        return self.values[self.mine.label]

    @property
    def best(self) -> float:
        return max(self.values.values())

    @property
    def best_cards(self) -> tuple[str, ...]:
        return tuple(card for card, v in self.values.items() if v >= self.best - COST_TOLERANCE)

    @property
    def cost(self) -> float:
        """What the card played gave away against the solver's strategy (0 for a best card)."""
        gap = self.best - self.chosen
        return gap if gap > COST_TOLERANCE else 0.0


@dataclass(frozen=True)
class CoachGame:
    """A game replayed: its turns so far and where it stands."""

    start: Position
    seat: int  # the designer's: 0 P1, 1 P2
    seed: int
    turns: tuple[Turn, ...]
    position: Position | None  # None once the game is over
    winner: Winner | None  # who won and how, once it is

    @property
    def over(self) -> bool:
        return self.winner is not None

    @property
    def result(self) -> str | None:
        """How the game ended, for display ("P1 wins by knock-out")."""
        return None if self.winner is None else WINNER_LABELS[self.winner]

    @property
    def total_cost(self) -> float:
        return sum(turn.cost for turn in self.turns)

    @property
    def lost_turns(self) -> tuple[Turn, ...]:
        """The turns whose card gave value away, costliest first."""
        return tuple(sorted((t for t in self.turns if t.cost > 0.0), key=lambda t: (-t.cost, t.number)))

    @property
    def designer_won(self) -> bool | None:
        return None if self.winner is None else self.winner.seat == self.seat


def parse_seat(text: str | None) -> int:
    """`1`/`p1` (the designer plays P1) or `2`/`p2`; P1 when not given."""
    if text is None or not text.strip():
        return 0
    seat = SEATS.get(text.strip().lower())
    if seat is None:
        raise ExploreInputError(f"seat must be 1 or 2 (the seat you play), not {text.strip()!r}")
    return seat


def parse_seed(text: str | None) -> int | None:
    """A seed: a whole number from 0 to 2**63 - 1; None when not given."""
    if text is None or not text.strip():
        return None
    text = text.strip()
    if not text.isdigit() or len(text) > 19 or int(text) >= 2**63:
        raise ExploreInputError(f"seed must be a whole number from 0 to {2**63 - 1}, not {text[:40]!r}")
    return int(text)


def parse_moves(text: str | None) -> list[str]:
    """The designer's cards so far, comma-separated (checked as the game is replayed)."""
    moves = [name.strip() for name in (text or "").split(",") if name.strip()]
    if len(moves) > MAX_TURNS:
        raise ExploreInputError(f"a coached game is replayed for at most {MAX_TURNS} turns; this one has {len(moves)}")
    return moves


def replay(explorer: Explorer, start: Position, seat: int, seed: int, moves: Sequence[str]) -> CoachGame:
    """The game from `start` with the designer in `seat` playing `moves` in
    order, the solver's cards and the chance outcomes drawn from `seed`."""
    numbers = np.random.default_rng(seed)
    position: Position | None = start
    winner = None
    turns: list[Turn] = []
    for number, name in enumerate(moves, start=1):
        if position is None:
            raise ExploreInputError(f"card {number} ({name[:20]!r}): the game ended at turn {number - 1}")
        u_card, u_chance = numbers.random(2)
        try:
            mine = explorer.card(position, seat, name)
        except ValueError as error:
            raise type(error)(f"turn {number}: {error}") from None
        answer = explorer.answer(position)
        strategy = answer.col_strategy if seat == 0 else answer.row_strategy
        theirs = Card.parse(list(strategy)[pick(list(strategy.values()), u_card)])
        cards = (mine, theirs) if seat == 0 else (theirs, mine)
        step = explorer.step(position, *cards)
        outcome = step.outcomes[pick([float(o.probability) for o in step.outcomes], u_chance)]
        turns.append(Turn(number, position, to_seat(answer.value, seat), mine, theirs, card_values(answer, seat),
                          outcome.probability, outcome))
        position, winner = outcome.position, outcome.winner
    return CoachGame(start, seat, seed, tuple(turns), position, winner)
