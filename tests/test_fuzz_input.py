"""Random text into every user-facing parser: only the documented error, never
anything else, and on the command line one line and exit status 2."""

from __future__ import annotations

import os
import string
from pathlib import Path

import pytest
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


# --- hostile input found by a sweep: each one line and exit status 2, nothing written --------------

SMALL = ["--set", "board=S*M", "--set", "health=1"]


@pytest.mark.parametrize("text, field", [("h" + "9" * 5000 + " /", "health"), ("/ p" + "1" * 29, "progress"),
                                         ("b" + "0" * 10 + " /", "battery")])
def test_a_position_with_an_absurdly_long_number_names_the_field(text, field):
    with pytest.raises(PositionError) as info:
        parse_position(text, RULES)
    message = str(info.value)
    assert f"{field} has" in message and "digits" in message and len(message) < 200, message


@pytest.mark.parametrize("text", ["h1\n/", "h1 /\r", "h1\x1b[31m /", "\x00start"])
def test_a_position_with_a_control_character_is_refused(text):
    with pytest.raises(PositionError, match="control character"):
        parse_position(text, RULES)


def hostile_arguments(case: str, tmp_path: Path) -> list[str]:
    """The command line of hostile case `case`, with the files it needs made under `tmp_path`."""
    if case == "5,000-digit position":
        return ["query", "h" + "9" * 5000 + " /", *SMALL]
    if case == "newline in position":
        return ["query", "h1\n/", *SMALL]
    if case == "23-digit health":
        return ["query", "start", "--set", "health=99999999999999999999999"]
    if case == "20-digit cost":
        return ["solve", "--set", "cost.lightning.battery=99999999999999999999"]
    if case in ("23-digit health in a file", "tables 3,000 deep", "FIFO as rules"):
        path = tmp_path / "input" / "rules.toml"
        path.parent.mkdir()
        if case == "FIFO as rules":
            os.mkfifo(path)
        else:
            path.write_text("health = 99999999999999999999999\n" if case.startswith("23") else
                            "health = " + "{a=" * 3000 + "1" + "}" * 3000 + "\n")
        return ["solve", "--rules", str(path), *SMALL]
    if case == "FIFO as parts file":
        (tmp_path / "input").mkdir()
        os.mkfifo(tmp_path / "input" / "parts.json")
        return ["report", *SMALL, "--parts", str(tmp_path / "input" / "parts.json"), "--out",
                str(tmp_path / "input" / "report.html")]
    if case == "cache under a regular file":
        (tmp_path / "input").mkdir()
        (tmp_path / "input" / "file").write_text("")
        return ["solve", *SMALL, "--cache-dir", str(tmp_path / "input" / "file" / "cache")]
    if case == "cache that cannot be written":
        return ["solve", *SMALL, "--cache-dir", "/proc/sys"]
    if case == "lock file is a directory":
        rules = apply_overrides(RuleSet(), ["board=S*M", "health=1"])
        from rules.charge_spark.config import fingerprint

        (tmp_path / "input" / f".{fingerprint(rules)}.npz.lock").mkdir(parents=True)
        return ["solve", *SMALL, "--cache-dir", str(tmp_path / "input")]
    raise AssertionError(case)


HOSTILE_CASES = ["5,000-digit position", "newline in position", "23-digit health", "20-digit cost",
                 "23-digit health in a file", "tables 3,000 deep", "FIFO as rules", "FIFO as parts file",
                 "cache under a regular file",
                 "cache that cannot be written", "lock file is a directory"]


def listing(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


@pytest.mark.parametrize("case", HOSTILE_CASES)
def test_hostile_input_is_one_line_and_exit_2_with_nothing_written(case, tmp_path):
    if case == "cache that cannot be written" and not Path("/proc/sys").is_dir():
        pytest.skip("no /proc/sys here")
    arguments = hostile_arguments(case, tmp_path)
    before = listing(tmp_path)
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 2, (case, result.output, result.exception)
    assert result.stderr.startswith("charge-spark: error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.output and len(result.stderr) < 400, result.stderr
    assert listing(tmp_path) == before  # the default cache (under tmp_path) included
