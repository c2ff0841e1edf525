"""Rule sets: loading from TOML and --set, validation messages, fingerprints, TOML output."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rules.charge_spark.cards import BONUS_CARDS, Card
from rules.charge_spark.config import (
    RulesError,
    RuleSet,
    apply_overrides,
    canonical_mapping,
    fingerprint,
    load_rules,
    rules_from_mapping,
    rules_from_toml,
    rules_to_toml,
)

DEFAULT = RuleSet()


def costs_with(**changes: tuple[int, int]) -> tuple[tuple[int, int], ...]:
    costs = list(DEFAULT.costs)
    for name, cost in changes.items():
        costs[Card.parse(name)] = cost
    return tuple(costs)


def damage_with(**changes: int) -> tuple[int, ...]:
    damage = list(DEFAULT.damage)
    for name, amount in changes.items():
        damage[Card.parse(name)] = amount
    return tuple(damage)


# ------------------------------------------------------------------ loading

# (TOML text, --set arguments, the RuleSet both must give)
EVERY_KEY = [
    ('name = "Lightning costs 3"', ["name=Lightning costs 3"], RuleSet(name="Lightning costs 3")),
    ('board = "S*M"', ["board=S*M"], RuleSet(board="S*M")),
    ("health = 6", ["health=6"], RuleSet(health=6)),
    ("battery_tiles = 5", ["battery_tiles=5"], RuleSet(battery_tiles=5)),
    ("start_battery = 0", ["start_battery=0"], RuleSet(start_battery=0)),
    ("disc_tiles = 2", ["disc_tiles=2"], RuleSet(disc_tiles=2)),
    ("start_disc = 1", ["start_disc=1"], RuleSet(start_disc=1)),
    ('bonus_cards = ["trap", "ray"]', ["bonus_cards=ray,trap"],
     RuleSet(bonus_cards=(Card.RAY, Card.TRAP))),
    ('bonus_cards = ["copy", "copy", "ray"]', ["bonus_cards=copy,ray,copy"],
     RuleSet(bonus_cards=(Card.COPY, Card.COPY, Card.RAY))),
    ("bonus_cards = []", ["bonus_cards="], RuleSet(bonus_cards=())),
    ('recovery = "battery"', ["recovery=battery"], RuleSet(recovery="battery")),
    ('clash = "difference"', ["clash=difference"], RuleSet(clash="difference")),
    ('double_goal = "cancel"', ["double_goal=cancel"], RuleSet(double_goal="cancel")),
    ('contested_draw = "nobody"', ["contested_draw=nobody"], RuleSet(contested_draw="nobody")),
    ("counter_reflect = 3", ["counter_reflect=3"], RuleSet(counter_reflect=3)),
    ("barrier_reduce = 0", ["barrier_reduce=0"], RuleSet(barrier_reduce=0)),
    ("cost.lightning = { battery = 3 }", ["cost.lightning.battery=3"],
     RuleSet(costs=costs_with(lightning=(3, 0)))),
    ("cost.spark = { disc = 1 }", ["cost.spark={ disc = 1 }"], RuleSet(costs=costs_with(spark=(0, 1)))),
    ("[cost.copy]\nbattery = 0\ndisc = 1", ["cost.copy.battery=0", "cost.copy.disc=1"],
     RuleSet(costs=costs_with(copy=(0, 1)))),
    ("cost.charge.battery = 1", ["cost.charge.battery=1"], RuleSet(costs=costs_with(charge=(1, 0)))),
    ("damage.spark = 2", ["damage.spark=2"], RuleSet(damage=damage_with(spark=2))),
    ("[damage]\nlightning = 3\nray = 0", ["damage.lightning=3", "damage.ray=0"],
     RuleSet(damage=damage_with(lightning=3, ray=0))),
    ("damage = { ray = 2 }", ["damage={ray=2}"], RuleSet(damage=damage_with(ray=2))),
    # One seat only: every per-seat key, in a [p1] / [p2] table or with a seat before the key.
    ("p1.cost.spark.battery = 0", ["p1.cost.spark.battery=0"], RuleSet(p1={"cost.spark": (0, 0)})),
    ("[p2.cost]\ncounter = { disc = 1 }", ["p2.cost.counter.disc=1"], RuleSet(p2={"cost.counter": (0, 1)})),
    ("[p2.cost.spark]\ndisc = 1", ["p2.cost.spark={disc=1}"], RuleSet(p2={"cost.spark": (0, 1)})),
    ("[p2.damage]\nspark = 2", ["p2.damage.spark=2"], RuleSet(p2={"damage.spark": 2})),
    ("[p1]\nstart_battery = 1\nstart_disc = 2", ["p1.start_battery=1", "p1.start_disc=2"],
     RuleSet(p1={"start_battery": 1, "start_disc": 2})),
    ('p2.recovery = "battery"', ["p2.recovery=battery"], RuleSet(p2={"recovery": "battery"})),
    ("p1 = { counter_reflect = 3, barrier_reduce = 0 }", ["p1={counter_reflect=3, barrier_reduce=0}"],
     RuleSet(p1={"counter_reflect": 3, "barrier_reduce": 0})),
    # The same change for both seats is the shared key; a seat's key equal to the shared one is no change.
    ("p1.damage.spark = 2\np2.damage.spark = 2", ["p1.damage.spark=2", "p2.damage.spark=2"],
     RuleSet(damage=damage_with(spark=2))),
    ("damage.spark = 2\np1.damage.spark = 2", ["p1.damage.spark=2", "damage.spark=2"],
     RuleSet(damage=damage_with(spark=2))),
]


@pytest.mark.parametrize("toml_text, overrides, expected", EVERY_KEY)
def test_every_key_loads_from_toml(toml_text: str, overrides: list[str], expected: RuleSet, tmp_path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(toml_text + "\n", encoding="utf-8")
    assert load_rules(path) == expected


@pytest.mark.parametrize("toml_text, overrides, expected", EVERY_KEY)
def test_every_key_loads_from_set(toml_text: str, overrides: list[str], expected: RuleSet) -> None:
    assert apply_overrides(DEFAULT, overrides) == expected


def test_spec_example_file(tmp_path) -> None:
    path = tmp_path / "lightning3.toml"
    path.write_text(
        'name = "Lightning costs 3"\nboard = "S.*.*M"\nhealth = 4\nstart_battery = 2\n'
        'recovery = "battery+disc"\nbonus_cards = ["ray", "recovery", "trap", "copy"]\n'
        "cost.lightning = { battery = 3 }\ncost.counter = { disc = 2 }\ndamage.lightning = 2\n",
        encoding="utf-8",
    )
    rules = load_rules(str(path))
    assert rules == RuleSet(name="Lightning costs 3", costs=costs_with(lightning=(3, 0)))
    assert rules.cost(Card.LIGHTNING) == (3, 0)
    assert rules.cost(Card.SPARK) == (1, 0)  # a card not mentioned keeps its default cost


def test_empty_mapping_is_the_default() -> None:
    assert rules_from_mapping({}) == DEFAULT
    assert rules_from_toml("") == DEFAULT
    assert apply_overrides(DEFAULT, []) is DEFAULT


def test_card_table_replaces_the_cost_but_set_changes_one_tile_kind() -> None:
    # In a file a card's table replaces its cost (missing kind = 0) ...
    assert rules_from_toml("cost.counter = { battery = 1 }").cost(Card.COUNTER) == (1, 0)
    # ... a dotted --set changes one tile kind, an inline table replaces the card's cost.
    assert apply_overrides(DEFAULT, ["cost.counter.battery=1"]).cost(Card.COUNTER) == (1, 2)
    assert apply_overrides(DEFAULT, ["cost.counter={battery=1}"]).cost(Card.COUNTER) == (1, 0)


def test_set_values() -> None:
    rules = apply_overrides(DEFAULT, ['name="quoted"', "bonus_cards=['ray']", "health = 5"])
    assert (rules.name, rules.bonus_cards, rules.health) == ("quoted", (Card.RAY,), 5)
    assert apply_overrides(DEFAULT, ["name=2024"]).name == "2024"  # a string key keeps the text
    assert apply_overrides(DEFAULT, ["bonus_cards=RAY, Trap"]).bonus_cards == (Card.RAY, Card.TRAP)
    # Overrides are applied together: lowering the tiles and the start works in either order.
    both = RuleSet(battery_tiles=1, start_battery=1)
    assert apply_overrides(DEFAULT, ["battery_tiles=1", "start_battery=1"]) == both
    assert apply_overrides(DEFAULT, ["start_battery=1", "battery_tiles=1"]) == both
    # Later overrides win, and a base rule set other than the default is respected.
    assert apply_overrides(RuleSet(health=7), ["clash=difference", "clash=stronger"]) == RuleSet(health=7)


def test_bonus_cards_are_a_sorted_multiset() -> None:
    rules = RuleSet(bonus_cards=(Card.COPY, Card.RAY, Card.COPY))
    assert rules.bonus_cards == (Card.RAY, Card.COPY, Card.COPY)
    assert rules == RuleSet(bonus_cards=[Card.COPY, Card.COPY, Card.RAY])  # type: ignore[arg-type]
    assert hash(rules) == hash(RuleSet(bonus_cards=(Card.RAY, Card.COPY, Card.COPY)))


# --------------------------------------------------------------- validation

# (RuleSet keyword arguments, substrings the message must contain)
BAD_FIELDS = [
    ({"board": ""}, ["board:", "S.*.*M"]),
    ({"board": "S"}, ["board:", "no moon"]),
    ({"board": "X.M"}, ["board:", "character 1 'X'"]),
    ({"board": "S.x*M"}, ["board:", "character 3 'x'"]),
    ({"board": "SMM"}, ["board:", "character 2 'M'"]),
    ({"board": "S.*."}, ["board:", "last character 4 '.'", "'M'"]),
    ({"board": 5}, ["board:", "string"]),
    ({"health": 0}, ["health: must be an integer from 1 to 1000, got 0"]),
    ({"health": True}, ["health:", "got True"]),
    ({"health": "4"}, ["health:", "got '4'"]),
    ({"health": 4.0}, ["health:", "got 4.0"]),
    ({"battery_tiles": -1}, ["battery_tiles:", "from 0 to 1000"]),
    ({"disc_tiles": -1}, ["disc_tiles:", "from 0 to 1000"]),
    ({"start_battery": 5}, ["start_battery:", "battery_tiles (4)", "got 5"]),
    ({"start_battery": -1}, ["start_battery:"]),
    ({"start_disc": 1, "disc_tiles": 0}, ["start_disc:", "disc_tiles (0)"]),
    ({"counter_reflect": -1}, ["counter_reflect:", "from 0 to 1000"]),
    ({"barrier_reduce": -2}, ["barrier_reduce:", "from 0 to 1000"]),
    ({"barrier_reduce": False}, ["barrier_reduce:", "got False"]),
    ({"recovery": "disc"}, ["recovery:", "'battery+disc', 'battery'", "got 'disc'"]),
    ({"clash": "weaker"}, ["clash:", "'stronger', 'difference'"]),
    ({"double_goal": "both"}, ["double_goal:", "'cancel'"]),
    ({"contested_draw": "p1"}, ["contested_draw:", "'coin', 'nobody'"]),
    ({"name": 3}, ["name:", "string"]),
    ({"bonus_cards": (Card.SPARK,)}, ["bonus_cards:", "spark is a base card"]),
    ({"bonus_cards": (Card.RAY,) * 9}, ["bonus_cards:", "at most 8"]),
    ({"bonus_cards": ("ray",)}, ["bonus_cards:", "'ray'"]),
    ({"costs": costs_with(lightning=(-1, 0))}, ["cost.lightning.battery:", "from 0 to 1000", "got -1"]),
    ({"costs": costs_with(counter=(0, "2"))}, ["cost.counter.disc:", "got '2'"]),
    ({"costs": DEFAULT.costs[:3]}, ["cost:", "per card"]),
    ({"damage": damage_with(spark=-1)}, ["damage.spark:", "from 0 to 1000"]),
    ({"damage": damage_with(charge=1)}, ["damage.charge:", "only attack cards"]),
    ({"costs": costs_with(charge=(1, 0), move=(0, 1))},
     ["cost:", "at least two of charge, barrier and move must be free", "charge costs 1 battery",
      "move costs 1 disc"]),
]


@pytest.mark.parametrize("changes, expected", BAD_FIELDS)
def test_validation_errors_name_the_key(changes: dict, expected: list[str]) -> None:
    with pytest.raises(RulesError) as info:
        RuleSet(**changes)
    message = str(info.value)
    assert "\n" not in message
    for part in expected:
        assert part in message


def test_replace_validates_too() -> None:
    with pytest.raises(RulesError, match="health"):
        dataclasses.replace(DEFAULT, health=0)


def test_one_paid_free_card_is_allowed() -> None:
    assert RuleSet(costs=costs_with(move=(0, 1))).cost(Card.MOVE) == (0, 1)


def test_rules_error_is_a_value_error() -> None:
    assert issubclass(RulesError, ValueError)


# (TOML text, substrings of the message: file name, line, key, why)
BAD_FILES = [
    ("health = 4\n\nhealth = 0\n", ["line 3", "invalid TOML"]),  # a duplicate key is a syntax error
    ('name = "x"\nhealth = 0\n', ["rules.toml line 2: health: must be an integer from 1 to 1000, got 0"]),
    ('health = "four"\n', ["line 1", "health:", "got 'four'"]),
    ("x = [\n", ["line 1", "invalid TOML"]),
    ("health = = 3\n", ["line 1", "invalid TOML"]),
    ("# a comment\nhelth = 3\n", ["line 2", "helth: unknown key (known: name, board"]),
    ("cost.lightning = { batery = 3 }\n", ["line 1", "cost.lightning.batery: unknown tile kind",
                                             "battery, disc"]),
    ("\n[cost]\nlightnin = { battery = 3 }\n", ["line 3", "cost.lightnin: unknown card", "lightning"]),
    ("[cost.lightning]\nbattery = -1\n", ["line 2", "cost.lightning.battery:", "got -1"]),
    ("cost.lightning = 3\n", ["line 1", "cost.lightning: must be a table"]),
    ("cost = 3\n", ["line 1", "cost: must be a table"]),
    ("damage.charge = 1\n", ["line 1", "damage.charge: unknown attack card", "spark, lightning, ray"]),
    ("damage = 1\n", ["line 1", "damage: must be a table"]),
    ("damage.spark = -1\n", ["line 1", "damage.spark:"]),
    ('board = "S.x.M"\n', ["line 1", "board: character 3 'x'"]),
    ('\nbonus_cards = ["ray", "spark"]\n', ["line 2", "bonus_cards: spark is a base card"]),
    ('bonus_cards = ["ray", "zap"]\n', ["line 1", "bonus_cards: unknown card 'zap'"]),
    ('bonus_cards = "ray"\n', ["line 1", "bonus_cards: must be a list"]),
    ("start_battery = 5\n", ["line 1", "start_battery:", "battery_tiles (4)"]),
    ("health = 5\nbattery_tiles = 1\n", ["line 2", "start_battery:", "battery_tiles (1)"]),
    ('recovery = "all"\n', ["line 1", "recovery:"]),
    ("health = 3\ncost.move.disc = 1\n[cost.barrier]\nbattery = 1\n",
     ["line 3", "cost: at least two of charge, barrier and move"]),  # the first paid card's line
    # One-seat keys: a seat other than p1 and p2, a key both players share, impossible values.
    ("health = 3\n[p3.cost]\nspark = { battery = 0 }\n", ["line 2", "p3: unknown seat (seats: p1, p2)"]),
    ('name = "x"\np1.board = "S*M"\n', ["line 2", "p1.board: not a per-seat key", "start_battery, start_disc"]),
    ("[p2]\nhealth = 3\n", ["line 2", "p2.health: not a per-seat key: health is the same for both players"]),
    ("[p1]\nstart_battery = 5\n", ["line 2", "p1.start_battery:", "battery_tiles (4)"]),
    ("[p1.cost]\nlightnin = { battery = 3 }\n", ["line 2", "p1.cost.lightnin: unknown card"]),
    ("[p1.cost.spark]\nbattery = -1\n", ["line 2", "p1.cost.spark.battery:", "got -1"]),
    ("\np2.damage.move = 1\n", ["line 2", "p2.damage.move: unknown attack card"]),
    ('p2.recovery = "all"\n', ["line 1", "p2.recovery: must be one of"]),
    ("p1 = 3\n", ["line 1", "p1: must be a table of per-seat keys"]),
    ("[p1.cost]\ncharge = { battery = 1 }\nbarrier = { disc = 1 }\n",
     ["line 2", "p1.cost: at least two of charge, barrier and move"]),
]


@pytest.mark.parametrize("text, expected", BAD_FILES)
def test_file_errors_name_file_line_and_key(text: str, expected: list[str], tmp_path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RulesError) as info:
        load_rules(path)
    message = str(info.value)
    assert message.startswith(str(path)), message
    assert "\n" not in message
    for part in expected:
        assert part in message, message


def test_missing_or_unreadable_file(tmp_path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(RulesError, match="nope.toml: cannot read rules file"):
        load_rules(missing)
    with pytest.raises(RulesError, match="cannot read rules file"):
        load_rules(tmp_path)  # a directory
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"name = \"\xff\"\n")
    with pytest.raises(RulesError, match="bin.toml: not UTF-8"):
        load_rules(binary)


def test_mapping_errors_name_the_source() -> None:
    with pytest.raises(RulesError, match=r"^designer: health: must be an integer from 1 to 1000, got 0$"):
        rules_from_mapping({"health": 0}, source="designer")
    with pytest.raises(RulesError, match=r"^rules: zap: unknown key"):
        rules_from_mapping({"zap": 1})


# (--set arguments, substrings of the message)
BAD_OVERRIDES = [
    (["health"], ["--set health:", "KEY=VALUE"]),
    (["=3"], ["--set =3:", "empty key"]),
    (["cost..battery=1"], ["--set cost..battery=1:", "empty key"]),
    (["helth=3"], ["--set helth=3: helth: unknown key (known: name"]),
    (["health.x=1"], ["--set health.x=1: health.x: unknown key"]),
    (["cost.zap.battery=1"], ["--set cost.zap.battery=1: cost.zap: unknown card"]),
    (["cost.spark.gold=1"], ["--set cost.spark.gold=1: cost.spark.gold: unknown tile kind"]),
    (["cost.spark.battery.x=1"], ["cost.spark.battery.x: unknown key"]),
    (["damage.move=1"], ["--set damage.move=1: damage.move: unknown attack card"]),
    (["health=0"], ["--set health=0: health: must be an integer from 1 to 1000, got 0"]),
    (["health=four"], ["--set health=four: health:", "got 'four'"]),
    (["health=true"], ["health:", "got True"]),
    (["board=S.xM"], ["--set board=S.xM: board: character 3 'x'"]),
    (["bonus_cards=ray,zap"], ["--set bonus_cards=ray,zap: bonus_cards: unknown card 'zap'"]),
    (["bonus_cards=spark"], ["bonus_cards: spark is a base card"]),
    (["health=5", "battery_tiles=1"], ["--set battery_tiles=1: start_battery:"]),
    (["health=5", "cost.charge.battery=1", "cost.barrier.disc=1"],
     ["--set cost.barrier.disc=1: cost: at least two"]),
    (["cost.lightning={battery=-1}"], ["--set cost.lightning={battery=-1}: cost.lightning.battery:"]),
    (["cost.lightning=3"], ["cost.lightning: must be a table"]),
    (["p3.cost.spark.battery=0"], ["--set p3.cost.spark.battery=0: p3: unknown seat (seats: p1, p2)"]),
    (["P1.damage.spark=2"], ["--set P1.damage.spark=2: P1: unknown seat"]),
    (["p1.board=S*M"], ["--set p1.board=S*M: p1.board: not a per-seat key: board is the same for both players"]),
    (["p1.health=2"], ["--set p1.health=2: p1.health: not a per-seat key"]),
    (["p2.helth=2"], ["--set p2.helth=2: p2.helth: unknown per-seat key (per-seat keys: start_battery"]),
    (["p1.start_battery=9"], ["--set p1.start_battery=9: p1.start_battery: must be an integer from 0 to battery_tiles (4)"]),
    (["p1.start_battery=2", "battery_tiles=1", "start_battery=1"], ["p1.start_battery:", "battery_tiles (1)"]),
    (["p2.cost.zap.battery=1"], ["--set p2.cost.zap.battery=1: p2.cost.zap: unknown card"]),
    (["p2.cost.spark.gold=1"], ["--set p2.cost.spark.gold=1: p2.cost.spark.gold: unknown tile kind"]),
    (["p1.damage.charge=1"], ["--set p1.damage.charge=1: p1.damage.charge: unknown attack card"]),
    (["p1.damage.spark=-1"], ["--set p1.damage.spark=-1: p1.damage.spark: must be an integer from 0"]),
    (["p2.recovery=all"], ["--set p2.recovery=all: p2.recovery: must be one of"]),
    (["p1.start_disc.x=1"], ["--set p1.start_disc.x=1: p1.start_disc.x: unknown key"]),
    (["p1.cost.charge.battery=1", "p1.cost.barrier.disc=1"], ["p1.cost: at least two"]),
    (["p1.cost.charge.battery=1", "p2.cost.charge.battery=1", "p1.cost.barrier.disc=1", "p2.cost.barrier.disc=1"],
     ["cost: at least two"]),  # the same for both seats is the shared cost, checked as such
]


@pytest.mark.parametrize("overrides, expected", BAD_OVERRIDES)
def test_override_errors_name_the_argument(overrides: list[str], expected: list[str]) -> None:
    with pytest.raises(RulesError) as info:
        apply_overrides(DEFAULT, overrides)
    message = str(info.value)
    assert "\n" not in message
    for part in expected:
        assert part in message, message


# ------------------------------------------------ random valid rule sets


@st.composite
def rule_sets(draw: st.DrawFn) -> RuleSet:
    battery_tiles = draw(st.integers(0, 6))
    disc_tiles = draw(st.integers(0, 6))
    costs = [
        (draw(st.integers(0, 3)), draw(st.integers(0, 3))) if card.label not in ("charge", "barrier", "move")
        else (0, 0)
        for card in Card
    ]
    paid = draw(st.sampled_from([None, Card.CHARGE, Card.BARRIER, Card.MOVE]))
    if paid is not None:  # one of the three may cost something
        costs[paid] = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    damage = [draw(st.integers(0, 4)) if card.is_attack else 0 for card in Card]
    return RuleSet(
        name=draw(st.text(st.characters(exclude_categories=("Cc", "Cs", "Co", "Cn", "Zl", "Zp")), max_size=20).filter(str.isprintable)),
        board="S" + draw(st.text(alphabet=".*", max_size=7)) + "M",
        health=draw(st.integers(1, 8)),
        battery_tiles=battery_tiles,
        start_battery=draw(st.integers(0, battery_tiles)),
        disc_tiles=disc_tiles,
        start_disc=draw(st.integers(0, disc_tiles)),
        bonus_cards=tuple(draw(st.lists(st.sampled_from(BONUS_CARDS), max_size=8))),
        recovery=draw(st.sampled_from(["battery+disc", "battery"])),
        clash=draw(st.sampled_from(["stronger", "difference"])),
        contested_draw=draw(st.sampled_from(["coin", "nobody"])),
        counter_reflect=draw(st.integers(0, 4)),
        barrier_reduce=draw(st.integers(0, 3)),
        costs=tuple(costs),
        damage=tuple(damage),
        p1=draw(seat_overrides(battery_tiles, disc_tiles)),
        p2=draw(seat_overrides(battery_tiles, disc_tiles)),
    )


@st.composite
def seat_overrides(draw: st.DrawFn, battery_tiles: int, disc_tiles: int) -> dict:
    """A few of one seat's own numbers (Charge, Barrier and Move stay free, so the costs stay legal)."""
    choices = {
        "start_battery": st.integers(0, battery_tiles), "start_disc": st.integers(0, disc_tiles),
        "recovery": st.sampled_from(["battery+disc", "battery"]), "counter_reflect": st.integers(0, 4),
        "barrier_reduce": st.integers(0, 3), "damage.spark": st.integers(0, 4), "damage.ray": st.integers(0, 4),
        "cost.lightning": st.tuples(st.integers(0, 3), st.integers(0, 3)),
        "cost.copy": st.tuples(st.integers(0, 3), st.integers(0, 3)),
    }
    keys = draw(st.lists(st.sampled_from(sorted(choices)), max_size=3, unique=True))
    return {key: draw(choices[key]) for key in keys}


@settings(max_examples=150, deadline=None)
@given(rule_sets())
def test_toml_round_trip(rules: RuleSet) -> None:
    text = rules_to_toml(rules)
    assert rules_from_toml(text) == rules
    assert fingerprint(rules) in text


def test_toml_round_trip_through_a_file(tmp_path) -> None:
    rules = RuleSet(name='tricky "name" \\ é \'q\'', board="S*M", bonus_cards=(Card.COPY, Card.COPY),
                    costs=costs_with(move=(1, 1)), damage=damage_with(ray=3))
    path = tmp_path / "out.toml"
    path.write_text(rules_to_toml(rules), encoding="utf-8")
    assert load_rules(path) == rules
    default_text = rules_to_toml(DEFAULT)
    for key in canonical_mapping(DEFAULT):
        assert key in default_text  # every key present for a designer to edit
    assert "#" in default_text


@settings(max_examples=150, deadline=None)
@given(rule_sets())
def test_canonical_mapping_round_trip(rules: RuleSet) -> None:
    mapping = canonical_mapping(rules)
    assert json.loads(json.dumps(mapping)) == mapping
    assert rules_from_mapping(mapping) == rules
    assert set(mapping["cost"]) == {card.label for card in Card}
    assert set(mapping["damage"]) == {"spark", "lightning", "ray"}


def test_canonical_mapping_default() -> None:
    mapping = canonical_mapping(DEFAULT)
    assert mapping["bonus_cards"] == ["ray", "recovery", "trap", "copy"]
    assert mapping["cost"]["lightning"] == {"battery": 2, "disc": 0}
    assert mapping["cost"]["counter"] == {"battery": 0, "disc": 2}
    assert mapping["damage"] == {"spark": 1, "lightning": 2, "ray": 1}
    assert list(mapping)[:2] == ["name", "board"]


# ------------------------------------------------------------- fingerprint


def test_fingerprint_shape_and_stability() -> None:
    fp = fingerprint(DEFAULT)
    assert len(fp) == 12 and int(fp, 16) >= 0
    assert fingerprint(RuleSet()) == fp


def test_fingerprint_ignores_key_order_bonus_order_and_name() -> None:
    a = rules_from_toml('health = 5\nbonus_cards = ["trap", "ray", "copy"]\nname = "A"\n'
                        "cost.lightning = { battery = 3 }\n")
    b = rules_from_toml('cost.lightning = { disc = 0, battery = 3 }\nname = "B"\n'
                        'bonus_cards = ["copy", "trap", "ray"]\nhealth = 5\n')
    assert a != b  # the names differ ...
    assert fingerprint(a) == fingerprint(b)  # ... but the game is the same
    assert fingerprint(dataclasses.replace(DEFAULT, name="renamed")) == fingerprint(DEFAULT)


@pytest.mark.parametrize("override", [
    "board=S*M", "health=5", "battery_tiles=5", "start_battery=1", "disc_tiles=3", "start_disc=1",
    "bonus_cards=ray,trap", "bonus_cards=ray,recovery,trap,copy,copy", "recovery=battery",
    "clash=difference", "contested_draw=nobody", "counter_reflect=1", "barrier_reduce=2",
    "cost.lightning.battery=3", "cost.charge.disc=1", "damage.spark=2",
    "p1.cost.spark.battery=0", "p2.cost.spark.battery=0", "p1.damage.spark=2", "p1.start_battery=1",
    "p2.start_disc=1", "p1.recovery=battery", "p2.counter_reflect=1", "p1.barrier_reduce=0",
])
def test_fingerprint_changes_with_every_game_key(override: str) -> None:
    assert fingerprint(apply_overrides(DEFAULT, [override])) != fingerprint(DEFAULT)


def test_a_title_with_control_characters_is_refused():
    # Echoed to terminals: an escape sequence could rewrite the screen.
    with pytest.raises(RulesError, match="name: must be printable"):
        rules_from_toml('name = "evil\\u001b[2J"')
    with pytest.raises(RulesError, match="name"):
        rules_from_toml(f'name = "{"x" * 201}"')


def test_a_title_with_markup_and_quotes_is_kept_verbatim_and_never_changes_the_game():
    hostile = "<script>alert('x')</script> \" & é"
    rules = rules_from_toml(f"name = {json.dumps(hostile)}")
    assert rules.name == hostile
    assert fingerprint(rules) == fingerprint(RuleSet())


def test_a_sub_key_after_its_table_was_replaced_by_a_value_is_an_error():
    # Found by the fuzz test: `--set cost=` then `--set cost.lightning.battery=3`.
    with pytest.raises(RulesError, match="cost: must be a table"):
        apply_overrides(RuleSet(), ["cost=", "cost.lightning.battery=3"])


# --- hostile input: numbers past any game, nesting past any parser, files that are no files -------

OUT_OF_RANGE = {
    "a 23-digit health": ("health=99999999999999999999999", "health: must be an integer from 1 to 1000"),
    "a 20-digit cost": ("cost.lightning.battery=99999999999999999999",
                        "cost.lightning.battery: must be an integer from 0 to 1000"),
    "a damage past the cap": ("damage.spark=1001", "damage.spark: must be an integer from 0 to 1000"),
    "tiles past the cap": ("battery_tiles=4000", "battery_tiles: must be an integer from 0 to 1000"),
    "a 5,000-digit health": ("health=" + "9" * 5000, "health: a number too long"),
}


@pytest.mark.parametrize("override, expected", OUT_OF_RANGE.values(), ids=OUT_OF_RANGE.keys())
def test_a_number_out_of_range_is_refused_in_one_short_line_naming_key_and_range(override, expected) -> None:
    with pytest.raises(RulesError) as info:
        apply_overrides(RuleSet(), [override])
    message = str(info.value)
    assert expected in message and "\n" not in message and len(message) < 300, message


def test_the_largest_allowed_numbers_still_make_a_rule_set() -> None:
    rules = apply_overrides(RuleSet(), ["health=1000", "battery_tiles=1000", "cost.lightning.battery=1000"])
    assert (rules.health, rules.battery_tiles, rules.cost(Card.LIGHTNING)) == (1000, 1000, (1000, 0))


HOSTILE_FILES = {
    "a 23-digit health": ("health = 99999999999999999999999\n", "line 1: health: must be an integer from 1 to 1000"),
    "a 20-digit cost": ("[cost.lightning]\nbattery = 99999999999999999999\n",
                        "line 2: cost.lightning.battery: must be an integer from 0 to 1000"),
    "a 5,000-digit number": ("health = " + "9" * 5000 + "\n", "invalid TOML: a number too long"),
    "arrays 3,000 deep": ("a = " + "[" * 3000 + "]" * 3000 + "\n", "invalid TOML: tables or arrays nested too deeply"),
    "inline tables 3,000 deep": ("health = " + "{a=" * 3000 + "1" + "}" * 3000 + "\n",
                                 "invalid TOML: tables or arrays nested too deeply"),
    "a table header 3,000 deep": ("[" + ".".join(["health"] * 3000) + "]\n", "health: must be an integer"),
}


@pytest.mark.parametrize("text, expected", HOSTILE_FILES.values(), ids=HOSTILE_FILES.keys())
def test_a_hostile_rules_file_is_one_short_line_naming_the_file(text, expected, tmp_path) -> None:
    path = tmp_path / "hostile.toml"
    path.write_text(text)
    with pytest.raises(RulesError) as info:
        load_rules(path)
    message = str(info.value)
    assert message.startswith(f"{path}") and expected in message, message
    assert "\n" not in message and len(message) < 400 + len(str(path)), message


def test_a_byte_order_mark_is_no_part_of_the_rules(tmp_path) -> None:
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + b'board = "S*M"\nhealth = 2\n')
    assert load_rules(path) == apply_overrides(RuleSet(), ["board=S*M", "health=2"])


def test_only_a_regular_file_is_read_as_rules_and_a_fifo_never_blocks(tmp_path) -> None:
    import os
    import signal

    fifo = tmp_path / "rules.fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link.toml"
    link.symlink_to(fifo)
    previous = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("reading a FIFO as rules blocked"))
    signal.alarm(10)
    try:
        for path in (fifo, link, "/dev/zero"):
            with pytest.raises(RulesError, match="cannot read rules file: not a regular file"):
                load_rules(path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * (2 << 20) + "\n")
    with pytest.raises(RulesError, match="more than a rules file's"):
        load_rules(big)
