"""Golden reachable-state counts (perft style): a changed count is a changed rule."""

from __future__ import annotations

import pytest

from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.core.graph import reachable_states

# Non-terminal states reachable from `start`; "natural identity": both
# players' Health, Battery, Disc, pawn, rest-zone card (a Copy remembering
# what it copied) and bonus cards in hand.
GOLDEN = [
    (["board=SM", "health=1", "bonus_cards="], 5_076),
    (["board=S*M", "health=1", "bonus_cards=ray"], 32_187),
    (["board=S*M", "health=1", "bonus_cards=copy,copy"], 42_665),
    (["board=S*M", "health=1", "battery_tiles=2", "disc_tiles=2"], 17_599),
    (["board=S.M", "health=2", "bonus_cards="], 114_845),
    (["board=S*M", "health=1"], 214_123),
]


@pytest.mark.parametrize("overrides,count", GOLDEN, ids=[" ".join(o) for o, _ in GOLDEN])
def test_reachable_state_count(overrides, count):
    rules = apply_overrides(RuleSet(), overrides)
    game = ChargeSparkGame(rules)
    assert reachable_states(game, [game.encode(initial_position(rules))]).size == count
