"""The wild game for player 1: a perfect-information relaxation of hidden
bonus cards whose value bounds P1's hidden value from above.

H (here P1) holds bonus cards that N (P2) has not seen. U, the multiset of
cards N has not seen (the pile and H's unseen cards), follows from public
counting alone. A wild state is the public state, N's whole hand (shown: that
only helps H), H's seen cards, and how many unseen cards H holds. In it:

- (a) H may play an unseen card as any card still possible (any kind in U),
  declaring it then; a kind H also holds seen is played as the seen copy,
  as the hidden game counts it (`hidden.known_after_turn`);
- (b) H's own draw is H's free choice: the card joins H's unseen count and U
  is unchanged, since N has not seen it;
- (c) N's draw from the pile: H first picks secretly which possible cards it
  holds (they stay out of the draw), the draw comes from the rest of U, and
  only N's card is public. Here H picks once the turn's cards are shown, in a
  *pending* state between the turn and N's draw (N has no move there): a
  little more than (c) grants, so the bound stays sound, slightly looser only
  where H would keep a different card out against Move than against Copy as
  Move.

Why it is an upper bound: N's wild strategy reads only what N knows in the
hidden game, and each type of H is emulated by the wild strategy that keeps
its true cards out of N's draws and declares them when played. Two tempting
variants are unsound (tests/test_wild_relaxation.py shows them fall below the
hidden value): committing H's cards visibly, and drawing N's card uniformly
from U while H stays uncommitted.

The rules are symmetric between the seats, so P2's wild game is this one seen
from the seat-swapped position: one table serves both seats.
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from .cards import Card
from .config import RulesError, RuleSet, differences_from_default
from .game import ChargeSparkGame, ExpansionArrays
from .hidden import drawn_cards, known_after_turn
from .state import Position
from .turn import Winner, legal_cards, resolve_turn

if TYPE_CHECKING:  # the kernels' module imports numba: loaded when a batch is expanded
    from .wild_expansion import WildTables


@dataclass(frozen=True, order=True)
class WildState:
    position: Position
    """The public position with P1's hand holding only its seen bonus cards (its unseen ones count as pile)."""
    unseen: int
    """How many unseen bonus cards P1 holds."""
    pending: bool = False
    """N (P2) has landed on a star this turn and its draw is still to come (H picks what it keeps out)."""


def wild_state_of(position: Position, p1_seen: tuple[Card, ...]) -> WildState:
    """P1's wild state at a position where P2 has seen `p1_seen` of P1's bonus cards in hand."""
    unseen = Counter(position.p1.bonus)
    unseen.subtract(p1_seen)
    if any(count < 0 for count in unseen.values()):
        raise ValueError(f"seen cards {[c.label for c in p1_seen]} are not all in P1's hand")
    return WildState(Position(replace(position.p1, bonus=tuple(sorted(p1_seen))), position.p2), sum(unseen.values()))


def sub_multisets(cards: tuple[Card, ...], size: int) -> list[tuple[Card, ...]]:
    """The distinct multisets of `size` cards taken from `cards`, sorted."""
    return sorted(set(itertools.combinations(sorted(cards), size)))


class WildGame:
    """P1's wild game under one rule set, through the solver's protocol.

    Actions are the cards (ids as `Card`), then one *keeps* action per
    multiset of bonus cards H may keep out of N's draw, then N's only action
    in a pending state. Terminal outcomes and payoffs are the open game's."""

    terminal_labels = ChargeSparkGame.terminal_labels
    terminal_winners = ChargeSparkGame.terminal_winners
    terminal_kinds = ChargeSparkGame.terminal_kinds
    terminal_payoff = ChargeSparkGame.terminal_payoff
    unending_payoff = ChargeSparkGame.unending_payoff

    def __init__(self, rules: RuleSet) -> None:
        if not rules.seats_play_alike:
            # P2's bounds are read off the seat-swapped position: that needs both seats to play alike.
            raise RulesError("the wild game (hidden cards' bounds) needs cards that cost, deal and do the same "
                             "for both players; these rules have one-seat keys: "
                             + " ".join(k for k in differences_from_default(rules) if k.startswith(("p1.", "p2."))))
        self.rules = rules
        self.open = ChargeSparkGame(rules)
        self.max_unseen = len(rules.bonus_cards)
        self.keeps: list[tuple[Card, ...]] = sorted(
            {kept for size in range(1, self.max_unseen + 1) for kept in sub_multisets(rules.bonus_cards, size)}
        )
        self._keep_action = {kept: len(Card) + k for k, kept in enumerate(self.keeps)}
        self.draw_action = len(Card) + len(self.keeps)
        self.action_labels = (
            tuple(card.label for card in Card)
            + tuple("keeps " + "+".join(card.label for card in kept) for kept in self.keeps)
            + ("draws",)
        )

    # --- encoding -------------------------------------------------------------

    def encode(self, state: WildState) -> int:
        return (self.open.encode(state.position) * (self.max_unseen + 1) + state.unseen) * 2 + int(state.pending)

    def decode(self, code: int) -> WildState:
        rest, pending = divmod(int(code), 2)
        base, unseen = divmod(rest, self.max_unseen + 1)
        return WildState(self.open.decode(base), unseen, bool(pending))

    def swap(self, codes: np.ndarray) -> None:
        return None  # H is P1: the game is not symmetric between the seats

    # --- play -----------------------------------------------------------------

    def unseen_possible(self, state: WildState) -> tuple[Card, ...]:
        """U: the bonus cards N has not seen (the pile of the wild state's position)."""
        return tuple(sorted(state.position.bonus_pile(self.rules).elements()))

    def h_cards(self, state: WildState) -> tuple[Card, ...]:
        """H's legal cards: its seen hand's, and any kind still possible while it holds an unseen card."""
        p1 = state.position.p1
        if state.unseen:
            p1 = replace(p1, bonus=p1.bonus + tuple(sorted(set(self.unseen_possible(state)) - set(p1.bonus))))
        return legal_cards(self.rules, p1)

    def moves(self, state: WildState) -> tuple[list[int], list[int], list[list[tuple[float, int]]]]:
        """(H's actions, N's actions, per cell in row-major order: [(probability, next code or -1 - outcome)]).
        The readable reference for `expand` (`ReferenceWildGame`), one state at a time."""
        if state.pending:
            return self._pending_moves(state)
        rows = [int(card) for card in self.h_cards(state)]
        cols = [int(card) for card in legal_cards(self.rules, state.position.p2)]
        cells = self._turns(state, rows, cols)
        return rows, cols, cells

    def _turns(self, state: WildState, rows: list[int], cols: list[int]) -> list[list[tuple[float, int]]]:
        """Every cell's outcomes, the turns played by the open game's compiled expansion
        from the concrete positions (`_concrete`), then read as wild states."""
        befores = [self._concrete(state, Card(r)) for r in rows]
        codes = sorted({self.open.encode(before) for before in befores})
        e = self.open.expand(np.array(codes, dtype=np.int64))
        row_at = np.concatenate(([0], np.cumsum(e.row_count)))
        col_at = np.concatenate(([0], np.cumsum(e.col_count)))
        cell_at = np.concatenate(([0], np.cumsum(e.row_count * e.col_count)))
        out_at = np.concatenate(([0], np.cumsum(e.out_count)))
        seen = tuple(sorted(state.position.p1.bonus))
        cells = []
        for card1, before in zip(rows, befores):
            k = codes.index(self.open.encode(before))
            open_rows = e.row_actions[row_at[k] : row_at[k + 1]].tolist()
            open_cols = e.col_actions[col_at[k] : col_at[k + 1]].tolist()
            for card2 in cols:
                cell = cell_at[k] + open_rows.index(card1) * len(open_cols) + open_cols.index(card2)
                outcomes: dict[int, float] = {}
                for o in range(out_at[cell], out_at[cell + 1]):
                    nxt = int(e.out_next[o])
                    if nxt >= 0:
                        nxt = self.encode(self._after(before, seen, (Card(card1), Card(card2)), self.open.decode(nxt)))
                    outcomes[nxt] = outcomes.get(nxt, 0.0) + float(e.out_prob[o])
                cells.append([(p, n) for n, p in sorted(outcomes.items())])
        return cells

    def _concrete(self, state: WildState, card: Card) -> Position:
        """A position the hidden game could be in: H's unseen cards made concrete, holding
        `card` if H plays it as an unseen one. Only N's draw could tell the choice, and
        N's draw is taken from U in a pending state, not from this position's pile."""
        p1 = state.position.p1
        possible = list(self.unseen_possible(state))
        held: list[Card] = []
        if state.unseen and card.is_bonus and card not in p1.bonus:
            possible.remove(card)
            held.append(card)
        held += possible[: state.unseen - len(held)]
        return Position(replace(p1, bonus=p1.bonus + tuple(held)), state.position.p2)

    def reference_turn(self, state: WildState, card1: Card, card2: Card) -> list[tuple[float, int]]:
        """One cell's outcomes by the readable `resolve_turn`: slow, the reference for `_turns`."""
        before = self._concrete(state, card1)
        seen = tuple(sorted(state.position.p1.bonus))
        outcomes: dict[int, float] = {}
        for probability, result in resolve_turn(self.rules, before, card1, card2):
            if isinstance(result, Winner):
                nxt = -1 - result.value
            else:
                nxt = self.encode(self._after(before, seen, (card1, card2), result))
            outcomes[nxt] = outcomes.get(nxt, 0.0) + float(probability)
        return [(p, n) for n, p in sorted(outcomes.items())]

    def _after(self, before: Position, seen: tuple[Card, ...], cards: tuple[Card, Card], after: Position) -> WildState:
        """The wild state after a turn from the concrete `before` to `after`: H's draw
        joins its unseen count; N's draw waits in a pending state where H's choice
        of what it holds can change its odds."""
        p1_seen = known_after_turn(before, (seen, ()), cards, after)[0]
        _, n_drew = drawn_cards(before, cards, after)
        state = wild_state_of(after, p1_seen)
        if n_drew is None:
            return state
        p2 = list(after.p2.bonus)
        p2.remove(n_drew)
        undrawn = WildState(Position(state.position.p1, replace(after.p2, bonus=tuple(p2))), state.unseen, pending=True)
        if state.unseen and len(set(self.unseen_possible(undrawn))) > 1:
            return undrawn
        return state  # nothing H holds can change N's odds: the draw stands as dealt

    def _pending_moves(self, state: WildState) -> tuple[list[int], list[int], list[list[tuple[float, int]]]]:
        possible = self.unseen_possible(state)
        rows, cells = [], []
        for kept in sub_multisets(possible, state.unseen):
            rows.append(self._keep_action[kept])
            pile = Counter(possible)
            pile.subtract(kept)
            total = sum(pile.values())
            cell = []
            for card, count in sorted((+pile).items()):
                p2 = state.position.p2
                drawn = Position(state.position.p1, replace(p2, bonus=p2.bonus + (card,)))
                cell.append((count / total, self.encode(WildState(drawn, state.unseen))))
            cells.append(cell)
        return rows, [self.draw_action], cells

    def expand(self, codes: np.ndarray) -> ExpansionArrays:
        """`moves` of every code, compiled (`wild_expansion`): the same actions, cells and
        outcomes in the same order. Nothing is kept between calls."""
        from .wild_expansion import expand_wild_codes  # numba loads only when a batch is expanded

        return ExpansionArrays(*expand_wild_codes(self._tables, codes))

    @functools.cached_property
    def _tables(self) -> WildTables:
        from .wild_expansion import WildTables

        keep_action = np.full(self.open.codec.bonus_space, -1, dtype=np.int64)
        for kept, action in self._keep_action.items():
            keep_action[self.open.codec.encode_bonus(kept)] = action
        return WildTables(self.open.tables, self.max_unseen, keep_action, self.draw_action)

    # --- order for a rank-by-rank solve -----------------------------------------

    def progress_rank(self, codes: np.ndarray) -> np.ndarray:
        """A number no transition lowers: the open game's Health lost and moves made,
        then H's unseen cards played (only a move's draw adds one), then a pending
        draw before its result, then the bonus cards each side owns in the open
        encoding (H's seen and resting ones), which nothing else changes."""
        codes = np.asarray(codes, dtype=np.int64)
        rest, pending = np.divmod(codes, 2)
        base, unseen = np.divmod(rest, self.max_unseen + 1)
        (moved1, owned1), (moved2, owned2) = self.open._progress_by_seat(base)
        radix = self.open.codec.bonus_space
        step = ((moved1 + moved2) * (self.max_unseen + 1) + (self.max_unseen - unseen)) * 2 + (1 - pending)
        return (step * radix + owned1) * radix + owned2



class ReferenceWildGame(WildGame):
    """The same game expanded state by state by `WildGame.moves`: slow, the reference for `expand`."""

    def expand(self, codes: np.ndarray) -> ExpansionArrays:
        row_count, row_actions, col_count, col_actions = [], [], [], []
        out_count, out_next, out_prob = [], [], []
        for code in np.asarray(codes, dtype=np.int64):
            rows, cols, cells = self.moves(self.decode(int(code)))
            row_count.append(len(rows))
            col_count.append(len(cols))
            row_actions += rows
            col_actions += cols
            for cell in cells:
                out_count.append(len(cell))
                out_prob += [p for p, _ in cell]
                out_next += [n for _, n in cell]
        as_int = lambda xs: np.array(xs, dtype=np.int64)  # noqa: E731
        return ExpansionArrays(
            as_int(row_count), as_int(row_actions), as_int(col_count), as_int(col_actions),
            as_int(out_count), as_int(out_next), np.array(out_prob, dtype=np.float64),
        )
