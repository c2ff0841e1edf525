"""A handful of telling positions, each the most frequent of its kind under
optimal play (by expected visits from the start), with the stage game there.

Each kind is a test on position fields (vectorised over batches of states);
where optimal play never reaches one, the first such position in the table is
shown instead (found by scanning the table in chunks), and a kind the table
holds no position of is left out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rules.charge_spark.cards import Card
from rules.charge_spark.config import RuleSet
from rules.charge_spark.state import PositionCodec, RestCard, player_digits, rest_code

from ..core.result import SolveResult, StateAnswer

Digits = dict[str, np.ndarray]


@dataclass(frozen=True)
class Situation:
    title: str
    why: str
    """What makes the position interesting, for a reader."""
    test: Callable[[Digits, Digits], np.ndarray]
    """P1's and P2's digit arrays -> which states are of this kind."""


@dataclass(frozen=True)
class AnnotatedPosition:
    title: str
    why: str
    code: int
    frequency: float
    """Expected visits under the reported strategies (0: optimal play never gets here)."""
    answer: StateAnswer


def situations(rules: RuleSet) -> list[Situation]:
    """The kinds of position the report annotates, under `rules`."""
    moon = rules.moves_to_moon
    facing = rules.seat(1)  # P2's own Lightning: its cost and damage (one-seat keys may make them P2's alone)
    lightning_battery, lightning_disc = facing.cost(Card.LIGHTNING)
    lightning_rest = rest_code(RestCard(Card.LIGHTNING))
    kinds = [
        Situation("Opening", "The first turn: both players at the start.",
                  lambda p1, p2: (p1["progress"] == 0) & (p1["rest"] == 0) & (p2["rest"] == 0)),
        Situation("Out of battery", "P1 has no face-up Battery: no Spark, Lightning or Copy this turn.",
                  lambda p1, p2: p1["battery"] == 0),
        Situation("One step from the moon", "P1's next uncancelled Move wins at the moon.",
                  lambda p1, p2: p1["progress"] == moon - 1),
        Situation(
            "Facing Lightning",
            "P2 can play Lightning, and it would knock P1 out unless P1 blocks or counters it.",
            lambda p1, p2: (p2["battery"] >= lightning_battery) & (p2["disc"] >= lightning_disc)
            & (p2["rest"] != lightning_rest) & (p1["health"] <= facing.damage_of(Card.LIGHTNING)),
        ),
    ]
    if Card.COPY in rules.bonus_cards:
        codec = PositionCodec(rules)
        k = codec.bonus_kinds.index(Card.COPY)
        below = int(np.prod(codec.bonus_radix[k + 1 :]))
        radix = codec.bonus_radix[k]
        kinds.append(Situation(
            "Holding Copy", "P1 has Copy in hand: it acts as the card in P1's rest zone, for Copy's own cost.",
            lambda p1, p2: (p1["bonus"] // below) % radix > 0,
        ))
    return kinds


CHUNK_STATES = 1 << 20


def annotated_positions(
    rules: RuleSet, result: SolveResult, visited: np.ndarray, visits: np.ndarray,
    answer: Callable[[int], StateAnswer], chunk: int = CHUNK_STATES,
) -> list[AnnotatedPosition]:
    """Each situation's most visited position (`visits[j]`: expected visits of
    the state coded `visited[j]`, sorted codes; every other state of `result` is
    never visited), never one already shown for an earlier situation. Where
    none is visited, the first such state of `result`."""
    codec = PositionCodec(rules)
    p1, p2 = player_digits(codec, visited, 0), player_digits(codec, visited, 1)
    shown: list[AnnotatedPosition] = []
    taken: set[int] = set()
    for situation in situations(rules):
        where = np.flatnonzero(situation.test(p1, p2) & ~np.isin(visited, list(taken)))
        if where.size and visits[where].max() > 0:
            j = int(where[np.argmax(visits[where])])  # the first in code order on ties, as in the table
            code, frequency = int(visited[j]), float(visits[j])
        else:
            code, frequency = _first_in_table(codec, result.states, situation, taken, chunk), 0.0
            if code is None:
                continue
        taken.add(code)
        shown.append(AnnotatedPosition(situation.title, situation.why, code, frequency, answer(code)))
    return shown


def _first_in_table(codec: PositionCodec, states: np.ndarray, situation: Situation, taken: set[int], chunk: int) -> int | None:
    """The first of `states` (in order) of `situation`'s kind not in `taken`, or None."""
    for lo in range(0, states.shape[0], chunk):
        codes = np.asarray(states[lo : lo + chunk])
        hits = codes[situation.test(player_digits(codec, codes, 0), player_digits(codec, codes, 1))]
        hits = hits[~np.isin(hits, list(taken))]
        if hits.size:
            return int(hits[0])
    return None
