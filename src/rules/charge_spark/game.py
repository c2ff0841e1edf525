"""Charge & Spark seen through the solver's protocol (`solver.core.protocol`).

This module only adapts shapes; it imports nothing from the solver, the
solver imports nothing from here. Actions are card codes; the terminal
outcomes are those of `turn.Winner` (P1 by knock-out, P1 at the moon, P2 by
knock-out, P2 at the moon), paying 1 to the winner and 0 to the loser; play
that never ends is worth 0.5 to each.
"""

from __future__ import annotations

import functools

import numpy as np

from .cards import Card
from .config import RuleSet
from .state import Position, PositionCodec
from .turn import Winner, legal_cards, resolve_turn
from .turn_tables import turn_tables

WINNER_LABELS = {
    Winner.P1_KNOCKOUT: "P1 wins by knock-out",
    Winner.P1_MOON: "P1 wins at the moon",
    Winner.P2_KNOCKOUT: "P2 wins by knock-out",
    Winner.P2_MOON: "P2 wins at the moon",
}


def encoding_layout_of(rules: RuleSet) -> tuple:
    """What the meaning of a state code depends on, as a hashable tuple: the
    codec's radices and the bonus card kinds with their counts. Rules with
    equal layouts share their state encoding (card costs and effects, the
    board's stars and the start do not enter it), so one game's solved values
    can seed a solve of the other."""
    codec = PositionCodec(rules)
    return codec.radices, tuple(card.label for card in codec.bonus_kinds), codec.bonus_radix


class ExpansionArrays:
    """Duck-typed `solver.core.protocol.Expansion` (kept local so rules never import solver)."""

    def __init__(self, row_count, row_actions, col_count, col_actions, out_count, out_next, out_prob):
        self.row_count = row_count
        self.row_actions = row_actions
        self.col_count = col_count
        self.col_actions = col_actions
        self.out_count = out_count
        self.out_next = out_next
        self.out_prob = out_prob


class ChargeSparkGame:
    """The game under one rule set, with compiled transitions."""

    action_labels = tuple(card.label for card in Card)
    terminal_labels = tuple(WINNER_LABELS[w] for w in Winner)
    terminal_winners = tuple(w.seat for w in Winner)
    """The seat (0: P1, 1: P2) that wins each terminal outcome."""
    terminal_kinds = tuple(w.kind for w in Winner)
    terminal_payoff = np.array([1.0 if w.seat == 0 else 0.0 for w in Winner])
    unending_payoff = 0.5
    terminal_swap = tuple(w.swapped.value for w in Winner)
    """Each terminal outcome seen from the other seat."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.codec = PositionCodec(rules)
        self.tables = turn_tables(rules)

    def encode(self, position: Position) -> int:
        return self.codec.encode(position)

    def encoding_layout(self) -> tuple:
        """See `encoding_layout_of`: games with equal layouts share their state codes."""
        return encoding_layout_of(self.rules)

    def decode(self, code: int) -> Position:
        return self.codec.decode(code)

    def expand(self, codes: np.ndarray) -> ExpansionArrays:
        # Imported here: loading numba costs half a second, which a query
        # answered from a stored table (the readable engine's work) never needs.
        from .transitions import expand_codes

        return ExpansionArrays(*expand_codes(self.tables, codes))

    def expand_cells(self, codes: np.ndarray, cells: np.ndarray) -> ExpansionArrays:
        """`expand` with only the cells flagged in `cells` (one per pair of
        cards, row-major per state, as `expand` lists them) resolved; the
        others have no outcomes. Following play resolves only the pairs both
        strategies play, about a fifth of them."""
        from .transitions import expand_codes

        return ExpansionArrays(*expand_codes(self.tables, codes, cells))

    def progress_rank(self, codes: np.ndarray) -> np.ndarray:
        """A number no turn ever lowers: Health lost and moves made by both
        players, then which bonus cards each owns (in hand or resting).

        Health never comes back and pawns never go back, so play can only
        circle among positions with the same Health and pawns. Between moves
        a player's bonus cards stay theirs (a played one comes back to hand
        from the rest zone like any other), so positions owning different
        bonus cards never meet either; ordering them arbitrarily keeps each
        rank small. The solver takes ranks from the highest down."""
        radix = dict(self.codec.radices)
        (moved1, owned1), (moved2, owned2) = self._progress_by_seat(codes)
        # Unordered, so that a position and its seat-swapped twin share a rank.
        return ((moved1 + moved2) * radix["bonus"] + np.minimum(owned1, owned2)) * radix["bonus"] + np.maximum(owned1, owned2)

    def seat_order(self, codes: np.ndarray) -> np.ndarray:
        """-1, 0 or 1 as player 1's progress (Health lost, moves made, bonus
        cards owned) is below, equal to or above player 2's. No turn that
        keeps the progress rank changes it (each side's progress is then
        unchanged), and swapping the seats negates it: positions of order 0
        are the few whose seat-swapped twin can share a component."""
        radix = dict(self.codec.radices)
        (moved1, owned1), (moved2, owned2) = self._progress_by_seat(codes)
        return np.sign((moved1 - moved2) * radix["bonus"] + (owned1 - owned2)).astype(np.int8)

    def _progress_by_seat(self, codes: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per seat: Health lost and moves made as one number, and the bonus cards owned as one."""
        codes = np.asarray(codes, dtype=np.int64)
        radix = dict(self.codec.radices)
        below_progress = radix["rest"] * radix["bonus"]
        below_health = below_progress * radix["progress"] * radix["disc"] * radix["battery"]
        seats = []
        for player in (codes // self.codec.players, codes % self.codec.players):
            lost = radix["health"] - 1 - player // below_health
            moves = (player // below_progress) % radix["progress"]
            rest = (player // radix["bonus"]) % radix["rest"]
            seats.append((lost * (2 * radix["progress"]) + moves, player % radix["bonus"] + self._resting_bonus_stride[rest]))
        return seats

    @functools.cached_property
    def _resting_bonus_stride(self) -> np.ndarray:
        """By rest code: what the bonus card resting there adds to its owner's bonus digit (0 if none)."""
        t = self.tables
        stride = np.zeros(len(t.rest_card), np.int64)
        for rest, card in enumerate(t.rest_card):
            if card >= 0 and t.card_kind[card] >= 0:
                stride[rest] = int(np.prod(self.codec.bonus_radix[t.card_kind[card] + 1 :], dtype=np.int64))
        return stride

    def swap(self, codes: np.ndarray) -> np.ndarray | None:
        """The seat-swapped codes; None where a one-seat key makes the seats
        play by different numbers: the game is then not symmetric between
        them, and is solved unfolded, as a restricted game is. (One-seat start
        keys change no turn: the game stays symmetric, its start is not its
        own twin, and the solver folds only from starts that are.)"""
        if not self.rules.seats_play_alike:
            return None
        players = self.codec.players
        codes = np.asarray(codes, dtype=np.int64)
        return (codes % players) * players + codes // players


class ReferenceChargeSparkGame(ChargeSparkGame):
    """The same game expanded by the readable `resolve_turn`: slow, the reference."""

    def expand(self, codes: np.ndarray) -> ExpansionArrays:
        row_count, row_actions, col_count, col_actions = [], [], [], []
        out_count, out_next, out_prob = [], [], []
        for code in np.asarray(codes, dtype=np.int64):
            position = self.codec.decode(int(code))
            rows = legal_cards(self.rules, position.p1, 0)
            cols = legal_cards(self.rules, position.p2, 1)
            row_count.append(len(rows))
            col_count.append(len(cols))
            row_actions.extend(rows)
            col_actions.extend(cols)
            for card1 in rows:
                for card2 in cols:
                    outcomes = resolve_turn(self.rules, position, card1, card2)
                    out_count.append(len(outcomes))
                    for probability, result in outcomes:
                        out_prob.append(float(probability))
                        if isinstance(result, Winner):
                            out_next.append(-1 - result.value)
                        else:
                            out_next.append(self.codec.encode(result))
        as_int = lambda xs: np.array(xs, dtype=np.int64)  # noqa: E731
        return ExpansionArrays(
            as_int(row_count), as_int(row_actions), as_int(col_count), as_int(col_actions),
            as_int(out_count), as_int(out_next), np.array(out_prob, dtype=np.float64),
        )
