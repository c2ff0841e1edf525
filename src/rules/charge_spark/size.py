"""How many states are reachable from a position: a quick estimate, before enumerating.

`estimate_reachable(rules, position)` counts the pairs of one-player states
that could stand side by side. Each player is followed alone, the opponent
free to play any card it could ever pay for at any time; every one-player
state remembers which opponent cards the last turn could have met, and
whether a missed bonus draw means the two players hold (nearly) the whole
pile. A pair counts when each side's last opponent card is the card the
other side's rest zone shows and their bonus cards fit in the pile. Every
condition is one that reachable states meet, so the estimate is an upper
bound; what it misses are longer-range correlations between the players.

Health enters only as a cap on the damage a player has taken, and states are
followed in layers of damage taken: once enough consecutive layers are alike
every later one is too, so a large `health` costs no more than a small one.
(If the layers never settle, it stops after `MAX_DAMAGE_LAYERS` and counts
only those: an undercount, never an overcount.)

How close the estimate comes to exact enumeration, and how long it takes,
is measured in docs/performance.md ("The size estimate").
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from .cards import BASE_CARDS, Card
from .config import RuleSet
from .state import REST_PLAIN_COPY, PlayerState, Position, initial_position, rest_code, rest_from_code

NO_CARD = len(Card)
"""Index of "no effect" (a Copy that copies nothing) among effective cards."""
MAX_DAMAGE_LAYERS = 64
"""Damage layers followed at most (they settle long before on every rule set tried)."""

# One player's state but for Health: (battery, disc, progress, rest code, bonus cards in hand).
Solo = tuple[int, int, int, int, tuple[Card, ...]]


def _index(card: Card | None) -> int:
    return NO_CARD if card is None else int(card)


def _opponent_cards(rules: RuleSet, seat: int) -> list[Card | None]:
    """Every effective card player `seat + 1` might play: a card its tiles can
    pay for at its seat's costs (a Copy acts as such a card, or as nothing)."""
    kinds = sorted(set(rules.bonus_cards))
    cost = rules.seat(seat).cost
    cards: list[Card | None] = [
        card for card in (*BASE_CARDS, *kinds)
        if card is not Card.COPY
        and cost(card)[0] <= rules.battery_tiles and cost(card)[1] <= rules.disc_tiles
    ]
    if Card.COPY in kinds:
        cards.append(None)
    return cards


class _SoloPlay:
    """Player `seat + 1`'s moves, the opponent playing anything: tables built once per rule set and seat."""

    def __init__(self, rules: RuleSet, seat: int = 0) -> None:
        from .turn import card_interaction  # the readable rules, read once into tables

        self.rules = rules
        self.seat = seat
        self.kinds = sorted(set(rules.bonus_cards))
        self.total = Counter(rules.bonus_cards)
        opponent = _opponent_cards(rules, 1 - seat)
        # Per effective card of mine: the opponent's cards grouped by what they do to me,
        # as (damage taken, move cancelled, bit set of those cards).
        self.meets: dict[int, list[tuple[int, bool, int]]] = {}
        self.gain: dict[int, tuple[int, int]] = {}
        for mine in (*Card, None):
            groups: dict[tuple[int, bool], int] = {}
            for theirs in opponent:
                effect = card_interaction(rules, mine, theirs, seat)
                outcome = (effect.damage_taken, effect.move_cancelled)
                groups[outcome] = groups.get(outcome, 0) | 1 << _index(theirs)
            self.meets[_index(mine)] = [(d, c, tags) for (d, c), tags in groups.items()]
            effect = card_interaction(rules, mine, None, seat)
            self.gain[_index(mine)] = (effect.battery_gain, effect.disc_gain)
        # Both pawns reaching the moon cancel each other's Move.
        self.both_at_moon = (0, True, 1 << Card.MOVE) if Card.MOVE in opponent else None
        self.max_damage = max((d for outcomes in self.meets.values() for d, _, _ in outcomes), default=0)
        self._plays: dict[tuple[int, tuple[Card, ...]], list[tuple]] = {}

    def plays(self, rest: int, hand: tuple[Card, ...]) -> list[tuple]:
        """(battery paid, disc paid, effective card, new rest code, new bonus hand) per card in hand."""
        known = self._plays.get((rest, hand))
        if known is not None:
            return known
        resting = rest_from_code(rest)
        in_rest = resting.card if resting is not None else None
        plays = []
        for card in [c for c in BASE_CARDS if c is not in_rest] + sorted(set(hand)):
            pay_battery, pay_disc = self.rules.seat(self.seat).cost(card)
            acts = card if card is not Card.COPY else (resting.acts_as if resting is not None else None)
            new_hand = list(hand)
            if card.is_bonus:
                new_hand.remove(card)
            if in_rest is not None and in_rest.is_bonus:
                new_hand.append(in_rest)  # a Copy comes back plain
            new_rest = (REST_PLAIN_COPY + 1 + _index(acts) if acts is not None else REST_PLAIN_COPY) \
                if card is Card.COPY else 1 + card
            plays.append((pay_battery, pay_disc, _index(acts), new_rest, tuple(sorted(new_hand))))
        self._plays[(rest, hand)] = plays
        return plays


# A layer: every one-player state with this much damage taken, with
# (bit set of the opponent cards its last turn could have met, fewest bonus cards both must hold).
Layer = dict[Solo, tuple[int, int]]


def _damage_layers(
    solo: _SoloPlay, start: PlayerState, others_most_held: int, health: int,
) -> tuple[list[Layer], bool]:
    """The layers of damage 0 .. health - 1 reached from `start` (the start itself
    only if play returns to it), and whether they settled early: then the last
    one stands for all the rest."""
    rules = solo.rules
    moon = rules.moves_to_moon
    pile_size = len(rules.bonus_cards)
    slack = 1 if rules.contested_draw == "nobody" else 0  # a contested last card may stay in the pile
    root: Solo = (start.battery, start.disc, start.progress, rest_code(start.rest), start.bonus)
    pending: dict[int, Layer] = {}  # damage: states entering that layer from below
    layers: list[Layer] = []
    for damage_taken in range(min(health, MAX_DAMAGE_LAYERS)):
        layer: Layer = pending.pop(damage_taken, {})
        frontier = list(layer)
        if damage_taken == 0:
            frontier.append(root)
        floors = {state: floor for state, (_, floor) in layer.items()}
        floors.setdefault(root, 0)

        def reach(target: Layer, state: Solo, seen_by: int, floor: int, follow: list | None) -> None:
            before = target.get(state)
            if before is None:
                target[state] = (seen_by, floor)
            else:
                target[state] = (before[0] | seen_by, min(before[1], floor))
            if follow is not None and (before is None or floor < floors[state]):  # noqa: B023 - called within its iteration
                floors[state] = floor  # noqa: B023 - first seen, or by a less constrained way: follow it (again)
                follow.append(state)

        while frontier:
            found: list[Solo] = []
            for state in frontier:
                battery, disc, progress, rest, hand = state
                floor = floors[state]
                held = Counter(hand)
                resting = rest_from_code(rest)
                if resting is not None and resting.card.is_bonus:
                    held[resting.card] += 1
                draws = [kind for kind in solo.kinds if held[kind] < solo.total[kind]]
                # The pile can be empty only if both players together could hold all of it.
                may_miss = not draws or sum(held.values()) + others_most_held + slack >= pile_size
                for pay_battery, pay_disc, acts, new_rest, new_hand in solo.plays(rest, hand):
                    if battery < pay_battery or disc < pay_disc:
                        continue
                    new_battery = min(rules.battery_tiles, battery - pay_battery + solo.gain[acts][0])
                    new_disc = min(rules.disc_tiles, disc - pay_disc + solo.gain[acts][1])
                    outcomes = solo.meets[acts]
                    if acts == Card.MOVE and progress + 1 == moon and solo.both_at_moon:
                        outcomes = [*outcomes, solo.both_at_moon]
                    for damage, cancelled, seen_by in outcomes:
                        if damage_taken + damage >= health:
                            continue  # knocked out
                        moved = acts == Card.MOVE and not cancelled
                        if moved and progress + 1 == moon:
                            continue  # reached the moon
                        hands = [(new_hand, floor)]
                        if moved and rules.is_star(progress + 1):
                            # A missed draw means the pile was (nearly) empty: from then
                            # on the two players hold all of it (but the slack), for good.
                            missed = [(new_hand, max(floor, pile_size - slack))] if may_miss else []
                            hands = missed + [(tuple(sorted((*new_hand, k))), floor) for k in draws]
                        for drawn_hand, new_floor in hands:
                            after = (new_battery, new_disc, progress + moved, new_rest, drawn_hand)
                            if damage == 0:
                                reach(layer, after, seen_by, new_floor, found)
                            else:
                                reach(pending.setdefault(damage_taken + damage, {}), after, seen_by, new_floor, None)
            frontier = found
        layers.append(layer)
        if not pending:
            break  # nothing takes more damage from here
        recent = layers[1:][-(solo.max_damage + 1):]
        if len(recent) == solo.max_damage + 1 and all(other == layer for other in recent):
            # Each layer follows from the max_damage before it: all later layers are this one.
            return layers, True
    return layers, False


def estimate_reachable(rules: RuleSet, position: Position | None = None) -> float:
    """About how many non-terminal states are reachable from `position` (default:
    the start) under `rules`, never fewer: see the module text for how and how well."""
    position = initial_position(rules) if position is None else position
    solos = [_SoloPlay(rules, 0), _SoloPlay(rules, 1) if not rules.seats_play_alike else None]

    def most_held(player: PlayerState) -> int:
        ahead = sum(rules.is_star(q) for q in range(player.progress + 1, rules.moves_to_moon))
        return sum(player.held_bonus().values()) + ahead

    def counts_for(player: PlayerState, others_most_held: int, seat: int) -> dict[tuple[int, int, tuple, int], int]:
        """(own rest's effective card, opponent card last met, bonus held, floor): how many states."""
        layers, settled = _damage_layers(solos[seat] or solos[0], player, others_most_held, player.health)
        weights = [1] * len(layers)
        if settled:
            weights[-1] = player.health - len(layers) + 1  # the settled layer, for each damage left
        counts: dict[tuple[int, int, tuple, int], int] = {}
        for layer, weight in zip(layers, weights):
            for (_, _, _, rest, hand), (seen_by, floor) in layer.items():
                resting = rest_from_code(rest)
                held = tuple(sorted((*hand, resting.card))) if resting is not None and resting.card.is_bonus else hand
                own = _index(resting.acts_as if resting is not None else None)
                for other in range(NO_CARD + 1):
                    if seen_by >> other & 1:
                        key = (own, other, held, floor)
                        counts[key] = counts.get(key, 0) + weight
        return counts

    first = counts_for(position.p1, most_held(position.p2), 0)
    same = position.p2 == position.p1 and rules.seats_play_alike
    second = first if same else counts_for(position.p2, most_held(position.p1), 1)
    return 1.0 + _pairs(first, second, Counter(rules.bonus_cards))


def _pairs(first: dict, second: dict, pile: Counter) -> float:
    """Pairs of one-player states that can stand together: each side last met the
    card the other's rest zone shows, and their bonus cards fit in the pile."""
    holdings = sorted({(held, floor) for counts in (first, second) for (_, _, held, floor) in counts})
    where = {h: i for i, h in enumerate(holdings)}
    fits = np.array([
        [not (Counter(a) + Counter(b) - pile) and len(a) + len(b) >= max(fa, fb) for b, fb in holdings]
        for a, fa in holdings
    ], dtype=float)
    arrays = []
    for counts in (first, second):
        array = np.zeros((NO_CARD + 1, NO_CARD + 1, len(holdings)))
        for (own, other, held, floor), n in counts.items():
            array[own, other, where[held, floor]] = n
        arrays.append(array)
    return float(np.einsum("xyh,hk,yxk->", arrays[0], fits, arrays[1]))
