"""The compiled transition kernel agrees with the readable `resolve_turn`."""

from __future__ import annotations

import numpy as np
import pytest

from rules.charge_spark.cards import Card as C
from rules.charge_spark.config import RuleSet
from rules.charge_spark.game import ChargeSparkGame, ReferenceChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.core.graph import reachable_states

VARIANTS = {
    "no-bonus": RuleSet(board="SM", health=1, bonus_cards=()),
    "default-bonus": RuleSet(board="S*M", health=1),
    "two-copies": RuleSet(board="S*M", health=1, bonus_cards=(C.COPY, C.COPY, C.RAY)),
    "one-card-contested-coin": RuleSet(board="S*M", health=1, bonus_cards=(C.TRAP,)),
    "one-card-contested-nobody": RuleSet(board="S*M", health=1, bonus_cards=(C.TRAP,), contested_draw="nobody"),
    "variants": RuleSet(
        board="S**M", health=1, clash="difference", recovery="battery", battery_tiles=3,
        start_battery=0, bonus_cards=(C.RECOVERY, C.COPY, C.RAY), counter_reflect=1, barrier_reduce=2,
    ),
    # One-seat keys: each player pays, deals, reflects, reduces and gains by its own seat's numbers.
    "one-seat": RuleSet(
        board="S*M", health=2, bonus_cards=(C.RECOVERY, C.COPY, C.RAY),
        p1={"cost.spark": (0, 0), "damage.ray": 2, "barrier_reduce": 0, "recovery": "battery", "start_disc": 1},
        p2={"damage.spark": 2, "counter_reflect": 1, "start_battery": 1, "cost.lightning": (1, 0)},
    ),
}


def fields(expansion):
    return [np.asarray(getattr(expansion, name)) for name in (
        "row_count", "row_actions", "col_count", "col_actions", "out_count", "out_next", "out_prob",
    )]


def sampled_states(rules: RuleSet, seed: int) -> np.ndarray:
    """Up to 400 of the states reachable under `rules`."""
    game = ChargeSparkGame(rules)
    states = reachable_states(game, [game.encode(initial_position(rules))])
    return np.random.default_rng(seed).choice(states, size=min(400, states.size), replace=False)


@pytest.mark.parametrize("name", VARIANTS)
def test_compiled_transitions_match_resolve_turn(name):
    rules = VARIANTS[name]
    sample = sampled_states(rules, 7)
    fast = fields(ChargeSparkGame(rules).expand(sample))
    slow = fields(ReferenceChargeSparkGame(rules).expand(sample))
    for got, want in zip(fast, slow):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", VARIANTS)
def test_expanding_only_the_cells_asked_gives_their_outcomes_and_none_elsewhere(name):
    game = ChargeSparkGame(VARIANTS[name])
    sample = sampled_states(VARIANTS[name], 8)
    row_count, row_actions, col_count, col_actions, out_count, out_next, out_prob = fields(game.expand(sample))
    cells = np.random.default_rng(9).random(out_count.size) < 0.3
    got = fields(game.expand_cells(sample, cells))
    np.testing.assert_array_equal(got[0], row_count)
    np.testing.assert_array_equal(got[1], row_actions)
    np.testing.assert_array_equal(got[2], col_count)
    np.testing.assert_array_equal(got[3], col_actions)
    np.testing.assert_array_equal(got[4], np.where(cells, out_count, 0))
    kept = np.repeat(cells, out_count)  # each outcome of a cell asked for
    np.testing.assert_array_equal(got[5], out_next[kept])
    np.testing.assert_array_equal(got[6], out_prob[kept])
    with pytest.raises(ValueError, match="cell flags"):
        game.expand_cells(sample, cells[:-1])


def test_reachable_set_matches_reference_enumeration():
    rules = VARIANTS["no-bonus"]
    root = [ChargeSparkGame(rules).encode(initial_position(rules))]
    np.testing.assert_array_equal(
        reachable_states(ChargeSparkGame(rules), root),
        reachable_states(ReferenceChargeSparkGame(rules), root),
    )


def test_probabilities_sum_to_one_per_cell():
    rules = VARIANTS["two-copies"]
    game = ChargeSparkGame(rules)
    states = reachable_states(game, [game.encode(initial_position(rules))])
    e = game.expand(states[:5000])
    cell = np.repeat(np.arange(e.out_count.size), e.out_count)
    np.testing.assert_allclose(np.bincount(cell, weights=e.out_prob), 1.0, atol=1e-15)


def test_one_seat_rules_have_no_seat_swap():
    """A one-seat key makes the seats unlike: no swap, so nothing is folded or mirrored."""
    game = ChargeSparkGame(VARIANTS["one-seat"])
    assert game.swap(np.array([0], np.int64)) is None


def test_swap_is_an_involution_and_maps_reachable_to_reachable():
    rules = VARIANTS["two-copies"]
    game = ChargeSparkGame(rules)
    states = reachable_states(game, [game.encode(initial_position(rules))])
    swapped = game.swap(states)
    np.testing.assert_array_equal(game.swap(swapped), states)
    assert np.isin(swapped, states).all()
