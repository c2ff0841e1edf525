"""Which cards optimal play uses: how often, turn by turn, and which it never
needs (exact, by propagating state probabilities under the reported strategies).

`card_usage` works on a whole game graph (small games; the reference).
`table_card_usage` gives the same figures for a table of any size: the shares
from the chain of play over the states it reaches (`core.play.Play`), the
statuses streamed over every state of the table (`card_status`).
`usage_from_play` gives them again from play followed once and propagated
once (`core.play.follow_play`, `core.chain.turn_by_turn`), as the report
does: the rest of the table is read only as far as the statuses need it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np
import scipy.sparse as sp

from ..core.chain import CellIndex, PlayChain, TurnByTurn, cell_values, chain_of_play, play_chain
from ..core.graph import GameGraph, offsets_of, segment_positions
from ..core.play import FollowedPlay, Play
from ..core.protocol import StochasticGame
from ..core.result import SolveResult
from .card_status import OPTIMAL_TOLERANCE, CardFlags, card_flags, flags_for_statuses


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
    """Card usage from state index `start` under the two reported strategies,
    `graph` holding every state of the table (the status looks at all of them)."""
    legal = np.unique(graph.row_actions.astype(np.int64))
    cards = tuple(graph.action_labels[a] for a in legal)
    choices = [_choices(graph.row_ptr, graph.row_actions, row_strategy, len(graph.action_labels)),
               _choices(graph.col_ptr, graph.col_actions, col_strategy, len(graph.action_labels))]
    overall, by_turn, alive, reached = _shares(play_chain(graph, row_strategy, col_strategy), choices, start, max_turns)
    row_state = np.repeat(np.arange(graph.num_states), np.diff(graph.row_ptr))
    status = _card_status(graph, values, row_strategy, col_strategy, reached, row_state, legal, cards)
    return CardUsage(cards, overall[:, legal], by_turn[:, :, legal], alive, status)


def table_card_usage(
    game: StochasticGame, result: SolveResult, play: Play, chain: PlayChain | None = None, max_turns: int = 200,
) -> CardUsage:
    """`card_usage` of the whole table `result`, from `play`, the chain of play
    under its strategies from the start (`chain`: its `chain_of_play`, if
    already built), and a stream over every stored state."""
    size = len(game.action_labels)
    choices = [_choices(*_table_side(result.row_ptr, result.row_actions, result.row_strategy, play.index), size),
               _choices(*_table_side(result.col_ptr, result.col_actions, result.col_strategy, play.index), size)]
    chain = chain or chain_of_play(play.graph)
    overall, by_turn, alive, reached = _shares(chain, choices, play.start, max_turns)
    flags = card_flags(game, result, play.states[reached])
    legal = np.flatnonzero(flags.legal)
    cards = tuple(game.action_labels[a] for a in legal)
    status = statuses(flags, legal, cards)
    return CardUsage(cards, overall[:, legal], by_turn[:, :, legal], alive, status)


def choices_to_follow(followed: FollowedPlay) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]:
    """Both seats' strategies at play's states, as `chain.turn_by_turn` sums them turn by turn for `usage_from_play`."""
    return tuple((c.ptr, c.actions, c.weights) for c in followed.choices)


def usage_from_play(game: StochasticGame, result: SolveResult, followed: FollowedPlay, figures: TurnByTurn) -> CardUsage:
    """`table_card_usage` from play followed once (`follow_play`) and its one
    propagation (`turn_by_turn`, with `choices_to_follow` of it): the shares
    read from the propagation, the statuses from the states it reaches and,
    only as far as they need it, from the rest of the table (`flags_for_statuses`)."""
    size = len(game.action_labels)
    alive = figures.alive
    by_turn = figures.chosen / alive[None, :, None]
    overall = np.einsum("stc,t->sc", by_turn, alive) / alive.sum()
    reached = figures.visits > 0
    played = np.zeros(size, bool)
    for seat in followed.choices:
        state = np.repeat(np.arange(reached.size), np.diff(seat.ptr))
        mask = (seat.weights > OPTIMAL_TOLERANCE) & reached[state]
        played |= np.bincount(np.asarray(seat.actions[mask], np.int64), minlength=size)[:size] > 0
    flags = flags_for_statuses(game, result, played)
    legal = np.flatnonzero(flags.legal)
    cards = tuple(game.action_labels[a] for a in legal)
    return CardUsage(cards, overall[:, legal], by_turn[:, :, legal], alive, statuses(flags, legal, cards))


def _table_side(ptr: np.ndarray, actions: np.ndarray, weights: np.ndarray, index: np.ndarray):
    """One seat's (ptr, actions, weights) at the table's states `index`, in that order."""
    at = segment_positions(ptr, index)
    return offsets_of(ptr[index + 1] - ptr[index]), np.asarray(actions[at]), np.asarray(weights[at])


def _choices(ptr: np.ndarray, actions: np.ndarray, weights: np.ndarray, size: int) -> sp.csc_matrix:
    """(action id, state) -> the strategy's weight on that action there: it
    turns a distribution over states into the distribution of the card played."""
    return sp.csc_matrix((weights, actions.astype(np.int32), ptr), shape=(size, ptr.size - 1))


def _shares(
    chain: PlayChain, choices: list[sp.csc_matrix], start: int, max_turns: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(overall, by_turn, alive) as in `CardUsage` with a column per action id,
    and which states play reaches in the turns followed (`choices`: each
    seat's `_choices`)."""
    per_turn, alive = [], []
    reached = np.zeros(chain.transition.shape[0], bool)
    for mass in chain.masses(start, max_turns):
        reached |= mass > 0
        total = mass.sum()
        alive.append(total)
        per_turn.append(np.stack([choices[0] @ mass, choices[1] @ mass]) / total)
    alive_arr = np.array(alive)
    by_turn = np.stack(per_turn, axis=1)
    overall = np.einsum("stc,t->sc", by_turn, alive_arr) / alive_arr.sum()
    return overall, by_turn, alive_arr, reached


def _card_status(
    graph: GameGraph, values, row_strategy, col_strategy, reached, row_state, legal, cards,
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
    size = len(graph.action_labels)
    flags = CardFlags(
        legal=_any_card(np.ones_like(played), graph.row_actions, size),
        played_from_start=_any_card(played & reached[row_state], graph.row_actions, size)
        | _any_card(col_played & reached[col_state], graph.col_actions, size),
        played=_any_card(played, graph.row_actions, size),
        optimal_reply=_any_card(optimal_reply, graph.row_actions, size),
    )
    return statuses(flags, legal, cards)


def _any_card(mask: np.ndarray, actions: np.ndarray, size: int) -> np.ndarray:
    return np.bincount(actions[mask].astype(np.int64), minlength=size) > 0


def statuses(flags: CardFlags, legal: np.ndarray, cards: tuple[str, ...]) -> dict[str, CardStatus]:
    """Each card's status from its flags (`legal`: the cards' action ids)."""
    status = {}
    for action, card in zip(legal, cards):
        if flags.played_from_start[action]:
            status[card] = CardStatus.PLAYED
        elif flags.played[action]:
            status[card] = CardStatus.PLAYED_ELSEWHERE
        elif flags.optimal_reply[action]:
            status[card] = CardStatus.OPTIMAL_REPLY
        else:
            status[card] = CardStatus.DEAD
    return status
