"""Where hidden phases start: every turn of the open game, from any position
of its table, in which a player draws a bonus card that the opponent cannot
tell. A draw is a chance event with more than one outcome; one whose card
everybody can tell (a single card left, or cards all alike) hides nothing.

Turns from different positions that leave the same worlds behind are one
start; the first position met (in code order) stands for them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from rules.charge_spark.cards import Card
from rules.charge_spark.hidden import all_known, drawn_cards, known_after_turn

from .phase_tree import OpenGame, Phase, World


@dataclass(frozen=True)
class PhaseStart:
    before: int
    """Code of the position the drawing turn was played from (one of those that lead here)."""
    cards: tuple[Card, Card]
    """The cards P1 and P2 played in that turn."""
    worlds: tuple[World, ...]
    """The positions after the draw, with their chances and what each player has seen."""
    holder: str
    """Who drew: "P1", "P2" or "both"."""
    outcomes: tuple[tuple[int, float], ...]
    """The drawing turn's chance outcomes: (next code, probability). Turns with equal outcomes are one start."""

    def drawn(self, seat: int) -> dict[str, float]:
        """The card `seat` drew, by probability (empty: `seat` did not draw)."""
        found: dict[str, float] = {}
        for world in self.worlds:
            if world.draws[seat]:
                label = Card(world.draws[seat][-1]).label
                found[label] = found.get(label, 0.0) + world.chance
        return found


def drawing_turns(
    open_game: OpenGame, codes: np.ndarray
) -> Iterator[tuple[int, tuple[int, int], tuple[Card, Card], tuple[tuple[int, float], ...]]]:
    """The turns from the positions `codes` with more than one chance outcome:
    (index into `codes`, the cards' indices among each seat's legal cards,
    the cards played, the outcomes as (next code, probability))."""
    e = open_game.game.expand(np.asarray(codes, dtype=np.int64))
    cells = np.repeat(np.arange(len(codes)), e.row_count * e.col_count)
    cell_out = np.concatenate(([0], np.cumsum(e.out_count)))
    row_at = np.concatenate(([0], np.cumsum(e.row_count)))
    col_at = np.concatenate(([0], np.cumsum(e.col_count)))
    cell_at = np.concatenate(([0], np.cumsum(e.row_count * e.col_count)))
    for cell in np.flatnonzero(e.out_count > 1):
        state = int(cells[cell])
        local = int(cell - cell_at[state])
        cols = int(e.col_count[state])
        cards = (Card(int(e.row_actions[row_at[state] + local // cols])), Card(int(e.col_actions[col_at[state] + local % cols])))
        outcomes = tuple((int(e.out_next[k]), float(e.out_prob[k])) for k in range(cell_out[cell], cell_out[cell + 1]))
        yield state, (local // cols, local % cols), cards, outcomes


def phase_starts(open_game: OpenGame, chunk: int = 1 << 14) -> list[PhaseStart]:
    """Every hidden-phase start from the positions of the open game's table, in the order found."""
    states = np.asarray(open_game.table.states, dtype=np.int64)
    seen: set[tuple] = set()
    starts = []
    for at in range(0, len(states), chunk):
        codes = states[at : at + chunk]
        for state, _, cards, outcomes in drawing_turns(open_game, codes):
            if outcomes in seen:
                continue
            seen.add(outcomes)
            start = start_of_turn(open_game, int(codes[state]), cards, outcomes)
            if start is not None:
                starts.append(start)
    return starts


def start_of_turn(
    open_game: OpenGame, before_code: int, cards: tuple[Card, Card], outcomes: tuple[tuple[int, float], ...]
) -> PhaseStart | None:
    """The phase a turn with these chance outcomes starts (None: it hides nothing)."""
    before = open_game.decode(before_code)
    worlds = []
    for nxt, probability in outcomes:
        if nxt < 0:
            return None  # draws never end a game; a chance outcome that does is not a draw
        after = open_game.decode(nxt)
        drawn = drawn_cards(before, cards, after)
        known = known_after_turn(before, all_known(before), cards, after)
        draws = tuple((int(card),) if card is not None else () for card in drawn)
        worlds.append(World(nxt, known, (draws[0], draws[1]), probability))
    phase = Phase(open_game, worlds)
    if all(node.exit for node in phase.nodes):
        return None  # everybody can tell the card drawn (a coin for the last one, or cards alike)
    drew = [any(world.draws[seat] for world in worlds) for seat in (0, 1)]
    holder = "both" if all(drew) else ("P1" if drew[0] else "P2")
    return PhaseStart(before_code, cards, tuple(worlds), holder, outcomes)
