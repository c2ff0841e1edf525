"""The explorer's one way to the solved table: positions, answers, query
objects and turns, each read exactly as `charge-spark query` reads them.

A request names positions and cards as text; every way that text can be wrong
raises one of `BAD_INPUT`, whose message is the CLI's one line.
"""

from __future__ import annotations

import functools
import threading
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from rules.charge_spark.cards import Card
from rules.charge_spark.config import RuleSet, fingerprint
from rules.charge_spark.game import WINNER_LABELS, ChargeSparkGame
from rules.charge_spark.notation import format_position, parse_position
from rules.charge_spark.state import Position
from rules.charge_spark.turn import Winner, legal_cards, resolve_turn

from ..answering import SolveNotAskedError, answer_at, lasting_at, query_json
from ..core.result import SolveResult, StateAnswer
from ..user_errors import USER_ERRORS, one_line

ASK_FIRST_STATES = 1_000_000
"""Estimated states past which a table is solved only when a request asks for it (the "Solve" button, a
POST): a plain GET of a rule set this large shows the estimate instead of starting minutes of work. Nor is
a position outside a stored table solved while its page waits when it adds more states than this."""
KEPT_ANSWERS = 1024
"""Answers remembered per server (tens of kilobytes each, with the part of the table read for them):
a coached game is replayed from its start on every turn, and reads each turn's answer again."""


class ExploreInputError(ValueError):
    """A request the explorer cannot answer: a missing field, an illegal card, a game already over."""


BAD_INPUT = (*USER_ERRORS, ExploreInputError)
"""What a request's text can raise; `message` gives its one line."""


def message(error: Exception) -> str:
    """The one line the CLI prints for `error` (after `charge-spark: error: `)."""
    return one_line(error)


@dataclass(frozen=True)
class Branch:
    """One chance outcome of a turn: the next position, or how the game ended."""

    probability: Fraction
    position: Position | None
    winner: Winner | None  # who won and how, when the turn ended the game
    drawn: tuple[tuple[str, ...], tuple[str, ...]]  # the bonus cards each player drew this turn

    @property
    def label(self) -> str | None:
        """How the game ended, for display ("P1 wins by knock-out")."""
        return None if self.winner is None else WINNER_LABELS[self.winner]


@dataclass(frozen=True)
class Step:
    """A turn from `position` with P1 playing `cards[0]` and P2 `cards[1]`."""

    position: Position
    cards: tuple[Card, Card]
    outcomes: tuple[Branch, ...]


@dataclass(frozen=True)
class Answered:
    """What `answer_at` returns, kept together."""

    answer: StateAnswer
    result: SolveResult
    source: Path | None
    edge: Path | None


class Explorer:
    """One rule set's table, answered position by position. Safe to share
    between a server's threads: reads are serialised (two cores gain nothing
    from reading one memory-mapped file at once)."""

    def __init__(self, rules: RuleSet, cache_dir: str | None, settings: tuple[str, ...] = (),
                 started: RuleSet | None = None) -> None:
        self.rules = rules
        self.cache_dir = cache_dir
        self.settings = settings  # the `set=` items that make `rules` from the rules the explorer started with
        self.started = started or rules  # the rules the explorer started with
        self.fingerprint = fingerprint(rules)
        self.game = ChargeSparkGame(rules)
        self._lock = threading.RLock()
        self._answered = functools.lru_cache(maxsize=KEPT_ANSWERS)(self._answer_code)
        self._queried = functools.lru_cache(maxsize=256)(self._query_code)

    def position(self, text: str | None) -> Position:
        """The position written `text` (`start` or the spec's notation); any
        text at all is parsed as `query` parses it, for the same message."""
        if text is None:
            raise ExploreInputError("no position given (write `start` or a position such as 'b1 rest=spark / h2')")
        return parse_position(text, self.rules)

    def text(self, position: Position) -> str:
        """`position` in the normal form `query` prints."""
        return format_position(position, self.rules)

    def answered(self, position: Position) -> Answered:
        """`answer_at` at `position`: from the stored table, or solved up to its edge when it does not hold it."""
        return self._answered(self.game.encode(position))

    def answer(self, position: Position) -> StateAnswer:
        return self.answered(position).answer

    def query(self, position: Position) -> dict:
        """The object `query --json` prints for `position`."""
        return self._queried(self.game.encode(position))

    def _answer_code(self, code: int) -> Answered:
        with self._lock:
            try:
                return Answered(*answer_at(self.rules, self.game.decode(code), self.cache_dir, None,
                                           show_progress=False, unasked_limit=ASK_FIRST_STATES))
            except SolveNotAskedError:
                raise ExploreInputError(
                    f"this position is outside the stored table and adds more than {ASK_FIRST_STATES:,} states to"
                    " it: the explorer does not solve that many while a page waits (`charge-spark query POSITION"
                    " --max-states N` solves them)") from None

    def _query_code(self, code: int) -> dict:
        position = self.game.decode(code)
        done = self._answered(code)
        with self._lock:
            lasting = lasting_at(self.rules, position, done.result, self.cache_dir, done.source, done.edge)
        return query_json(self.rules, self.text(position), done.answer, done.result, lasting)

    def legal(self, position: Position, seat: int) -> tuple[Card, ...]:
        """The cards the player in `seat` (0: P1, 1: P2) may play at `position`."""
        return legal_cards(self.rules, position.player(seat), seat)

    def card(self, position: Position, seat: int, name: str | None) -> Card:
        """The card called `name`, checked playable by `seat` at `position`."""
        who = f"P{seat + 1}"
        if name is None or not name.strip():
            raise ExploreInputError(f"no card given for {who}")
        card = Card.parse(name)  # UnknownCardError, as the CLI reports it
        legal = self.legal(position, seat)
        if card not in legal:
            raise ExploreInputError(
                f"{who} cannot play {card.label} at {self.text(position)}"
                f" (playable: {', '.join(c.label for c in legal)})"
            )
        return card

    def step(self, position: Position, card1: Card, card2: Card) -> Step:
        """Where P1's `card1` against P2's `card2` leads, with each outcome's chance (the rules' own turn)."""
        outcomes = []
        for probability, after in resolve_turn(self.rules, position, card1, card2):
            if isinstance(after, Winner):
                outcomes.append(Branch(probability, None, after, ((), ())))
            else:
                outcomes.append(Branch(probability, after, None, (_drawn(position, after, 0), _drawn(position, after, 1))))
        return Step(position, (card1, card2), tuple(outcomes))

    def step_json(self, step: Step) -> dict:
        """`step` for the API: positions in the normal form, chances exact and as floats."""
        return {
            "fingerprint": self.fingerprint,
            "position": self.text(step.position),
            "p1": step.cards[0].label,
            "p2": step.cards[1].label,
            "outcomes": [
                {
                    "probability": float(o.probability),
                    "chance": str(o.probability),
                    "position": None if o.position is None else self.text(o.position),
                    "winner": o.label,
                    "winner_seat": None if o.winner is None else o.winner.seat + 1,
                    "kind": None if o.winner is None else o.winner.kind,
                    "p1_draws": list(o.drawn[0]),
                    "p2_draws": list(o.drawn[1]),
                }
                for o in step.outcomes
            ],
        }


def _drawn(before: Position, after: Position, seat: int) -> tuple[str, ...]:
    """The bonus cards `seat` drew between the two positions: a player's own
    bonus cards (hand and rest zone) change only by drawing."""
    gained = Counter(after.player(seat).held_bonus()) - Counter(before.player(seat).held_bonus())
    return tuple(card.label for card in sorted(gained.elements()))
