"""The Python API: each function's record, its agreement with the command
line's numbers, its errors, and the walkthrough in docs/python.md run as written."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pytest

from rules.charge_spark.cards import Card
from rules.charge_spark.config import RulesError, RuleSet, fingerprint
from rules.charge_spark.notation import PositionError, parse_position
from solver import api
from solver.answering import answer_at, lasting_at, query_json

WALKTHROUGH = Path(__file__).resolve().parent.parent / "docs" / "python.md"
TINY = {"board": "S*M", "health": 1, "battery_tiles": 2, "disc_tiles": 2, "bonus_cards": "ray,copy"}
SMALLEST = {"board": "SM", "health": 1, "bonus_cards": ""}


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """One cache for the module: each rule set is solved once."""
    return tmp_path_factory.mktemp("tables")


@pytest.fixture(scope="module")
def tiny_table(cache) -> api.Table:
    return api.solve(api.rules(**TINY), cache_dir=cache)


def probability(x: float) -> bool:
    return -1e-12 <= x <= 1 + 1e-12


def test_rules_takes_keywords_dotted_keys_mappings_and_files(tmp_path):
    tiny = api.rules(**TINY, **{"cost.lightning.battery": 3})
    assert (tiny.board, tiny.health, tiny.bonus_cards) == ("S*M", 1, (Card.RAY, Card.COPY))
    assert tiny.cost(Card.LIGHTNING) == (3, 0)
    assert api.rules() == RuleSet()
    assert api.rules(bonus_cards=["ray", Card.COPY]).bonus_cards == (Card.RAY, Card.COPY)
    assert api.rules(bonus_cards="").bonus_cards == ()
    assert api.rules(cost={"counter": {"disc": 1}}).cost(Card.COUNTER) == (0, 1)
    from_mapping = api.rules({"board": "SM", "cost": {"lightning": {"battery": 3}}}, health=2)
    assert (from_mapping.board, from_mapping.health, from_mapping.cost(Card.LIGHTNING)) == ("SM", 2, (3, 0))
    file = tmp_path / "rules.toml"
    file.write_text('board = "S*M"\nhealth = 1\n', encoding="utf-8")
    assert api.rules(file, health=2) == dataclasses.replace(RuleSet(), board="S*M", health=2)
    assert api.rules(api.rules(**TINY), health=2).board == "S*M"
    with pytest.raises(dataclasses.FrozenInstanceError):
        tiny.health = 2  # type: ignore[misc]


@pytest.mark.parametrize(("overrides", "named"), [
    ({"healt": 1}, "healt=1: healt: unknown key"),
    ({"health": 0}, "health=0: health: must be an integer"),
    ({"cost.lightning.batery": 3}, "cost.lightning.batery=3: cost.lightning.batery: unknown tile kind"),
    ({"bonus_cards": "ray,nope"}, "bonus_cards='ray,nope': bonus_cards: unknown card 'nope'"),
    ({"health": object()}, "health: cannot be given as a object"),
])
def test_a_bad_key_or_value_raises_one_line_naming_it(overrides, named):
    with pytest.raises(RulesError) as raised:
        api.rules(**overrides)
    assert str(raised.value).startswith(named)
    assert "\n" not in str(raised.value)


def test_a_bad_rules_file_or_argument_is_refused(tmp_path):
    with pytest.raises(RulesError, match="cannot read rules file"):
        api.rules(tmp_path / "missing.toml")
    with pytest.raises(TypeError, match="got int"):
        api.rules(3)  # type: ignore[arg-type]


def test_solve_gives_the_table_record(tiny_table, cache):
    assert tiny_table.fingerprint == fingerprint(api.rules(**TINY))
    assert tiny_table.states > 1000
    assert tiny_table.value == pytest.approx(0.5, abs=1e-9)  # the default start is the same for both seats
    assert tiny_table.certified and tiny_table.max_exploitability <= 1e-9
    assert tiny_table.path is not None and tiny_table.path.is_file() and tiny_table.path.parent == cache
    assert tiny_table.result.num_states >= 1
    again = api.solve(api.rules(**TINY), cache_dir=cache)
    assert again.reused and again.value == tiny_table.value and again.states == tiny_table.states
    with pytest.raises(dataclasses.FrozenInstanceError):
        tiny_table.value = 1.0  # type: ignore[misc]


def test_query_gives_the_numbers_of_query_json(tiny_table, cache):
    rule_set = tiny_table.rules
    for position in ("start", "b1 rest=spark / rest=move bonus=ray", "h1 b2 d2 p1 / h1 b0 d1 p0 rest=lightning"):
        answer = api.query(tiny_table, position)
        parsed = parse_position(position, rule_set)
        state, result, source, edge = answer_at(rule_set, parsed, str(cache), None, False)
        lasting = lasting_at(rule_set, parsed, result, str(cache), source, edge)
        expected = query_json(rule_set, answer.position, state, result, lasting)
        assert without_timings(answer.json) == without_timings(expected)  # each solve to the table's edge is timed anew
        assert (answer.value, answer.p1_win, answer.p2_win, answer.unending) == (
            expected["value"], expected["p1_win"], expected["p2_win"], expected["unending"])
        assert answer.p1_strategy == expected["p1_strategy"] and answer.p2_strategy == expected["p2_strategy"]
        assert (answer.exploitability, answer.certified, answer.epsilon) == (
            expected["exploitability"], expected["certified"], expected["epsilon"])
        for figure in (answer.value, answer.p1_win, answer.p2_win, answer.unending, *answer.p1_strategy.values(),
                       *answer.p2_strategy.values()):
            assert probability(figure)
        assert sum(answer.p1_strategy.values()) == pytest.approx(1) == sum(answer.p2_strategy.values())
        assert answer.p1_win + answer.p2_win + answer.unending == pytest.approx(1)


def without_timings(figures: dict) -> dict:
    return {**figures, "certificate": {k: v for k, v in figures["certificate"].items() if k != "seconds"}}


def test_query_at_the_start(tiny_table):
    start = api.query(tiny_table)
    assert start.position == api.query(tiny_table, "start").position
    assert start.value == pytest.approx(0.5, abs=1e-9) and start.p1_win == pytest.approx(start.p2_win)
    assert start.expected_length is not None and start.expected_length >= 1
    assert start.median_length is not None  # solve followed play from the start
    assert start.certified and start.exploitability <= 1e-9
    assert set(start.p1_strategy) <= {card.label for card in Card}


def test_query_of_rules_solves_and_stores_their_table(tmp_path, capsys):
    smallest = api.rules(**SMALLEST)
    first = api.query(smallest, cache_dir=tmp_path)
    assert "no stored table for these rules" in capsys.readouterr().err
    assert (tmp_path / f"{fingerprint(smallest)}.npz").is_file()
    assert without_timings(api.query(smallest, cache_dir=tmp_path).json) == without_timings(first.json)
    assert capsys.readouterr().err == ""  # read from the stored table


def test_query_refuses_a_bad_position(tiny_table):
    with pytest.raises(PositionError):
        api.query(tiny_table, "b1 / b2 / b3")
    with pytest.raises(TypeError):
        api.query("start")  # type: ignore[arg-type]


def test_report_writes_the_page_with_its_headline(tiny_table, cache, tmp_path):
    written = api.report(tiny_table.rules, tmp_path / "tiny.html", sections=["headline"], cache_dir=cache)
    assert written.path == tmp_path / "tiny.html" and "<html" in written.path.read_text(encoding="utf-8").lower()
    assert written.sections == ("headline",)
    assert written.fingerprint == tiny_table.fingerprint and written.states == tiny_table.states
    assert written.value == pytest.approx(tiny_table.value, abs=1e-12)
    assert all(probability(x) for x in (written.p1_win, written.p2_win, written.unending))
    assert written.p1_win + written.p2_win + written.unending == pytest.approx(1)
    assert written.certified and written.max_exploitability <= 1e-9
    with pytest.raises(RulesError, match="unknown section 'nope'"):
        api.report(tiny_table.rules, tmp_path / "other.html", sections=["nope"], cache_dir=cache)


def test_sweep_rows_become_a_dataframe(cache):
    swept = api.sweep(api.rules(**SMALLEST), **{"cost.lightning.battery": [1, 2]}, start_battery=[1, 2], workers=1,
                      cache_dir=cache)
    assert swept.keys == ("cost.lightning.battery", "start_battery")
    assert [(row["cost.lightning.battery"], row["start_battery"]) for row in swept.rows] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    for row in swept.rows:
        assert row["error"] is None and row["certified"]
        assert row["value"] == pytest.approx(0.5, abs=1e-9)
        assert all(probability(row[key]) for key in ("p1_win", "p2_win", "knock_out", "moon", "unending"))
        assert row["knock_out"] + row["moon"] + row["unending"] == pytest.approx(1)
        rules = api.rules(**{**SMALLEST, "cost.lightning.battery": row["cost.lightning.battery"],
                             "start_battery": row["start_battery"]})
        assert row["fingerprint"] == fingerprint(rules)
    frame = swept.to_dataframe()
    assert list(frame["start_battery"]) == [1, 2, 1, 2] and len(frame.columns) == len(swept.rows[0])


def test_a_bad_sweep_is_refused_before_solving():
    with pytest.raises(RulesError, match="healt"):
        api.sweep(api.rules(), healt=[1, 2])
    with pytest.raises(RulesError, match="nothing to sweep"):
        api.sweep(api.rules())


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)


def test_the_walkthrough_runs_as_written(tmp_path, monkeypatch):
    """Every ```python block of docs/python.md, in order, in one namespace (the tables in a fresh cache)."""
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks(WALKTHROUGH.read_text(encoding="utf-8"))
    assert len(blocks) >= 6
    namespace: dict = {}
    for number, block in enumerate(blocks, 1):
        exec(compile(block, f"docs/python.md block {number}", "exec"), namespace)
    assert namespace["table"].value == pytest.approx(0.5, abs=1e-9)
    assert namespace["variant"].value == pytest.approx(0.5, abs=1e-9)
    frame = namespace["frame"]
    assert list(frame["cost.counter.disc"]) == [0, 1, 2] and not frame["value"].isna().any()
    assert (tmp_path / "counter-cost.png").stat().st_size > 0
    assert (tmp_path / "tiny-report.html").is_file()
    assert not math.isnan(namespace["written"].value)


def test_the_docstring_examples_run(tmp_path, monkeypatch):
    import doctest

    monkeypatch.chdir(tmp_path)  # the report's example writes its page here
    failed, attempted = doctest.testmod(api, extraglobs={"api": api}, optionflags=doctest.ELLIPSIS)
    assert attempted >= 10 and failed == 0


def test_the_api_is_a_face_of_its_own_not_of_the_command_line():
    import ast

    tree = ast.parse(Path(api.__file__).read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not {name for name in imported if name and name.split(".")[-1] == "cli"}
