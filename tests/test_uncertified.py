"""A certificate over its bound is never silent: `solve` exits 3 naming the
states, and every figure read from such a table carries the mark."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from click.testing import CliRunner

import solver.core.solve
from solver.certificate import CERTIFICATE_BOUND, certificate_status
from solver.cli import main

SMALL = ["--set", "board=SM", "--set", "health=1", "--set", "bonus_cards="]
EPSILON = 1e-3  # what an epsilon-optimal strategy of an Everett game leaves, about


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def loosened(result, states: int = 2):
    """`result` with P2's guarantee loosened by `EPSILON` at its first `states` states:
    what a solve that is epsilon-optimal there reports."""
    p2 = np.array(result.p2_guarantee, copy=True)
    p2[:states] += EPSILON * np.arange(1, states + 1) / states
    return dataclasses.replace(result, p2_guarantee=p2)


@pytest.fixture
def uncertified_solves(monkeypatch):
    """Every solve from here on reports strategies over the bound at two states."""
    real = solver.core.solve.solve_from
    monkeypatch.setattr(solver.core.solve, "solve_from", lambda *args, **kw: loosened(real(*args, **kw)))


def test_certified_means_at_most_the_bound():
    assert certificate_status(CERTIFICATE_BOUND).certified
    assert certificate_status(0.0).text.startswith("certified")
    status = certificate_status(2.5e-1, 3)
    assert not status.certified and status.epsilon == 2.5e-1
    assert status.text == "not certified: epsilon-optimal within 2.50e-01 (bound 1e-09; 3 states over the bound)"
    assert status.as_json() == {"certified": False, "epsilon": 2.5e-1, "states_over_bound": 3}
    unknown = certificate_status(float("nan"))
    assert not unknown.certified and not unknown.known and "unknown" in unknown.text


def test_solve_of_an_uncertified_table_exits_3_naming_the_states_and_stores_it(uncertified_solves,
                                                                              private_table_cache):
    solved = run("solve", *SMALL)
    assert solved.exit_code == 3, solved.output
    assert "NOT CERTIFIED, bound 1e-09" in solved.stdout
    assert "not certified: epsilon-optimal within 1.00e-03 (bound 1e-09; 2 states over the bound)" in solved.stdout
    named = [line for line in solved.stdout.splitlines() if "  at h" in line]
    assert [line.split()[0] for line in named] == ["1.00e-03", "5.00e-04"]  # the worst first
    assert "(not certified)" in solved.stdout.splitlines()[3]
    assert len(list(private_table_cache.glob("*.npz"))) == 1  # stored all the same
    again = run("solve", *SMALL)  # read back: the mark comes from the stored table's own certificate
    assert again.exit_code == 3 and "already solved" in again.stdout
    assert "2 states over the bound" in again.stdout


def test_query_of_an_uncertified_table_shows_the_mark(uncertified_solves):
    assert run("solve", *SMALL).exit_code == 3
    text = run("query", "start", *SMALL)
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    value = next(i for i, line in enumerate(lines) if line.startswith("value "))
    assert lines[value].endswith("(to P1) (not certified)")
    assert lines[value + 1] == "certificate  NOT CERTIFIED: epsilon-optimal within 1.00e-03 (bound 1e-09)"
    answer = json.loads(run("query", "start", *SMALL, "--json").stdout)
    assert answer["certified"] is False and answer["epsilon"] == pytest.approx(EPSILON)


def test_a_certified_table_is_not_marked():
    solved = run("solve", *SMALL)
    assert solved.exit_code == 0 and "NOT CERTIFIED" not in solved.stdout
    assert "not certified" not in run("query", "start", *SMALL).stdout
    answer = json.loads(run("query", "start", *SMALL, "--json").stdout)
    assert answer["certified"] is True and answer["epsilon"] <= CERTIFICATE_BOUND


def test_sweep_rows_of_an_uncertified_table_show_the_mark(uncertified_solves, tmp_path):
    import csv
    import io

    from rules.charge_spark.config import RuleSet, apply_overrides
    from solver.sweep import CsvRows, grid_points, parse_grid, solve_row
    from solver.sweep_page import sweep_page

    rules = apply_overrides(RuleSet(), [a for a in SMALL if a != "--set"])
    row = solve_row(rules, str(tmp_path / "cache"), None)
    assert row.ok and not row.certificate.certified
    stream = io.StringIO()
    CsvRows(stream, []).write(row)
    written = next(csv.DictReader(io.StringIO(stream.getvalue())))
    assert float(written["max_exploitability"]) == pytest.approx(EPSILON)
    assert written["certificate"] == "not certified: epsilon-optimal within 1.00e-03 (bound 1e-09)"
    axes = [parse_grid("board=SM")]
    page = sweep_page("t", axes, grid_points(rules, axes), [row])
    assert "<td>0.5 (not certified)</td>" in page
    assert "epsilon-optimal within 1.00e-03" in page
