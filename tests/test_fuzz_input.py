"""Random text into every user-facing parser: only the documented error, never
anything else, and on the command line one line and exit status 2."""

from __future__ import annotations

import string

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rules.charge_spark.cards import UnknownCardError
from rules.charge_spark.config import RulesError, RuleSet, apply_overrides, rules_from_toml
from rules.charge_spark.notation import PositionError, parse_position
from solver.cli import main

RULES = apply_overrides(RuleSet(), ["board=S*M", "health=2"])
# Text that looks like the notation often enough to reach the deep checks.
TOKENS = ["h1", "h0", "h9", "b2", "b-1", "d0", "d99", "p1", "p7", "rest=", "rest=spark", "rest=copy>ray",
          "rest=copy>copy", "-x", "--set", "bonus=", "bonus=ray,trap", "bonus=fire", "/", "//", "start", "=", ",", " ", "x"]
notation_text = st.one_of(
    st.text(max_size=40),
    st.lists(st.sampled_from(TOKENS), max_size=12).map(" ".join),
)
toml_text = st.one_of(
    st.text(max_size=60),
    st.lists(
        st.sampled_from([
            'board = "S*M"', "health = 0", "health = 3", 'health = "x"', "[cost.lightning]", "battery = -1",
            "disc = 2", "[damage]", "spark = 9", 'bonus_cards = ["ray", "fire"]', "bonus_cards = 3",
            'recovery = "battery"', 'clash = "maybe"', "start_battery = 9", "battery_tiles = 0", "[x]",
            "name = 1", 'name = "<script>"', "= 3", "[cost]", "charge = 1", "nonsense",
        ]),
        max_size=8,
    ).map("\n".join),
)
override_text = st.one_of(
    st.text(max_size=30),
    st.builds(
        lambda k, v: f"{k}={v}",
        st.sampled_from(["health", "board", "cost.lightning.battery", "damage.spark", "bonus_cards",
                         "cost", "cost.fire.battery", "recovery", "x.y.z", "", "start_disc"]),
        st.text(alphabet=string.printable, max_size=12),
    ),
)


@settings(max_examples=400, deadline=None)
@given(notation_text)
def test_position_parser_raises_only_its_error(text):
    try:
        parse_position(text, RULES)
    except (PositionError, UnknownCardError):
        pass


@settings(max_examples=400, deadline=None)
@given(toml_text)
def test_rules_loader_raises_only_its_error(text):
    try:
        rules_from_toml(text)
    except RulesError:
        pass


@settings(max_examples=400, deadline=None)
@given(st.lists(override_text, max_size=3))
def test_overrides_raise_only_their_error(overrides):
    try:
        apply_overrides(RuleSet(), overrides)
    except RulesError:
        pass


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(notation_text, st.lists(override_text, max_size=2))
def test_command_line_answers_or_says_one_line(position, overrides):
    args = ["query", "--max-states", "1", position]
    for item in overrides:
        args += ["--set", item]
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (0, 2), (args, result.output, result.exception)
    if result.exit_code == 2:
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.output, (args, result.output)
