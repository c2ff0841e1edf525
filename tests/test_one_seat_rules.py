"""One-seat rules (issue 44): a cost, damage, effect or start key set for one
player only. The rule set says it one way, each player plays by its own
seat's numbers in the readable engine (the compiled one is checked against it
in tests/test_transitions.py), and the solved games behave as they must: a
change for P1 never hurts P1, the same change for both seats is the shared
change (worth 1/2 at the start), and a rule set is its mirror seen from the
other seat."""

from __future__ import annotations

from fractions import Fraction
from functools import cache

import numpy as np
import pytest

from rules.charge_spark.cards import Card as C
from rules.charge_spark.config import (
    RulesError,
    RuleSet,
    apply_overrides,
    canonical_mapping,
    differences_from_default,
    fingerprint,
    rules_from_toml,
    rules_to_toml,
)
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.notation import parse_position
from rules.charge_spark.state import PlayerState, Position, RestCard, initial_position
from rules.charge_spark.turn import legal_cards, resolve_turn
from solver.core.solve import FOLDED_METHOD, LAYERED_METHOD, solve_from

BASE = ["board=S*M", "health=1", "bonus_cards=ray", "battery_tiles=3", "disc_tiles=2"]
"""A small rule set (about 5,000 states, a fraction of a second a solve)."""

# Changes that help P1 alone: cheaper or stronger cards for P1, dearer or weaker ones
# for P2, a better start for P1. (P1's card, P2's card) of the same change for the
# other seat is the mirror.
FAVOURS_P1 = {
    "P1's Spark free": "p1.cost.spark.battery=0",
    "P2's Lightning dearer": "p2.cost.lightning.battery=3",
    "P1's Ray costs no Disc": "p1.cost.ray.disc=0",
    "P1's Spark deals 2": "p1.damage.spark=2",
    "P2's Ray deals nothing": "p2.damage.ray=0",
    "P2's Counter reflects nothing": "p2.counter_reflect=0",
    "P2's Barrier blocks nothing": "p2.barrier_reduce=0",
    "P1 starts with 3 Battery": "p1.start_battery=3",
    "P2 starts with 1 Battery": "p2.start_battery=1",
    "P1 starts with a Disc": "p1.start_disc=1",
}


def mirror(change: str) -> str:
    """The same change made for the other seat."""
    seat, rest = change.split(".", 1)
    return f"{'p2' if seat == 'p1' else 'p1'}.{rest}"


def shared(change: str) -> str:
    """The same change made for both seats: the shared key."""
    return change.split(".", 1)[1]


@cache
def solved(*changes: str):
    rules = apply_overrides(RuleSet(), [*BASE, *changes])
    game = ChargeSparkGame(rules)
    root = game.encode(initial_position(rules))
    result = solve_from(game, [root], show_progress=False)
    assert result.max_exploitability <= 1e-9
    return rules, game, root, result


def start_value(*changes: str) -> float:
    _, game, root, result = solved(*changes)
    return result.answer(root, game).value


# ----------------------------------------------------------------- the rule set


def test_a_one_seat_key_changes_that_seat_only():
    rules = apply_overrides(RuleSet(), ["p1.cost.spark.battery=0", "p2.damage.lightning=3"])
    assert rules.seat(0).cost(C.SPARK) == (0, 0) and rules.seat(1).cost(C.SPARK) == (1, 0)
    assert rules.seat(0).damage_of(C.LIGHTNING) == 2 and rules.seat(1).damage_of(C.LIGHTNING) == 3
    assert rules.cost(C.SPARK) == (1, 0)  # the shared key is unchanged
    assert not rules.is_seat_symmetric and RuleSet().is_seat_symmetric


def test_the_same_change_for_both_seats_is_the_shared_key():
    both = apply_overrides(RuleSet(), ["p1.cost.spark.battery=0", "p2.cost.spark.battery=0"])
    assert both == apply_overrides(RuleSet(), ["cost.spark.battery=0"])
    assert fingerprint(both) == fingerprint(apply_overrides(RuleSet(), ["cost.spark.battery=0"]))
    assert both.is_seat_symmetric and "p1" not in canonical_mapping(both)


def test_a_seat_key_equal_to_the_shared_one_is_no_change():
    same = apply_overrides(RuleSet(), ["p1.damage.spark=1", "p2.start_battery=2"])
    assert same == RuleSet() and fingerprint(same) == fingerprint(RuleSet())


def test_the_fingerprint_is_of_each_seats_numbers():
    """Two ways of writing one game: P1's Spark deals 0, P2's the printed 1."""
    a = apply_overrides(RuleSet(), ["p1.damage.spark=0"])
    b = apply_overrides(RuleSet(), ["damage.spark=0", "p2.damage.spark=1"])
    assert fingerprint(a) == fingerprint(b)
    assert fingerprint(a) != fingerprint(a.seats_swapped()) != fingerprint(RuleSet())


def test_one_seat_keys_show_in_the_differences_the_mapping_and_the_rules_file():
    rules = apply_overrides(RuleSet(), ["p1.cost.spark.battery=0", "p2.damage.spark=2", "p1.recovery=battery"])
    assert differences_from_default(rules) == ["p1.recovery=battery", "p1.cost.spark.battery=0", "p2.damage.spark=2"]
    mapping = canonical_mapping(rules)
    assert mapping["p1"] == {"recovery": "battery", "cost": {"spark": {"battery": 0, "disc": 0}}}
    assert mapping["p2"] == {"damage": {"spark": 2}}
    text = rules_to_toml(rules)
    assert '[p1]\nrecovery = "battery"\n[p1.cost]\nspark = { battery = 0, disc = 0 }' in text
    assert rules_from_toml(text) == rules
    assert "p1" not in canonical_mapping(RuleSet())  # an ordinary rule set's mapping is as it was


def test_a_seat_cost_set_by_one_tile_kind_keeps_the_shared_cost_of_the_other():
    rules = apply_overrides(RuleSet(), ["p2.cost.counter.battery=1", "cost.counter.disc=1"])
    assert rules.seat(1).cost(C.COUNTER) == (1, 1) and rules.seat(0).cost(C.COUNTER) == (0, 1)


# ------------------------------------------- the engine: each seat's own numbers


def player(**fields) -> PlayerState:
    return PlayerState(**{"health": 3, "battery": 2, "disc": 2, **fields})


def after(rules: RuleSet, p1: PlayerState, p2: PlayerState, card1: C, card2: C) -> Position:
    ((probability, position),) = resolve_turn(rules, Position(p1, p2), card1, card2)
    assert probability == Fraction(1) and isinstance(position, Position)
    return position


def test_interaction_each_player_pays_its_own_seats_cost():
    rules = RuleSet(health=3, p1={"cost.spark": (0, 0)})
    broke = player(battery=0)
    assert C.SPARK in legal_cards(rules, broke, 0) and C.SPARK not in legal_cards(rules, broke, 1)
    turn = after(rules, broke, player(), C.SPARK, C.SPARK)
    assert turn.p1.battery == 0 and turn.p2.battery == 1  # P1 paid nothing, P2 its one Battery


def test_interaction_an_attack_deals_its_own_players_damage():
    rules = RuleSet(health=3, p2={"damage.spark": 2})
    turn = after(rules, player(), player(), C.SPARK, C.CHARGE)
    assert turn.p2.health == 2  # P1's Spark deals the shared 1
    turn = after(rules, player(), player(), C.CHARGE, C.SPARK)
    assert turn.p1.health == 1  # P2's Spark deals P2's 2


def test_interaction_a_clash_compares_each_players_own_strength():
    rules = RuleSet(health=3, p1={"damage.spark": 2})
    turn = after(rules, player(), player(), C.SPARK, C.LIGHTNING)
    assert (turn.p1.health, turn.p2.health) == (3, 3)  # 2 against 2: nobody is hurt
    turn = after(rules.seats_swapped(), player(), player(), C.SPARK, C.LIGHTNING)
    assert (turn.p1.health, turn.p2.health) == (1, 3)  # P1's Spark is the weaker: P1 takes 2


def test_interaction_a_copy_acts_with_its_own_players_numbers():
    rules = RuleSet(health=4, bonus_cards=(C.COPY,), p1={"damage.spark": 3})
    p1 = player(health=4, rest=RestCard(C.SPARK), bonus=(C.COPY,))
    turn = after(rules, p1, player(health=4), C.COPY, C.CHARGE)
    assert turn.p2.health == 1  # Copy as Spark deals P1's 3


def test_interaction_a_counter_reflects_by_its_own_players_number():
    rules = RuleSet(health=3, p2={"counter_reflect": 1})
    turn = after(rules, player(), player(), C.SPARK, C.COUNTER)
    assert (turn.p1.health, turn.p2.health) == (2, 3)  # into P2's Counter: P2's 1
    turn = after(rules, player(), player(), C.COUNTER, C.SPARK)
    assert (turn.p1.health, turn.p2.health) == (3, 1)  # into P1's Counter: the shared 2


def test_interaction_a_barrier_reduces_by_its_own_players_number():
    rules = RuleSet(health=3, p1={"barrier_reduce": 0})
    turn = after(rules, player(), player(), C.BARRIER, C.SPARK)
    assert turn.p1.health == 2  # P1's Barrier stops nothing
    turn = after(rules, player(), player(), C.SPARK, C.BARRIER)
    assert turn.p2.health == 3  # P2's Barrier stops the shared 1


def test_interaction_recovery_gains_by_its_own_players_reading():
    rules = RuleSet(health=3, bonus_cards=(C.RECOVERY, C.RECOVERY), p2={"recovery": "battery"})
    p = player(battery=0, disc=0, bonus=(C.RECOVERY,))
    turn = after(rules, p, p, C.RECOVERY, C.RECOVERY)
    assert (turn.p1.battery, turn.p1.disc) == (1, 1) and (turn.p2.battery, turn.p2.disc) == (1, 0)


def test_interaction_each_player_starts_with_its_own_start_keys():
    rules = RuleSet(p1={"start_battery": 0}, p2={"start_disc": 1})
    start = initial_position(rules)
    assert (start.p1.battery, start.p1.disc, start.p2.battery, start.p2.disc) == (0, 0, 2, 1)
    # A token left out of a position takes that player's own start value.
    assert parse_position("h3 / h2", rules) == Position(
        PlayerState(health=3, battery=0, disc=0), PlayerState(health=2, battery=2, disc=1))


def test_where_the_seats_differ_a_cards_cost_needs_its_seat():
    rules = RuleSet(p1={"cost.spark": (0, 0)})
    with pytest.raises(ValueError, match="say which seat"):
        legal_cards(rules, player())
    assert legal_cards(RuleSet(), player()) == legal_cards(RuleSet(), player(), 1)


def test_the_wild_game_refuses_seats_that_play_differently():
    """Its P2 bounds are read off seat-swapped positions: that needs seats that play alike."""
    from rules.charge_spark.wild import WildGame

    with pytest.raises(RulesError, match="one-seat keys: p1.damage.spark=2"):
        WildGame(apply_overrides(RuleSet(), [*BASE, "p1.damage.spark=2"]))
    WildGame(apply_overrides(RuleSet(), [*BASE, "p1.start_battery=1"]))  # a start key changes no turn


# ------------------------------------------------------------------ solving


def test_a_one_seat_rule_set_is_solved_unfolded():
    """No seat swap: no position's figures are copied from its twin, as for restricted games."""
    rules, game, _, result = solved(FAVOURS_P1["P1's Spark free"])
    assert game.swap(result.states[:3]) is None
    assert result.method == LAYERED_METHOD
    assert solved()[3].method == FOLDED_METHOD


def test_one_seat_start_keys_keep_the_turn_rules_symmetric():
    """A start key for one seat changes no turn: the seat swap stays (the solver
    folds only from a start that is its own twin, which this one is not)."""
    rules, game, root, result = solved(FAVOURS_P1["P1 starts with 3 Battery"])
    assert not rules.is_seat_symmetric and rules.seats_play_alike
    assert game.swap(np.array([root]))[0] != root and result.method == LAYERED_METHOD
    assert not apply_overrides(RuleSet(), ["p1.damage.spark=2"]).seats_play_alike


@pytest.mark.parametrize("change", FAVOURS_P1.values(), ids=FAVOURS_P1.keys())
def test_a_change_that_favours_p1_never_lowers_p1s_start_value(change):
    assert start_value(change) >= start_value() - 1e-9
    assert start_value(mirror(change)) <= start_value() + 1e-9  # nor does the same change for P2 help P1


@pytest.mark.parametrize("change", FAVOURS_P1.values(), ids=FAVOURS_P1.keys())
def test_the_same_change_for_both_seats_is_the_shared_change_and_worth_one_half(change):
    rules, _, _, result = solved(change, mirror(change))
    assert rules == apply_overrides(RuleSet(), [*BASE, shared(change)])
    assert result.method == FOLDED_METHOD  # seat-symmetric again: solved folded
    assert start_value(change, mirror(change)) == pytest.approx(0.5, abs=1e-9)


@pytest.mark.parametrize("change", FAVOURS_P1.values(), ids=FAVOURS_P1.keys())
def test_a_one_seat_rule_set_equals_its_mirror_with_the_seats_swapped(change):
    rules, game, root, result = solved(change)
    twin_rules, twin_game, twin_root, twin = solved(mirror(change))
    assert twin_rules == rules.seats_swapped()
    players = game.codec.players
    swapped = (result.states % players) * players + result.states // players
    assert twin_root == (root % players) * players + root // players
    order = np.argsort(swapped)
    np.testing.assert_array_equal(swapped[order], twin.states)  # the same positions, seats swapped
    np.testing.assert_allclose(result.values[order] + twin.values, 1.0, atol=1e-9)
    assert start_value(change) + start_value(mirror(change)) == pytest.approx(1.0, abs=1e-9)
