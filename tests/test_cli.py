"""The command line: the answer's shape, the rules round trip, and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from rules.charge_spark.config import RuleSet, apply_overrides, fingerprint, load_rules
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.notation import format_position, parse_position
from rules.charge_spark.state import initial_position
from solver.cli import main
from solver.core.graph import build_graph

SMALL = ["--set", "board=SM", "--set", "health=1", "--set", "bonus_cards="]


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_query_json_has_every_documented_key():
    result = run("query", "start", *SMALL, "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    for key in ("rules", "fingerprint", "position", "value", "p1_win", "p2_win", "unending", "expected_length",
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


def test_query_expected_length_is_that_of_the_strategies_markov_chain():
    from solver.core.absorption import expected_length_and_distribution
    from solver.core.solve import solve_from

    answer = json.loads(run("query", "start", *SMALL, "--json").stdout)
    rules = apply_overrides(RuleSet(), [a for a in SMALL if a != "--set"])
    game = ChargeSparkGame(rules)
    code = game.encode(initial_position(rules))
    result = solve_from(game, [code])
    graph = build_graph(game, result.states)
    expected, _ = expected_length_and_distribution(graph, result.row_strategy, result.col_strategy, result.index_of(code), 1)
    assert answer["expected_length"] == pytest.approx(expected, rel=1e-9)
    assert answer["expected_length"] >= 2  # nobody reaches the moon or knocks out in one turn


def test_query_text_shows_value_strategies_matrix_and_certificate():
    result = run("query", "start", *SMALL)
    assert result.exit_code == 0, result.output
    out = result.stdout
    for needle in ("fingerprint", "value        0.5", "P1 wins", "P2 wins", "unending", "turns expected",
                   "P1 plays", "P2 plays", "stage matrix", "certificate", "exploitability"):
        assert needle in out


def test_query_json_gives_the_length_figures_and_where_play_stalls():
    answer = json.loads(run("query", "start", *SMALL, "--json").stdout)
    length = answer["length"]
    assert answer["unending"] == 0.0 and length["mean"] == answer["expected_length"]
    assert 2 <= length["median"] <= 2 * length["mean"]  # at most half of all games last twice the mean or more
    assert 0.0 <= length["p_beyond_200"] < 1e-9
    assert isinstance(answer["stalls"], list)
    rules = apply_overrides(RuleSet(), [a for a in SMALL if a != "--set"])
    for stall in answer["stalls"]:
        assert set(stall) == {"position", "code", "share", "exit_probability", "min_probability", "kind", "states"}
        assert stall["position"] == format_position(ChargeSparkGame(rules).decode(stall["code"]), rules)
        assert 0.01 <= stall["share"] <= 1.0 and 0.0 < stall["exit_probability"] <= 1.0
        assert stall["kind"] in ("standoff", "epsilon-optimal", "loop") and stall["states"] >= 1
    shares = [stall["share"] for stall in answer["stalls"]]
    assert shares == sorted(shares, reverse=True)


def test_query_text_gives_the_median_and_tail_beside_the_length_and_the_stalls():
    answer = json.loads(run("query", "start", *SMALL, "--json").stdout)
    lines = run("query", "start", *SMALL).stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("length "))
    assert lines[at + 1].split()[:8] == ["half", "of", "all", "games", "are", "over", "by", "turn"]
    assert f"by turn {answer['length']['median']};" in lines[at + 1] and "still going after 200 turns" in lines[at + 1]
    block = [line for line in lines if " at " in line and "exit " in line]
    assert [line.split(" at ", 1)[1] for line in block] == [stall["position"] for stall in answer["stalls"]]
    assert any(line.startswith("stalls ") for line in lines) == bool(answer["stalls"])


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


def test_rules_prints_one_seat_keys_in_their_seat_table_and_they_load_back(tmp_path):
    overrides = ["p1.cost.spark.battery=0", "p2.damage.spark=2", "p1.start_battery=1"]
    result = run("rules", *[arg for item in overrides for arg in ("--set", item)])
    assert result.exit_code == 0, result.output
    assert "[p1]\nstart_battery = 1\n[p1.cost]\nspark = { battery = 0, disc = 0 }" in result.stdout
    assert "[p2.damage]\nspark = 2" in result.stdout
    path = tmp_path / "r.toml"
    path.write_text(result.stdout)
    rules = load_rules(path)
    assert rules == apply_overrides(RuleSet(), overrides)
    assert f"fingerprint {fingerprint(rules)}" in result.stdout


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
    "a seat other than p1 and p2": (["query", "start", "--set", "p3.cost.spark.battery=0"],
                                    "--set p3.cost.spark.battery=0: p3: unknown seat"),
    "a key both seats share": (["rules", "--set", "p1.health=2"], "--set p1.health=2: p1.health: not a per-seat key"),
    "an impossible one-seat value": (["query", "start", "--set", "p2.start_battery=7"], "p2.start_battery"),
    "a bad one-seat key in a file's table": (["rules", "--rules", "__SEAT_FILE__"], "line 3: p1.board"),
}


@pytest.mark.parametrize("args,names", BAD.values(), ids=BAD.keys())
def test_bad_input_is_one_line_and_exit_two(args, names, tmp_path):
    if "__SEAT_FILE__" in args:
        path = tmp_path / "seat.toml"
        path.write_text('health = 2\n[p1]\nboard = "S*M"\n')
        args = [str(path) if arg == "__SEAT_FILE__" else arg for arg in args]
    result = run(*args)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and names in lines[0]
    assert "Traceback" not in result.output


def test_debug_flag_shows_the_traceback():
    result = run("--debug", "query", "h0 / h4")
    assert result.exit_code == 2
    assert "Traceback" in result.stderr


# --- solve and the table cache --------------------------------------------------


def test_solve_stores_a_table_that_query_answers_from(private_table_cache):
    solved = run("solve", *SMALL)
    assert solved.exit_code == 0, solved.output
    assert "value        0.500000000000" in solved.stdout and "(ok, bound" in solved.stdout
    tables = list(private_table_cache.glob("*.npz"))
    assert len(tables) == 1
    again = run("solve", *SMALL)
    assert "already solved" in again.stdout
    text = run("query", "start", *SMALL)
    assert "from the solved table" in text.stdout
    unreachable = run("query", "h1 b1 rest=spark / p0", *SMALL)  # hand-made: not in the table
    assert unreachable.exit_code == 0 and "from the solved table" not in unreachable.stdout


def test_a_query_from_a_stored_table_never_loads_the_compiler(private_table_cache):
    """Importing numba is most of a query's process start; a stored table's
    answer is one stage game from the readable engine and needs none of it."""
    import os
    import subprocess
    import sys

    assert run("solve", *SMALL).exit_code == 0
    script = (
        "import sys\n"
        "from solver.cli import main\n"
        f"main(['query', 'start', *{list(SMALL)!r}], standalone_mode=False)\n"
        "print('numba loaded' if 'numba' in sys.modules else 'numba not loaded')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=dict(os.environ), timeout=120)
    assert done.returncode == 0, done.stderr
    assert "from the solved table" in done.stdout
    assert done.stdout.strip().endswith("numba not loaded")


def test_a_query_of_a_stored_table_reads_the_starts_stalls_that_solve_kept(private_table_cache, monkeypatch):
    import solver.analysis.stalls
    from solver.analysis.results_cache import ResultsCache
    from solver.analysis.stalls import play_key

    assert run("solve", *SMALL).exit_code == 0
    rules = apply_overrides(RuleSet(), [a for a in SMALL if a != "--set"])
    game = ChargeSparkGame(rules)
    results = ResultsCache(private_table_cache, fingerprint(rules))
    kept = results.get(play_key(game.encode(initial_position(rules))))
    followed = []
    real = solver.analysis.stalls.follow_play
    monkeypatch.setattr(solver.analysis.stalls, "follow_play", lambda *args, **kw: followed.append(args) or real(*args, **kw))
    start = json.loads(run("query", "start", *SMALL, "--json").stdout)
    assert followed == [] and start["length"] == kept["length"]
    without_text = [{k: v for k, v in s.items() if k != "position"} for s in start["stalls"]]
    assert without_text == [{**{k: v for k, v in s.items() if k != "position"}, "code": s["position"]}
                            for s in kept["stalls"]]
    # Another position of the table: play followed through the stored table (too short to keep).
    position = "h1 b1 d0 p0 rest=charge / h1 b1 d0 p0 rest=charge"
    later = json.loads(run("query", position, *SMALL, "--json").stdout)
    assert len(followed) == 1 and later["length"]["mean"] == pytest.approx(later["expected_length"], rel=1e-12)
    results = ResultsCache(private_table_cache, fingerprint(rules))
    assert results.get(play_key(game.encode(parse_position(position, rules)))) is None


def test_a_large_stored_table_is_followed_only_when_asked(private_table_cache, monkeypatch):
    # Following play from a position of a large table opens all of it (half a minute at the
    # printed rules): a query leaves the median, the tail and the stalls out unless asked.
    import solver.analysis.stalls

    assert run("solve", *SMALL).exit_code == 0
    monkeypatch.setattr(solver.analysis.stalls, "KEPT_STATES", 1)
    position = "h1 b1 d0 p0 rest=charge / h1 b1 d0 p0 rest=charge"
    quick = json.loads(run("query", position, *SMALL, "--json").stdout)
    assert quick["stalls"] is None and quick["length"]["median"] is None
    assert quick["length"]["mean"] == pytest.approx(quick["expected_length"], rel=1e-12)
    assert "--follow-play" in run("query", position, *SMALL).stdout
    followed = json.loads(run("query", position, *SMALL, "--json", "--follow-play").stdout)
    assert isinstance(followed["stalls"], list) and followed["length"]["median"] >= 1


@pytest.mark.parametrize("said", ["by the system", "by numpy"])
def test_a_full_disk_is_one_line_and_keeps_the_stored_table(private_table_cache, monkeypatch, said):
    """numpy says a full disk in its own words, with no errno (a report's wild table met it, as
    "internal error: report: OSError: Not enough free space to write 536870928 bytes after offset
    2684354632"): the machine's doing all the same, not a bug."""
    import errno

    import solver.core.layered

    assert run("solve", *SMALL).exit_code == 0
    stored = {p.name: p.read_bytes() for p in private_table_cache.glob("*.npz")}

    def full_disk(*args, **kwargs):
        if said == "by numpy":
            raise OSError("Not enough free space to write 536870928 bytes after offset 2684354632")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(solver.core.layered.np, "save", full_disk)  # the solve's working files
    result = run("solve", "--force", *SMALL)
    assert result.exit_code == 2
    assert result.stderr.startswith("charge-spark: error: No space left on device") and "TMPDIR" in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in private_table_cache.glob("*.npz")} == stored


def test_a_solve_the_disk_has_no_room_to_store_still_answers_and_says_so(private_table_cache, monkeypatch):
    """With too little disk for the table, `solve` still prints its answer (it used to
    end in a traceback, reading the size of the table it had not written)."""
    import solver.tables

    monkeypatch.setattr(solver.tables, "room_to_store", lambda directory, size, held=0: False)
    result = run("solve", *SMALL)
    assert result.exit_code == 0, result.output
    assert "not storing the table" in result.stderr and "Traceback" not in result.output
    assert "table        not stored" in result.stdout and "value        0.5" in result.stdout
    assert not list(private_table_cache.glob("*.npz"))


def test_query_matches_between_cache_and_fresh_solve(tmp_path):
    cached_dir = tmp_path / "cached"
    assert run("solve", *SMALL, "--cache-dir", str(cached_dir)).exit_code == 0
    from solver.core.table_file import load_table, table_path
    from solver.storage import TABLE_FORMAT

    rules = apply_overrides(RuleSet(), [a for a in SMALL if a != "--set"])
    game = ChargeSparkGame(rules)
    key = fingerprint(rules)
    table = load_table(table_path(cached_dir, key), key, fmt=TABLE_FORMAT)
    position = format_position(game.decode(int(table.states[table.num_states // 3])), rules)
    from_table = json.loads(run("query", position, *SMALL, "--cache-dir", str(cached_dir), "--json").stdout)
    from_scratch = json.loads(run("query", position, *SMALL, "--cache-dir", str(tmp_path / "empty"), "--json").stdout)
    assert from_table["value"] == pytest.approx(from_scratch["value"], abs=1e-9)
    assert from_table["matrix"]["rows"] == from_scratch["matrix"]["rows"]
    np_table = from_table["matrix"]["values"]
    np_fresh = from_scratch["matrix"]["values"]
    assert all(a == pytest.approx(b, abs=1e-9) for ra, rb in zip(np_table, np_fresh) for a, b in zip(ra, rb))


def test_a_damaged_table_is_reported_moved_aside_and_recomputed(private_table_cache):
    assert run("solve", *SMALL).exit_code == 0
    (table,) = private_table_cache.glob("*.npz")
    data = bytearray(table.read_bytes())
    data[len(data) // 2] ^= 0xFF
    table.write_bytes(bytes(data))
    result = run("solve", *SMALL)
    assert result.exit_code == 0, result.output
    assert "warning" in result.stderr and "moved aside" in result.stderr and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1
    assert "already solved" not in result.stdout
    assert len(list(private_table_cache.glob("*.damaged-*"))) == 1
    assert "already solved" in run("solve", *SMALL).stdout  # the recomputed table is good


def test_two_solves_of_the_same_rules_at_once(private_table_cache):
    import os
    import subprocess
    import sys

    command = [sys.executable, "-m", "solver.cli", "solve", *SMALL]
    env = dict(os.environ)
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outputs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert sum("already solved" in out for out, _ in outputs) == 1  # the second waited and reused
    assert len(list(private_table_cache.glob("*.npz"))) == 1
    assert not list(private_table_cache.glob("*.tmp"))


@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_an_interrupted_solve_saves_nothing_and_says_so(private_table_cache, signum):
    import os
    import signal
    import subprocess
    import sys
    import time

    # Big enough (minutes) that the signal always lands mid-run, compiled or not.
    command = [sys.executable, "-m", "solver.cli", "solve", "--set", "board=S*M", "--set", "health=2"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    time.sleep(4.0)
    proc.send_signal(getattr(signal, signum))
    started = time.monotonic()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    assert time.monotonic() - started < 30  # promptly
    last = err.strip().splitlines()[-1]
    assert last.startswith("charge-spark: interrupted; no table was saved; the ranks solved so far are kept in ")
    assert last.endswith(": solve again to resume")
    assert "Traceback" not in err
    # No table; only the ranks finished, to resume from.
    assert [p.name for p in private_table_cache.glob("*") if p.suffix != ".lock"] in ([], ["resume"])


@pytest.mark.parametrize("where", ["bellman_residual", "write_arrays"])
def test_a_stop_whose_interrupt_was_lost_still_saves_no_table(private_table_cache, monkeypatch, where):
    # A signal landing inside a finalizer loses the KeyboardInterrupt its handler raises; the
    # handler's record of it must stop the solve all the same: before the next layer, or the table's storing.
    import solver.core.layered
    import solver.core.table_file
    from solver.core import interruption

    module = solver.core.layered if where == "bellman_residual" else solver.core.table_file
    original = getattr(module, where)

    def asked_meanwhile(*args, **kwargs):
        interruption.ask_to_stop()  # what `_interrupt` records; its exception is the one lost
        return original(*args, **kwargs)

    monkeypatch.setattr(module, where, asked_meanwhile)
    try:
        result = run("solve", *SMALL, "--workers", "1")
    finally:
        interruption.forget()
    assert result.exit_code == 130, result.output
    assert result.stderr.strip().splitlines()[-1].startswith("charge-spark: interrupted; no table was saved")
    assert not list(private_table_cache.glob("*.npz")) and not list(private_table_cache.glob(".*.tmp"))


def test_a_solve_that_would_not_fit_in_memory_is_refused_before_building(monkeypatch):
    import solver.answering
    import solver.core.resources
    import solver.tables

    memory = 1000 * solver.core.resources.layered_bytes_per_state()  # 90% of it holds 900 states
    monkeypatch.setattr(solver.core.resources, "available_memory", lambda: memory)
    # An estimate that undercounts: the enumeration's own guard still refuses.
    monkeypatch.setattr(solver.answering, "estimate_reachable", lambda rules, position: 10)
    monkeypatch.setattr(solver.tables, "estimate_reachable", lambda rules: 10)  # the table's solve asks it again
    result = run("query", "start", *SMALL)
    assert result.exit_code == 2
    note, error = result.stderr.splitlines()  # what the query said it would solve, then why it could not
    assert note.startswith("charge-spark: no stored table for these rules: solving about 10 states")
    assert error.startswith("charge-spark: error: more than 900 reachable states")
    assert "GB of memory available" in error
    assert "reachable states (limit" in run("query", "start", *SMALL, "--max-states", "10").stderr


def test_a_solve_keeps_the_starts_stalls_only_where_following_play_fits(private_table_cache, monkeypatch):
    import solver.cli
    from solver.analysis.results_cache import ResultsCache
    from solver.analysis.stalls import play_key

    monkeypatch.setattr(solver.cli, "follow_play_fits", lambda states: False)  # a laptop's memory, say
    solved = run("solve", *SMALL)
    assert solved.exit_code == 0 and "Traceback" not in solved.output
    assert "the length distribution and stalls from the start were not kept" in solved.stderr
    assert "'query start --follow-play' computes them" in solved.stderr
    rules = apply_overrides(RuleSet(), [a for a in SMALL if a != "--set"])
    code = ChargeSparkGame(rules).encode(initial_position(rules))
    assert ResultsCache(private_table_cache, fingerprint(rules)).get(play_key(code)) is None
    assert len(list(private_table_cache.glob("*.npz"))) == 1  # the table itself is stored all the same


def test_following_play_is_planned_at_its_measured_memory(monkeypatch):
    import solver.cli
    import solver.core.resources

    per_state = solver.core.resources.FOLLOW_PLAY_BYTES_PER_STATE
    monkeypatch.setattr(solver.core.resources, "available_memory", lambda: 1000 * per_state)
    assert solver.cli.follow_play_fits(900) and not solver.cli.follow_play_fits(901)


# --- bugs are one line; outputs are written, never replaced; a stopped report says so ----------------


def test_a_bug_is_one_line_naming_the_command_and_exit_one(monkeypatch):
    import errno

    import solver.cli

    for error in (ZeroDivisionError("boom\nsecond line"), OSError(errno.EBADF, "Bad file descriptor")):
        def broken(rules, error=error):
            raise error

        monkeypatch.setattr(solver.cli, "rules_to_toml", broken)
        result = run("rules")
        assert result.exit_code == 1, result.output
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        assert result.stderr.startswith(f"charge-spark: internal error: rules: {type(error).__name__}: ")
        assert result.stderr.endswith("; run with --debug for the traceback\n")
        debug = run("--debug", "rules")
        assert debug.exit_code == 1 and "Traceback" in debug.stderr
        assert debug.stderr.splitlines()[-1].startswith("charge-spark: internal error: rules: ")


def test_output_paths_that_are_not_regular_files_are_written_through_not_replaced(tmp_path):
    import os
    import stat
    import threading

    done = run("export-nfg", "start", *SMALL, "-o", "/dev/null")
    assert done.exit_code == 0, done.output
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    read: list[bytes] = []
    reader = threading.Thread(target=lambda: read.append(fifo.read_bytes()))
    reader.start()
    done = run("export-nfg", "start", *SMALL, "-o", str(fifo))
    reader.join(timeout=60)
    assert done.exit_code == 0, done.output
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and read[0].startswith(b"NFG 1 R")
    target = tmp_path / "kept" / "start.nfg"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "link.nfg"
    link.symlink_to(target)
    done = run("export-nfg", "start", *SMALL, "-o", str(link))
    assert done.exit_code == 0, done.output
    assert link.is_symlink() and target.read_text().startswith("NFG 1 R")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept", "link.nfg", "out.fifo"]


@pytest.mark.parametrize("stop", ["failed", "interrupted"])
def test_the_partial_page_of_a_stopped_report_says_so_at_its_top(tmp_path, monkeypatch, stop):
    import solver.report.build
    import solver.report.render

    def build_then_stop(*args, on_partial, **kwargs):
        on_partial(object())
        if stop == "failed":
            raise ZeroDivisionError("the solve broke")
        raise KeyboardInterrupt

    monkeypatch.setattr(solver.report.build, "build_report", build_then_stop)
    monkeypatch.setattr(solver.report.render, "render_report",
                        lambda report: "<!DOCTYPE html>\n<html>\n<body>\n<h1>Charge &amp; Spark</h1>\n</body></html>\n")
    out = tmp_path / "r.html"
    result = run("report", *SMALL, "--out", str(out))
    assert result.exit_code == (1 if stop == "failed" else 130), result.output
    page = (tmp_path / "r.partial.html").read_text()
    top = page.split("<h1>")[0]
    assert 'id="stopped"' in top and "Incomplete: the report run" in top
    assert ("failed: the solve broke" if stop == "failed" else "was interrupted") in top
    assert not out.exists()


def test_solve_on_one_or_two_workers_stores_the_same_table_and_says_how_hurried_play_ended(tmp_path):
    from solver.core.result import ARRAY_FIELDS
    from solver.core.table_file import table_path
    from solver.tables import TABLE_FORMAT, load_table

    rules = ["--set", "board=S*M", "--set", "health=1", "--set", "battery_tiles=2", "--set", "disc_tiles=2",
             "--set", "bonus_cards=ray"]
    key = fingerprint(apply_overrides(RuleSet(), [rules[i + 1] for i in range(0, len(rules), 2)]))
    tables = []
    for workers in ("1", "2"):
        cache = tmp_path / workers
        result = run("solve", *rules, "--cache-dir", str(cache), "--workers", workers)
        assert result.exit_code == 0, result.output
        assert "rounds       hurried play's strategy iteration" in result.stdout
        assert "stopped at the cap" in result.stdout and "warning" not in result.output
        tables.append(load_table(table_path(cache, key), key, fmt=TABLE_FORMAT))
    for name in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(tables[0], name), getattr(tables[1], name), err_msg=name)
    assert tables[0].hurried_rounds == tables[1].hurried_rounds and "capped" not in tables[0].hurried_rounds
    assert run("solve", *SMALL, "--workers", "0").exit_code == 2  # one line, no traceback


@pytest.mark.parametrize("command", [["query", "start"], ["rules"], ["sweep", "--grid", "counter_reflect=1,2", "--max-states", "10"]])
@pytest.mark.parametrize("together,hint", [
    ("board=S*M health=1", "one --set per key: --set 'board=S*M' --set health=1"),
    ("health=1 board=S*M", "one --set per key: --set health=1 --set 'board=S*M'"),
])
def test_several_keys_in_one_set_get_a_one_line_hint(command, together, hint):
    result = run(*command, "--set", together)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"charge-spark: error: --set {together}: ")
    assert lines[0].endswith(f"; {hint}")


def test_a_set_of_one_key_whose_value_holds_spaces_gets_no_hint():
    from rules.charge_spark.config import one_set_per_key_hint

    assert one_set_per_key_hint("name=a b=c") is None  # b is no key: a title with spaces
    assert one_set_per_key_hint("board=S*M") is None
    result = run("query", "start", "--set", "board=S*X health")
    assert result.exit_code == 2 and "one --set per key" not in result.stderr


def test_report_help_lists_every_section():
    from solver.report.build import SECTIONS

    shown = " ".join(run("report", "--help").stdout.split())
    listed = shown.split("Only these sections (", 1)[1].split(";", 1)[0]
    assert [name.strip() for name in listed.split(",")] == list(SECTIONS)
