"""One named test per interaction row and per reading of the spec
(`shared/rules/charge-and-spark.md`), on the readable `resolve_turn`."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from rules.charge_spark.cards import Card
from rules.charge_spark.config import RuleSet
from rules.charge_spark.state import PlayerState, Position, RestCard
from rules.charge_spark.turn import IllegalCardError, Winner, legal_cards, resolve_turn

C = Card
RULES = RuleSet()


def player(h=4, b=2, d=0, p=0, rest=None, bonus=()) -> PlayerState:
    if isinstance(rest, Card):
        rest = RestCard(rest)
    return PlayerState(health=h, battery=b, disc=d, progress=p, rest=rest, bonus=tuple(bonus))


def turn(p1: PlayerState, p2: PlayerState, c1: Card, c2: Card, rules: RuleSet = RULES):
    return resolve_turn(rules, Position(p1, p2), c1, c2)


def only(outcomes) -> Position | Winner:
    assert len(outcomes) == 1 and outcomes[0][0] == 1
    return outcomes[0][1]


# --- the card table ---------------------------------------------------------

def test_charge_adds_one_battery():
    after = only(turn(player(b=1), player(), C.CHARGE, C.BARRIER))
    assert after.p1.battery == 2


def test_charge_not_above_battery_tiles():
    after = only(turn(player(b=4), player(), C.CHARGE, C.BARRIER))
    assert after.p1.battery == 4


def test_spark_costs_one_battery_and_deals_one():
    after = only(turn(player(b=2), player(), C.SPARK, C.CHARGE))
    assert after.p1.battery == 1 and after.p2.health == 3


def test_lightning_costs_two_battery_and_deals_two():
    after = only(turn(player(b=2), player(), C.LIGHTNING, C.CHARGE))
    assert after.p1.battery == 0 and after.p2.health == 2


def test_barrier_adds_one_disc():
    after = only(turn(player(d=1), player(), C.BARRIER, C.CHARGE))
    assert after.p1.disc == 2


def test_counter_costs_two_disc():
    after = only(turn(player(d=3), player(), C.COUNTER, C.CHARGE))
    assert after.p1.disc == 1


def test_move_advances_pawn():
    after = only(turn(player(), player(), C.MOVE, C.CHARGE))
    assert after.p1.progress == 1 and after.p2.progress == 0


def test_ray_costs_one_disc_and_deals_one():
    after = only(turn(player(d=1, bonus=[C.RAY]), player(), C.RAY, C.CHARGE))
    assert after.p1.disc == 0 and after.p2.health == 3


def test_recovery_default_adds_battery_and_disc():
    after = only(turn(player(b=1, d=1, bonus=[C.RECOVERY]), player(), C.RECOVERY, C.CHARGE))
    assert (after.p1.battery, after.p1.disc) == (2, 2)


def test_recovery_battery_variant_adds_battery_only():
    rules = replace(RULES, recovery="battery")
    after = only(turn(player(b=1, d=1, bonus=[C.RECOVERY]), player(), C.RECOVERY, C.CHARGE, rules))
    assert (after.p1.battery, after.p1.disc) == (2, 1)


def test_trap_adds_one_disc():
    after = only(turn(player(bonus=[C.TRAP]), player(), C.TRAP, C.CHARGE))
    assert after.p1.disc == 1


def test_copy_costs_one_battery_and_acts_as_rest_card():
    after = only(turn(player(b=1, rest=C.SPARK, bonus=[C.COPY]), player(), C.COPY, C.CHARGE))
    assert after.p1.battery == 0 and after.p2.health == 3


# --- attacks meeting each other and defences -------------------------------

def test_both_attack_weaker_takes_stronger_damage():
    after = only(turn(player(), player(), C.SPARK, C.LIGHTNING))
    assert after.p1.health == 2 and after.p2.health == 4


def test_both_attack_equal_strength_is_null():
    after = only(turn(player(d=1, bonus=[C.RAY]), player(), C.RAY, C.SPARK))
    assert after.p1.health == 4 and after.p2.health == 4


def test_clash_difference_variant_takes_the_difference():
    rules = replace(RULES, clash="difference")
    after = only(turn(player(), player(), C.SPARK, C.LIGHTNING, rules))
    assert after.p1.health == 3 and after.p2.health == 4


def test_attack_against_barrier_deals_one_less():
    after = only(turn(player(), player(), C.LIGHTNING, C.BARRIER))
    assert after.p2.health == 3 and after.p2.disc == 1


def test_barrier_reduction_not_below_zero():
    after = only(turn(player(), player(), C.SPARK, C.BARRIER))
    assert after.p2.health == 4


def test_attack_against_counter_reflects_two():
    after = only(turn(player(), player(d=2), C.SPARK, C.COUNTER))
    assert after.p1.health == 2 and after.p2.health == 4 and after.p2.disc == 0


def test_attack_against_anything_else_deals_full_damage():
    after = only(turn(player(), player(), C.LIGHTNING, C.CHARGE))
    assert after.p2.health == 2


def test_counter_with_no_attack_does_nothing_but_cost_is_paid():
    after = only(turn(player(d=2), player(), C.COUNTER, C.MOVE))
    assert after.p1.disc == 0 and after.p1.health == 4 and after.p2.progress == 1


def test_barrier_with_no_attack_only_gains_disc():
    after = only(turn(player(), player(), C.BARRIER, C.CHARGE))
    assert after.p1.disc == 1 and after.p1.health == 4


def test_trap_with_no_move_only_gains_disc():
    after = only(turn(player(bonus=[C.TRAP]), player(), C.TRAP, C.CHARGE))
    assert after.p1.disc == 1 and after.p2.battery == 3


# --- Move ------------------------------------------------------------------

def test_move_cancelled_by_attack_and_mover_takes_it():
    after = only(turn(player(), player(), C.MOVE, C.SPARK))
    assert after.p1.progress == 0 and after.p1.health == 3


def test_move_cancelled_by_trap():
    after = only(turn(player(), player(bonus=[C.TRAP]), C.MOVE, C.TRAP))
    assert after.p1.progress == 0 and after.p2.disc == 1


def test_move_onto_star_draws_uniformly_from_pile():
    outcomes = turn(player(p=1), player(), C.MOVE, C.CHARGE)
    assert len(outcomes) == 4
    assert {p for p, _ in outcomes} == {Fraction(1, 4)}
    assert sorted(pos.p1.bonus for _, pos in outcomes) == [(c,) for c in sorted((C.RAY, C.RECOVERY, C.TRAP, C.COPY))]
    assert all(pos.p1.progress == 2 for _, pos in outcomes)


def test_move_onto_star_with_empty_pile_draws_nothing():
    rules = replace(RULES, bonus_cards=())
    after = only(turn(player(p=1), player(), C.MOVE, C.CHARGE, rules))
    assert after.p1.progress == 2 and after.p1.bonus == ()


def test_drawn_card_is_playable_only_from_next_turn():
    outcomes = turn(player(p=1, b=0), player(), C.MOVE, C.CHARGE)
    for _, pos in outcomes:
        drawn = pos.p1.bonus[0]
        assert drawn in pos.p1.hand()  # in hand for the next turn, not played this turn


def test_move_onto_moon_wins():
    assert only(turn(player(p=4), player(), C.MOVE, C.CHARGE)) is Winner.P1_MOON


def test_double_goal_cancels_both_moves():
    after = only(turn(player(p=4), player(p=4), C.MOVE, C.MOVE))
    assert after.p1.progress == 4 and after.p2.progress == 4


def test_one_card_left_contested_draw_coin():
    rules = replace(RULES, bonus_cards=(C.RAY,))
    outcomes = turn(player(p=1), player(p=1), C.MOVE, C.MOVE, rules)
    assert sorted((p, pos.p1.bonus, pos.p2.bonus) for p, pos in outcomes) == [
        (Fraction(1, 2), (), (C.RAY,)),
        (Fraction(1, 2), (C.RAY,), ()),
    ]


def test_one_card_left_contested_draw_nobody():
    rules = replace(RULES, bonus_cards=(C.RAY,), contested_draw="nobody")
    after = only(turn(player(p=1), player(p=1), C.MOVE, C.MOVE, rules))
    assert after.p1.bonus == () and after.p2.bonus == ()
    assert after.bonus_pile(rules)[C.RAY] == 1


def test_both_land_on_star_with_two_or_more_each_draw_without_replacement():
    rules = replace(RULES, bonus_cards=(C.RAY, C.TRAP))
    outcomes = turn(player(p=1), player(p=1), C.MOVE, C.MOVE, rules)
    assert sorted((p, pos.p1.bonus, pos.p2.bonus) for p, pos in outcomes) == [
        (Fraction(1, 2), (C.RAY,), (C.TRAP,)),
        (Fraction(1, 2), (C.TRAP,), (C.RAY,)),
    ]


# --- Copy --------------------------------------------------------------------

def test_copy_as_lightning_has_lightning_strength_in_a_clash():
    p1 = player(b=1, rest=C.LIGHTNING, bonus=[C.COPY])
    after = only(turn(p1, player(), C.COPY, C.SPARK))
    assert after.p2.health == 2 and after.p1.health == 4


def test_copy_as_move_is_cancelled_by_trap():
    p1 = player(b=1, rest=C.MOVE, bonus=[C.COPY])
    after = only(turn(p1, player(bonus=[C.TRAP]), C.COPY, C.TRAP))
    assert after.p1.progress == 0


def test_copy_as_attack_is_reduced_by_barrier():
    p1 = player(b=1, rest=C.LIGHTNING, bonus=[C.COPY])
    after = only(turn(p1, player(), C.COPY, C.BARRIER))
    assert after.p2.health == 3


def test_copy_as_attack_is_reflected_by_counter():
    p1 = player(b=1, rest=C.SPARK, bonus=[C.COPY])
    after = only(turn(p1, player(d=2), C.COPY, C.COUNTER))
    assert after.p1.health == 2 and after.p2.health == 4


def test_copy_as_move_draws_a_bonus_card_on_a_star():
    p1 = player(b=1, p=1, rest=C.MOVE, bonus=[C.COPY])
    outcomes = turn(p1, player(), C.COPY, C.CHARGE)
    assert len(outcomes) == 3  # Ray, Recovery, Trap: P1 holds the Copy
    assert all(pos.p1.progress == 2 and len(pos.p1.bonus) == 1 for _, pos in outcomes)


def test_copy_pays_only_its_own_cost():
    p1 = player(b=1, rest=C.LIGHTNING, bonus=[C.COPY])
    after = only(turn(p1, player(), C.COPY, C.CHARGE))
    assert after.p1.battery == 0 and after.p2.health == 2


def test_copy_keeps_copied_identity_in_rest_zone():
    p1 = player(b=1, rest=C.LIGHTNING, bonus=[C.COPY])
    after = only(turn(p1, player(), C.COPY, C.CHARGE))
    assert after.p1.rest == RestCard(C.COPY, C.LIGHTNING)
    assert C.LIGHTNING in after.p1.hand() and C.COPY not in after.p1.hand()


def test_copy_returns_to_hand_as_plain_copy():
    p1 = player(rest=RestCard(C.COPY, C.LIGHTNING))
    after = only(turn(p1, player(), C.CHARGE, C.CHARGE))
    assert after.p1.rest == RestCard(C.CHARGE) and after.p1.bonus == (C.COPY,)


def test_copy_of_a_copy_copies_its_copied_card():
    rules = replace(RULES, bonus_cards=(C.COPY, C.COPY))
    p1 = player(b=1, rest=RestCard(C.COPY, C.SPARK), bonus=[C.COPY])
    after = only(turn(p1, player(), C.COPY, C.CHARGE, rules))
    assert after.p2.health == 3
    assert after.p1.rest == RestCard(C.COPY, C.SPARK) and after.p1.bonus == (C.COPY,)


def test_copy_with_empty_rest_zone_has_no_effect_and_rests_plain():
    p1 = player(b=1, bonus=[C.COPY])
    after = only(turn(p1, player(), C.COPY, C.CHARGE))
    assert after.p1.battery == 0 and after.p2.health == 4
    assert after.p1.rest == RestCard(C.COPY, None)


def test_copy_may_copy_a_bonus_card():
    p1 = player(b=1, d=0, rest=C.RAY, bonus=[C.COPY])
    after = only(turn(p1, player(), C.COPY, C.CHARGE))
    assert after.p2.health == 3 and after.p1.disc == 0


def test_copy_as_counter_costs_one_battery_not_two_disc():
    p1 = player(b=1, d=0, rest=C.COUNTER, bonus=[C.COPY])
    assert C.COPY in legal_cards(RULES, p1)
    after = only(turn(p1, player(), C.COPY, C.SPARK))
    assert after.p1.health == 4 and after.p2.health == 2 and after.p1.battery == 0


def test_copy_as_charge_at_full_battery_pays_then_gains():
    p1 = player(b=4, rest=C.CHARGE, bonus=[C.COPY])
    after = only(turn(p1, player(), C.COPY, C.BARRIER))
    assert after.p1.battery == 4


# --- the rest zone and the end of the game --------------------------------

def test_played_card_goes_to_rest_and_previous_returns():
    p1 = player(rest=C.SPARK)
    after = only(turn(p1, player(), C.CHARGE, C.CHARGE))
    assert after.p1.rest == RestCard(C.CHARGE)
    assert C.SPARK in after.p1.hand() and C.CHARGE not in after.p1.hand()


def test_card_just_played_is_unavailable_next_turn():
    assert C.CHARGE not in legal_cards(RULES, player(rest=C.CHARGE))


def test_unaffordable_card_is_illegal():
    with pytest.raises(IllegalCardError):
        turn(player(b=1), player(), C.LIGHTNING, C.CHARGE)


def test_health_zero_loses():
    assert only(turn(player(h=1), player(), C.CHARGE, C.SPARK)) is Winner.P2_KNOCKOUT


def test_counter_reflection_can_knock_out_the_attacker():
    assert only(turn(player(h=2), player(d=2), C.SPARK, C.COUNTER)) is Winner.P2_KNOCKOUT


# --- readings checked against the sources ---------------------------------

def test_reading_barrier_goes_to_rest_zone_like_any_card():
    after = only(turn(player(), player(), C.BARRIER, C.CHARGE))
    assert after.p1.rest == RestCard(C.BARRIER)


def test_reading_trap_cancels_the_opponents_move():
    after = only(turn(player(bonus=[C.TRAP]), player(), C.TRAP, C.MOVE))
    assert after.p2.progress == 0


@pytest.mark.parametrize("rest", [None, *list(Card)[:6]])
def test_reading_a_legal_card_always_exists(rest):
    p = player(b=0, d=0, rest=rest)
    assert set(legal_cards(RULES, p)) & {C.CHARGE, C.BARRIER, C.MOVE}


def test_reading_costs_paid_before_effects():
    p1 = player(b=4, rest=C.CHARGE, bonus=[C.COPY])
    after = only(turn(p1, player(), C.COPY, C.CHARGE))
    assert after.p1.battery == 4


def test_reading_tile_gains_happen_even_when_attacked():
    after = only(turn(player(), player(), C.LIGHTNING, C.CHARGE))
    assert after.p2.battery == 3 and after.p2.health == 2
    after = only(turn(player(bonus=[C.RECOVERY]), player(), C.RECOVERY, C.SPARK))
    assert (after.p1.battery, after.p1.disc, after.p1.health) == (3, 1, 3)


def test_reading_health_never_below_zero():
    assert only(turn(player(), player(h=1), C.LIGHTNING, C.CHARGE)) is Winner.P1_KNOCKOUT


def test_reading_copy_plays_whenever_its_own_cost_is_paid():
    p1 = player(b=1, d=0, rest=C.LIGHTNING, bonus=[C.COPY])
    assert C.COPY in legal_cards(RULES, p1) and C.LIGHTNING not in legal_cards(RULES, p1)


def test_reading_bonus_cards_is_a_multiset():
    rules = replace(RULES, bonus_cards=(C.COPY, C.COPY))
    outcomes = turn(player(p=1), player(p=1), C.MOVE, C.MOVE, rules)
    assert [(p, pos.p1.bonus, pos.p2.bonus) for p, pos in outcomes] == [(1, (C.COPY,), (C.COPY,))]


def test_moon_win_for_player_two():
    assert only(turn(player(), player(p=4), C.CHARGE, C.MOVE)) is Winner.P2_MOON


def test_moon_and_knockout_cannot_both_happen():
    # An attacked pawn does not move, so reaching the moon means no damage came in.
    assert only(turn(player(h=1, p=4), player(), C.MOVE, C.SPARK)) is Winner.P2_KNOCKOUT
