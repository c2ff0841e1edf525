"""`query` says when it solves, stores the rules' table it solved, and asks for
`solve` first rather than starting a long solve unasked."""

from __future__ import annotations

import re

from click.testing import CliRunner

from solver.cli import main, solve_command_line

SMALL = ["--set", "board=SM", "--set", "health=1", "--set", "bonus_cards="]  # about 5,000 states
# Health 2, so that P1 can start one Health down ("h1 / ", outside the start's table); solved in about a second.
HANDICAP = ["--set", "board=S*M", "--set", "health=2", "--set", "battery_tiles=2", "--set", "disc_tiles=2",
            "--set", "bonus_cards=ray,copy"]


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_the_first_query_says_it_solves_and_stores_the_table_for_the_next(tmp_path):
    first = run("query", "start", *SMALL, "--cache-dir", str(tmp_path))
    assert first.exit_code == 0, first.output
    line = first.stderr.splitlines()[0]
    assert re.fullmatch(r"charge-spark: no stored table for these rules: solving about [0-9,]+ states"
                        r" \((under|about) [0-9.]+ \w+\), stored for next time", line), line
    assert len(list(tmp_path.glob("*.npz"))) == 1
    second = run("query", "start", *SMALL, "--cache-dir", str(tmp_path))
    assert second.exit_code == 0, second.output
    assert "solving" not in second.stderr
    assert "from the solved table" in second.stdout
    assert second.stdout.split("\ncertificate")[0] == first.stdout.split("\ncertificate")[0]  # the same answer


def test_no_store_solves_without_storing(tmp_path):
    result = run("query", "start", *SMALL, "--cache-dir", str(tmp_path), "--no-store", "--json")
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("charge-spark: no stored table for these rules: solving about ")
    assert "not stored" in result.stderr.splitlines()[0]
    assert not list(tmp_path.glob("*.npz"))


def test_a_position_outside_the_stored_table_says_how_many_states_it_adds(tmp_path):
    assert run("solve", *HANDICAP, "--cache-dir", str(tmp_path)).exit_code == 0
    result = run("query", "h1 / ", *HANDICAP, "--cache-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    (line,) = result.stderr.splitlines()
    added = re.fullmatch(r"charge-spark: this position is outside the stored table: solving the ([0-9,]+) states?"
                         r" it adds \((under|about) [0-9.]+ \w+\), up to the table's edge", line)
    assert added and int(added[1].replace(",", "")) > 0, line
    assert "solved up to the states the stored table" in result.stdout


def test_rules_past_the_limit_ask_for_solve_first_in_one_line(tmp_path, monkeypatch):
    import solver.cli

    monkeypatch.setattr(solver.cli, "UNASKED_SOLVE_LIMIT", 100)  # the small rules' 5,000 states stand for 50 million
    result = run("query", "start", *SMALL, "--cache-dir", str(tmp_path))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("charge-spark: error: these rules have about ")
    assert (f"run charge-spark solve --set board=SM --set health=1 --set bonus_cards= --cache-dir {tmp_path} first,"
            " or pass --max-states") in result.stderr
    assert not list(tmp_path.glob("*.npz"))
    asked = run("query", "start", *SMALL, "--cache-dir", str(tmp_path), "--max-states", "100000")
    assert asked.exit_code == 0, asked.output
    assert len(list(tmp_path.glob("*.npz"))) == 1


def test_the_solve_command_named_is_the_users_own_and_can_be_pasted():
    assert solve_command_line("my rules.toml", ("board=S*M", "health=1"), None) == (
        "charge-spark solve --rules 'my rules.toml' --set 'board=S*M' --set health=1")
