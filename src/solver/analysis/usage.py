"""Which cards optimal play uses: how often, turn by turn, and which it never
needs (exact, by propagating state probabilities under the reported strategies)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from ..graph import GameGraph
from .chain import CellIndex, cell_values, play_chain

OPTIMAL_TOLERANCE = 1e-9
"""A card counts as an optimal reply where it loses less than this against the
opponent's reported strategy (the values are certified to about 1e-11)."""


class CardStatus(Enum):
    """How much use optimal play makes of a card, from most to least."""

    PLAYED = "played under the reported strategies, from the start"
    PLAYED_ELSEWHERE = "in the reported strategies only at positions they never reach from the start"
    OPTIMAL_REPLY = "never played by the reported strategies, but an optimal reply somewhere (another optimal strategy may play it)"
    DEAD = "in no optimal strategy at any position: strictly worse than the value wherever it is legal"


@dataclass(frozen=True)
class CardUsage:
    cards: tuple[str, ...]
    """Every card legal somewhere, in action order."""
    overall: np.ndarray
    """(2, cards): each player's share of its plays going to each card, over whole games."""
    by_turn: np.ndarray
    """(2, turns, cards): P(card played at turn t | the game is still on at turn t)."""
    alive: np.ndarray
    """(turns,): P(the game is still on at the start of turn t)."""
    status: dict[str, CardStatus]
    """For P1's side (the game is symmetric between seats at the start)."""

    @property
    def dead(self) -> tuple[str, ...]:
        return tuple(card for card in self.cards if self.status[card] is CardStatus.DEAD)


def card_usage(
    graph: GameGraph, values: np.ndarray, row_strategy: np.ndarray, col_strategy: np.ndarray,
    start: int, max_turns: int = 200,
) -> CardUsage:
    """Card usage from state index `start` under the two reported strategies."""
    labels = graph.action_labels
    legal = np.unique(graph.row_actions.astype(np.int64))
    cards = tuple(labels[a] for a in legal)
    column = np.full(len(labels), -1, np.int64)
    column[legal] = np.arange(legal.size)
    row_state = np.repeat(np.arange(graph.num_states), np.diff(graph.row_ptr))
    col_state = np.repeat(np.arange(graph.num_states), np.diff(graph.col_ptr))

    chain = play_chain(graph, row_strategy, col_strategy)
    per_turn, alive = [], []
    reached = np.zeros(graph.num_states, bool)
    for mass in chain.masses(start, max_turns):
        reached |= mass > 0
        total = mass.sum()
        alive.append(total)
        per_turn.append(np.stack([
            _card_mass(mass[row_state] * row_strategy, column[graph.row_actions], legal.size),
            _card_mass(mass[col_state] * col_strategy, column[graph.col_actions], legal.size),
        ]) / total)
    alive_arr = np.array(alive)
    by_turn = np.stack(per_turn, axis=1)
    overall = np.einsum("stc,t->sc", by_turn, alive_arr) / alive_arr.sum()

    status = _card_status(graph, values, row_strategy, col_strategy, reached, row_state, column, legal, cards)
    return CardUsage(cards, overall, by_turn, alive_arr, status)


def _card_mass(weights: np.ndarray, card_column: np.ndarray, size: int) -> np.ndarray:
    return np.bincount(card_column, weights=weights, minlength=size)


def _card_status(
    graph: GameGraph, values, row_strategy, col_strategy, reached, row_state, column, legal, cards,
) -> dict[str, CardStatus]:
    # A card in the support of some optimal strategy earns the value against
    # every optimal strategy of the opponent; one that earns less against the
    # reported one is in no optimal support there.
    cells = CellIndex.of(graph)
    earned = np.bincount(
        cells.row, weights=cell_values(graph, values) * col_strategy[cells.col], minlength=graph.row_actions.size,
    )
    optimal_reply = earned >= values[row_state] - OPTIMAL_TOLERANCE
    played = row_strategy > OPTIMAL_TOLERANCE
    col_state = np.repeat(np.arange(graph.num_states), np.diff(graph.col_ptr))
    col_played = col_strategy > OPTIMAL_TOLERANCE
    size = legal.size
    any_of = lambda mask, where, actions: np.bincount(column[actions[mask & where]], minlength=size) > 0  # noqa: E731
    everywhere = np.ones_like(played)
    from_start = any_of(played, reached[row_state], graph.row_actions) | any_of(
        col_played, reached[col_state], graph.col_actions
    )
    elsewhere = any_of(played, everywhere, graph.row_actions)
    replies = any_of(optimal_reply, everywhere, graph.row_actions)
    status = {}
    for j, card in enumerate(cards):
        if from_start[j]:
            status[card] = CardStatus.PLAYED
        elif elsewhere[j]:
            status[card] = CardStatus.PLAYED_ELSEWHERE
        elif replies[j]:
            status[card] = CardStatus.OPTIMAL_REPLY
        else:
            status[card] = CardStatus.DEAD
    return status
