"""One turn of Charge & Spark, written from the spec's tables.

`resolve_turn` is the readable reference: every rule of a turn appears once,
in the order the spec gives it. Each player pays, deals and gains by its own
seat's numbers (`RuleSet.seat`): a one-seat key changes that player's cards only. The compiled transition kernel in
`transitions.py` reuses `card_interaction` and is checked against
`resolve_turn` state by state.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from enum import Enum
from fractions import Fraction

from .cards import Card
from .config import RuleSet, SeatRules
from .state import PlayerState, Position, RestCard


class IllegalCardError(ValueError):
    """A card that its player may not play in this position."""


KNOCK_OUT, MOON = "knock-out", "moon"  # the two ways to win (`Winner.kind`)


class Winner(Enum):
    """How a game ended: who won, and how (the value is the terminal outcome's index)."""

    P1_KNOCKOUT = 0
    """Player 2's Health reached 0."""
    P1_MOON = 1
    """Player 1's pawn reached the moon."""
    P2_KNOCKOUT = 2
    """Player 1's Health reached 0."""
    P2_MOON = 3
    """Player 2's pawn reached the moon."""

    @property
    def seat(self) -> int:
        """0 if player 1 won, 1 if player 2 did."""
        return self.value // 2

    @property
    def kind(self) -> str:
        """How the game was won: KNOCK_OUT or MOON."""
        return KNOCK_OUT if self.value % 2 == 0 else MOON

    @property
    def swapped(self) -> Winner:
        """The same win by the other seat."""
        return Winner((self.value + 2) % 4)


@dataclass(frozen=True)
class Interaction:
    """What a pair of effective cards does to one player (`self`) this turn."""

    damage_taken: int
    move_cancelled: bool
    battery_gain: int
    disc_gain: int


def seat_numbers(rules: RuleSet, seat: int | None) -> SeatRules:
    """The numbers player `seat + 1` plays by. `seat` may be None only where both
    seats' cards cost, deal and do the same (a ValueError otherwise: the answer
    would be a guess); its start keys are then P1's."""
    if seat is None:
        if not rules.seats_play_alike:
            raise ValueError("these rules give the two players different numbers: say which seat (0: P1, 1: P2)")
        seat = 0
    return rules.seat(seat)


def legal_cards(rules: RuleSet, player: PlayerState, seat: int | None = None) -> tuple[Card, ...]:
    """Cards in `player`'s hand whose cost (player `seat + 1`'s) they can pay, each card once, in card order."""
    numbers = seat_numbers(rules, seat)
    playable = []
    for card in sorted(set(player.hand())):
        battery, disc = numbers.cost(card)
        if player.battery >= battery and player.disc >= disc:
            playable.append(card)
    return tuple(playable)


def effective_card(player: PlayerState, card: Card) -> Card | None:
    """What `card` acts as: Copy acts as its player's rest-zone card (None: no effect)."""
    if card is not Card.COPY:
        return card
    return player.rest.acts_as if player.rest is not None else None


def attack_damage(numbers: SeatRules, effective: Card | None) -> int | None:
    """The attack strength of an effective card played by the seat whose `numbers`
    these are, or None if it is not an attack."""
    if effective is None or not effective.is_attack:
        return None
    return numbers.damage_of(effective)


def damage_taken(rules: RuleSet, mine: Card | None, theirs: Card | None, seat: int | None = None) -> int:
    """Damage I (player `seat + 1`) take this turn (spec: "Attacks meeting each
    other and defences"). Each card acts by its player's numbers: my attack's
    strength is my damage, a Counter reflects and a Barrier reduces by its own player's."""
    me, them = seat_numbers(rules, seat), seat_numbers(rules, None if seat is None else 1 - seat)
    my_attack = attack_damage(me, mine)
    their_attack = attack_damage(them, theirs)
    if their_attack is None:
        # Only my attack can hurt me: reflected by their Counter.
        if my_attack is not None and theirs is Card.COUNTER:
            return them.counter_reflect
        return 0
    if my_attack is not None:
        # Both attack: the weaker attack loses; equal strength is null.
        if my_attack >= their_attack:
            return 0
        return their_attack if rules.clash == "stronger" else their_attack - my_attack
    if mine is Card.COUNTER:
        return 0
    if mine is Card.BARRIER:
        return max(0, their_attack - me.barrier_reduce)
    return their_attack


def tile_gain(numbers: SeatRules, mine: Card | None) -> tuple[int, int]:
    """(Battery, Disc) turned face up by my effective card (I play by `numbers`), before the tile caps."""
    if mine is Card.CHARGE:
        return (1, 0)
    if mine in (Card.BARRIER, Card.TRAP):
        return (0, 1)
    if mine is Card.RECOVERY:
        return (1, 1) if numbers.recovery == "battery+disc" else (1, 0)
    return (0, 0)


def card_interaction(rules: RuleSet, mine: Card | None, theirs: Card | None, seat: int | None = None) -> Interaction:
    """Everything the pair of effective cards does to me (player `seat + 1`), except reaching the moon."""
    them = seat_numbers(rules, None if seat is None else 1 - seat)
    battery, disc = tile_gain(seat_numbers(rules, seat), mine)
    cancelled = mine is Card.MOVE and (
        attack_damage(them, theirs) is not None or theirs is Card.TRAP
    )
    return Interaction(damage_taken(rules, mine, theirs, seat), cancelled, battery, disc)


def _played(player: PlayerState, card: Card, acts_as: Card | None) -> PlayerState:
    """The played card goes to the rest zone; the card there returns to hand."""
    bonus = list(player.bonus)
    if card.is_bonus:
        bonus.remove(card)
    if player.rest is not None and player.rest.card.is_bonus:
        bonus.append(player.rest.card)  # a Copy returns to hand as a plain Copy
    rest = RestCard(Card.COPY, acts_as) if card is Card.COPY else RestCard(card)
    return replace(player, rest=rest, bonus=tuple(bonus))


def _bonus_draws(
    pile: Counter[Card], draws: tuple[bool, bool], contested_draw: str
) -> list[tuple[Fraction, tuple[Card | None, Card | None]]]:
    """Chance outcomes of this turn's bonus draws: (probability, (P1's card, P2's card))."""
    total = sum(pile.values())
    if total == 0 or not any(draws):
        return [(Fraction(1), (None, None))]
    if draws[0] != draws[1]:
        drawn = [(Fraction(count, total), card) for card, count in sorted(pile.items())]
        return [(p, (card, None) if draws[0] else (None, card)) for p, card in drawn]
    if total == 1:
        (card,) = pile
        if contested_draw == "nobody":
            return [(Fraction(1), (None, None))]
        return [(Fraction(1, 2), (card, None)), (Fraction(1, 2), (None, card))]
    outcomes = []
    for first, first_count in sorted(pile.items()):
        rest = pile.copy()
        rest[first] -= 1
        for second, second_count in sorted((+rest).items()):
            p = Fraction(first_count, total) * Fraction(second_count, total - 1)
            outcomes.append((p, (first, second)))
    return outcomes


def resolve_turn(
    rules: RuleSet, position: Position, card1: Card, card2: Card
) -> list[tuple[Fraction, Position | Winner]]:
    """The chance outcomes of one turn: (probability, next position or winner)."""
    players = (position.p1, position.p2)
    cards = (card1, card2)
    for seat, (player, card) in enumerate(zip(players, cards)):
        if card not in legal_cards(rules, player, seat):
            raise IllegalCardError(f"player {seat + 1} cannot play {card.label} here")

    # 2. Costs are paid at once, before any effect (each player pays its own seat's costs).
    paid = []
    for seat, (player, card) in enumerate(zip(players, cards)):
        battery, disc = rules.seat(seat).cost(card)
        paid.append(replace(player, battery=player.battery - battery, disc=player.disc - disc))
    acts_as = [effective_card(player, card) for player, card in zip(players, cards)]

    # 3. Effects resolve simultaneously.
    after = []
    moves = []
    for seat in (0, 1):
        me = card_interaction(rules, acts_as[seat], acts_as[1 - seat], seat)
        player = paid[seat]
        player = replace(
            player,
            health=max(0, player.health - me.damage_taken),
            battery=min(rules.battery_tiles, player.battery + me.battery_gain),
            disc=min(rules.disc_tiles, player.disc + me.disc_gain),
        )
        moves.append(acts_as[seat] is Card.MOVE and not me.move_cancelled)
        after.append(player)
    reaches_moon = [
        moves[seat] and after[seat].progress + 1 == rules.moves_to_moon for seat in (0, 1)
    ]
    if all(reaches_moon):  # double goal: both moves are cancelled
        moves = [False, False]
        reaches_moon = [False, False]

    # 5. Knock-out or the moon ends the game (at most one of these can happen).
    if after[1].health == 0:
        return [(Fraction(1), Winner.P1_KNOCKOUT)]
    if reaches_moon[0]:
        return [(Fraction(1), Winner.P1_MOON)]
    if after[0].health == 0:
        return [(Fraction(1), Winner.P2_KNOCKOUT)]
    if reaches_moon[1]:
        return [(Fraction(1), Winner.P2_MOON)]

    # 4. Played cards to the rest zone; the pawn moves; a star draws a bonus card.
    after = [
        replace(_played(player, card, acts), progress=player.progress + moved)
        for player, card, acts, moved in zip(after, cards, acts_as, moves)
    ]
    draws = (
        moves[0] and rules.is_star(after[0].progress),
        moves[1] and rules.is_star(after[1].progress),
    )
    outcomes: list[tuple[Fraction, Position | Winner]] = []
    for p, drawn in _bonus_draws(position.bonus_pile(rules), draws, rules.contested_draw):
        nxt = [
            replace(player, bonus=player.bonus + (card,)) if card is not None else player
            for player, card in zip(after, drawn)
        ]
        outcomes.append((p, Position(nxt[0], nxt[1])))
    return outcomes

