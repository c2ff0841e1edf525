"""The command line: the answer's shape, the rules round trip, and bad input."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rules.charge_spark.config import RuleSet, apply_overrides, load_rules
from solver.cli import main

SMALL = ["--set", "board=SM", "--set", "health=1", "--set", "bonus_cards="]


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_query_json_has_every_documented_key():
    result = run("query", "start", *SMALL, "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    for key in ("rules", "fingerprint", "position", "value", "p1_win", "p2_win", "unending",
                "p1_strategy", "p2_strategy", "matrix", "exploitability"):
        assert key in answer
    assert answer["value"] == pytest.approx(0.5, abs=1e-9)
    assert answer["exploitability"] <= 1e-9
    assert answer["p1_win"] + answer["p2_win"] + answer["unending"] == pytest.approx(1.0)
    assert sum(answer["p1_strategy"].values()) == pytest.approx(1.0)
    matrix = answer["matrix"]
    assert list(answer["p1_strategy"]) == matrix["rows"]
    assert list(answer["p2_strategy"]) == matrix["cols"]
    assert len(matrix["values"]) == len(matrix["rows"])
    assert all(len(row) == len(matrix["cols"]) for row in matrix["values"])
    assert answer["rules"]["board"] == "SM" and answer["position"].startswith("h1 b2 d0 p0")


def test_query_text_shows_value_strategies_matrix_and_certificate():
    result = run("query", "start", *SMALL)
    assert result.exit_code == 0, result.output
    out = result.stdout
    for needle in ("fingerprint", "value        0.5", "P1 wins", "P2 wins", "unending",
                   "P1 plays", "P2 plays", "stage matrix", "certificate", "exploitability"):
        assert needle in out


def test_query_of_a_written_position_normalises_it():
    result = run("query", "h1 b1 rest=spark / p0", *SMALL, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["position"] == "h1 b1 d0 p0 rest=spark / h1 b2 d0 p0 rest=-"


def test_rules_prints_toml_that_loads_back(tmp_path):
    result = run("rules", "--set", "cost.lightning.battery=3", "--set", "board=S*M")
    assert result.exit_code == 0
    path = tmp_path / "r.toml"
    path.write_text(result.stdout)
    assert load_rules(path) == apply_overrides(RuleSet(), ["cost.lightning.battery=3", "board=S*M"])


def test_rules_file_and_set_combine(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text('board = "SM"\nhealth = 1\nbonus_cards = []\n')
    by_file = json.loads(run("query", "start", "--rules", str(path), "--json").stdout)
    by_set = json.loads(run("query", "start", *SMALL, "--json").stdout)
    assert by_file["fingerprint"] == by_set["fingerprint"]
    assert by_file["value"] == pytest.approx(by_set["value"], abs=1e-12)


BAD = {
    "unknown card": (["query", "h3 rest=fireball / start"], "fireball"),
    "malformed position": (["query", "h3 / h4 / h2"], "/"),
    "impossible position": (["query", "h0 / h4"], "h0"),
    "unknown token": (["query", "x7 / h4"], "x7"),
    "unknown rules key": (["query", "start", "--set", "helth=3"], "helth"),
    "wrong type": (["query", "start", "--set", "health=many"], "health"),
    "impossible board": (["query", "start", "--set", "board=S*X"], "board"),
    "missing rules file": (["query", "start", "--rules", "/nonexistent/rules.toml"], "nonexistent"),
    "set without =": (["query", "start", "--set", "health"], "health"),
}


@pytest.mark.parametrize("args,names", BAD.values(), ids=BAD.keys())
def test_bad_input_is_one_line_and_exit_two(args, names):
    result = run(*args)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and names in lines[0]
    assert "Traceback" not in result.output


def test_debug_flag_shows_the_traceback():
    result = run("--debug", "query", "h0 / h4")
    assert result.exit_code == 2
    assert "Traceback" in result.stderr
