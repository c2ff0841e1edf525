"""Charge & Spark from Python: make rules, solve them, ask about a position,
write the report, sweep a key. Each function returns a frozen record.

    >>> from solver import api
    >>> tiny = api.rules(board="S*M", health=1, bonus_cards="")
    >>> table = api.solve(tiny)
    >>> round(api.query(table, "start").value, 9)
    0.5

A face over the same functions as the command line and the explorer
(`answering`, `tables`, `summary`, `sweep`, `report.build`): the numbers are
those `charge-spark query --json` prints. Bad input raises the project's own
errors (`RulesError`, `PositionError`, ...; `solver.user_errors.USER_ERRORS`),
whose message is one line. Warnings and notes (a solve about to start, an
uncertified table) go to stderr as the command line prints them.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rules.charge_spark.cards import Card
from rules.charge_spark.config import RulesError, RuleSet, apply_overrides, fingerprint, load_rules, rules_from_mapping
from rules.charge_spark.game import ChargeSparkGame, ReferenceChargeSparkGame
from rules.charge_spark.notation import format_position, parse_position, validate_position
from rules.charge_spark.state import Position, initial_position
from rules.charge_spark.turn import KNOCK_OUT, MOON

from .answering import UNASKED_SOLVE_LIMIT, answer_at, lasting_at, note_on_stderr, query_json, warn_on_stderr
from .certificate import table_certificate
from .core.outcome import Outcome, Seat, kind_probability, terminal_outcomes, win_probability
from .core.resources import usable_cores
from .core.result import SolveResult
from .core.table_file import table_path
from .storage import check_cache_dir, default_cache_dir
from .sweep import GridAxis, SweepRow, grid_points, outcome_labels, run_sweep
from .tables import solved_table, stored_part

if TYPE_CHECKING:  # pandas is needed only by `Sweep.to_dataframe`
    import pandas

    from .report.build import Report as BuiltReport

__all__ = ["Answer", "Report", "Sweep", "Table", "query", "report", "rules", "solve", "sweep"]

PathLike = str | os.PathLike[str]


# ------------------------------------------------------------------- rules


def rules(path_or_mapping: PathLike | Mapping[str, Any] | RuleSet | None = None, **overrides: Any) -> RuleSet:
    """A rule set: the printed rules, a rules file (TOML), a TOML-shaped
    mapping or a `RuleSet`, with `overrides` applied as `--set` applies them.

    A key is a rules key, dotted for costs and damage (pass those with
    `**{...}`); a value is a Python value (a card list may be one string,
    "ray,copy"). A bad key or value raises `RulesError` with one line naming it.

        >>> tiny = rules(board="S*M", health=1, battery_tiles=2, disc_tiles=2, bonus_cards="ray,copy")
        >>> cheap = rules(tiny, **{"cost.counter.disc": 1})
        >>> from rules.charge_spark.cards import Card
        >>> cheap.cost(Card.COUNTER)
        (0, 1)
    """
    base = _base_rules(path_or_mapping)
    arguments = {key: f"{key}={_toml_value(key, value)}" for key, value in overrides.items()}
    try:
        return apply_overrides(base, arguments.values())
    except RulesError as error:
        # Named as the call wrote it, not as `--set` would.
        written = {f"--set {argument}": f"{key}={overrides[key]!r}" for key, argument in arguments.items()}
        raise error.located(written.get(error.source or "", "rules(...)")) from None


def _base_rules(given: PathLike | Mapping[str, Any] | RuleSet | None) -> RuleSet:
    if given is None:
        return RuleSet()
    if isinstance(given, RuleSet):
        return given
    if isinstance(given, Mapping):
        return rules_from_mapping(given)
    if isinstance(given, (str, os.PathLike)):
        return load_rules(given)
    raise TypeError(f"expected a rules file, a mapping or a RuleSet, got {type(given).__name__}")


def _toml_value(key: str, value: Any) -> str:
    """`value` written as the VALUE of `--set KEY=VALUE` (TOML)."""
    if isinstance(value, Card):
        return json.dumps(value.label)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml_value(key, v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(key, item) for item in value) + "]"
    raise RulesError(f"cannot be given as a {type(value).__name__}: use a number, a string, a list or a dict", key=key)


# ------------------------------------------------------------------- solve


@dataclass(frozen=True, eq=False)
class Table:
    """A solved rule set: its table's size, the value at the start, the
    certificate, and where it is stored (None: not stored, for want of disk)."""

    rules: RuleSet
    fingerprint: str
    states: int
    value: float  # at the start, to P1
    max_exploitability: float  # over every state of the table: the certificate
    certified: bool  # max_exploitability within the bound (solver.certificate.CERTIFICATE_BOUND)
    path: Path | None
    reused: bool  # loaded from the cache rather than solved now
    cache_dir: Path
    result: SolveResult = field(repr=False)  # the engine's own record, for what the fields above leave out


def solve(rule_set: RuleSet, cache_dir: PathLike | None = None, workers: int | None = None, *,
          force: bool = False, max_states: int | None = None) -> Table:
    """The table of every state reachable from the start, as `charge-spark
    solve` makes it: loaded from the cache (`cache_dir`, default
    `$CHARGE_SPARK_CACHE` or ~/.cache/charge-spark/tables) when stored there,
    else solved on `workers` processes (default: every core) and stored.

        >>> table = solve(rules(board="S*M", health=1, bonus_cards=""))
        >>> round(table.value, 9), table.certified
        (0.5, True)
    """
    cache = _cache_dir(cache_dir)
    key = fingerprint(rule_set)
    path = table_path(cache, key)
    code = ChargeSparkGame(rule_set).encode(initial_position(rule_set))
    # Already solved: the start's part of the table is all the record needs.
    result = None if force else stored_part(path, key, code, ReferenceChargeSparkGame(rule_set), warn_on_stderr)
    reused, stored = True, True
    if result is None:
        table = solved_table(rule_set, cache, force=force, max_states=max_states, warn=warn_on_stderr,
                             workers=workers or usable_cores())
        result, reused, stored = table.result, table.reused, table.stored
        if not reused:
            _keep_length_and_stalls(rule_set, code, result, cache)
    status = table_certificate(result)
    return Table(
        rules=rule_set,
        fingerprint=key,
        states=result.table_states,
        value=float(result.values[result.index_of(code)]),
        max_exploitability=math.nan if status.epsilon is None else status.epsilon,
        certified=status.certified,
        path=path if stored else None,
        reused=reused,
        cache_dir=cache,
        result=result,
    )


def _keep_length_and_stalls(rule_set: RuleSet, code: int, result: SolveResult, cache: Path) -> None:
    """Follows play from the start while the table is at hand, as `solve` does, where it fits in memory:
    a query of the start then reads the length's distribution and the stalls."""
    from .analysis.stalls import keep_length_and_stalls
    from .core.resources import FOLLOW_PLAY_BYTES_PER_STATE, states_that_fit

    fit = states_that_fit(FOLLOW_PLAY_BYTES_PER_STATE)
    if fit is None or result.num_states <= fit:
        keep_length_and_stalls(rule_set, code, result, cache)


def _cache_dir(cache_dir: PathLike | None) -> Path:
    if cache_dir is None:
        return default_cache_dir()
    check_cache_dir(cache_dir)
    return Path(cache_dir)


# ------------------------------------------------------------------- query


@dataclass(frozen=True, eq=False)
class Answer:
    """Optimal play at one position, the figures of `charge-spark query --json`.

    Win probabilities, the length and the strategies belong to the
    strategies the table holds (hurried play); the value does not."""

    rules: RuleSet
    position: str  # in the spec's notation
    value: float  # to P1
    p1_win: float
    p2_win: float
    unending: float
    outcomes: dict[str, float]  # each way the game ends -> probability
    expected_length: float | None  # turns until the end, given that it ends (None: it never does)
    median_length: int | None  # turns by which half of all games are over (None: not known)
    p1_strategy: dict[str, float]  # card -> probability
    p2_strategy: dict[str, float]
    exploitability: float  # of both strategies at this position
    certified: bool  # the whole table's certificate within its bound
    epsilon: float | None  # the table's largest exploitability (None: not known)
    json: dict[str, Any] = field(repr=False)  # the whole `query --json` object


def query(table_or_rules: Table | RuleSet, position: str | Position = "start", *,
          cache_dir: PathLike | None = None, max_states: int | None = None, store: bool = True,
          follow_play: bool = False) -> Answer:
    """Optimal play at `position` ("start", or the spec's notation, player 1
    first), as `charge-spark query` answers it: from the stored table; with
    none stored for the rules, the table is solved (and stored, unless not
    `store`) first. Past about 5 million states it asks for `solve` first
    unless `max_states` is given.

        >>> tiny = rules(board="S*M", health=1, bonus_cards="")
        >>> answer = query(tiny, "b1 rest=spark / rest=move")
        >>> round(answer.p1_win + answer.p2_win + answer.unending, 9)
        1.0
    """
    rule_set, cache = _rules_and_cache(table_or_rules, cache_dir)
    parsed = _position(position, rule_set)
    answer, result, source, edge = answer_at(
        rule_set, parsed, str(cache), max_states, False, warn_on_stderr, note=note_on_stderr, store=store,
        unasked_limit=UNASKED_SOLVE_LIMIT, solve_command="solver.api.solve(rules)",
    )
    lasting = lasting_at(rule_set, parsed, result, str(cache), source, edge, follow_play)
    figures = query_json(rule_set, format_position(parsed, rule_set), answer, result, lasting)
    return _answer_of(rule_set, figures)


def _rules_and_cache(table_or_rules: Table | RuleSet, cache_dir: PathLike | None) -> tuple[RuleSet, Path]:
    """The rules asked about, and the cache their table is in (a `Table`'s own unless `cache_dir`)."""
    if isinstance(table_or_rules, Table):
        return table_or_rules.rules, _cache_dir(cache_dir) if cache_dir is not None else table_or_rules.cache_dir
    if isinstance(table_or_rules, RuleSet):
        return table_or_rules, _cache_dir(cache_dir)
    raise TypeError(f"expected a Table or a RuleSet, got {type(table_or_rules).__name__}")


def _position(position: str | Position, rule_set: RuleSet) -> Position:
    if isinstance(position, Position):
        validate_position(position, rule_set)
        return position
    return parse_position(position, rule_set)


def _answer_of(rule_set: RuleSet, figures: dict[str, Any]) -> Answer:
    return Answer(
        rules=rule_set,
        position=figures["position"],
        value=figures["value"],
        p1_win=figures["p1_win"],
        p2_win=figures["p2_win"],
        unending=figures["unending"],
        outcomes=dict(figures["outcomes"]),
        expected_length=figures["expected_length"],
        median_length=figures["length"]["median"],
        p1_strategy=dict(figures["p1_strategy"]),
        p2_strategy=dict(figures["p2_strategy"]),
        exploitability=figures["exploitability"],
        certified=figures["certified"],
        epsilon=figures["epsilon"],
        json=figures,
    )


# ------------------------------------------------------------------ report


@dataclass(frozen=True, eq=False)
class Report:
    """A balance report written to `path`, with its headline figures (at the start, to P1)."""

    path: Path
    rules: RuleSet
    fingerprint: str
    states: int
    value: float
    p1_win: float
    p2_win: float
    unending: float
    expected_length: float  # turns, given that the game ends (nan: it never does)
    certified: bool
    max_exploitability: float
    sections: tuple[str, ...]  # those shown; the page names the others as left out
    seconds: float
    built: BuiltReport = field(repr=False)  # every figure of the page (`solver.report.build.Report`)


def report(rule_set: RuleSet, path: PathLike, *, sections: Sequence[str] | None = None,
           cache_dir: PathLike | None = None, workers: int | None = None) -> Report:
    """The HTML balance report of `rule_set` written to `path`, as
    `charge-spark report` writes it. `sections`: some of "headline", "usage",
    "strength", "price", "cost-curves", "sensitivity", "positions", "skill", "hidden" (default: all;
    the headline is always in). Every part is kept in the cache, so a second
    run reuses them.

        >>> tiny = rules(board="S*M", health=1, battery_tiles=2, disc_tiles=2, bonus_cards="ray,copy")
        >>> written = report(tiny, "tiny.html", sections=["headline"])
        >>> written.path.name, round(written.value, 9)
        ('tiny.html', 0.5)
    """
    from .core.files import check_writable, write_text_atomically
    from .report.build import build_report, chosen_sections
    from .report.render import render_report

    try:
        chosen = chosen_sections(None if sections is None else ",".join(sections))
    except ValueError as error:  # the command line's --sections error, as a rules error here
        raise RulesError(str(error), source="sections") from None
    out = Path(path)
    check_writable(out)
    started = time.perf_counter()
    built = build_report(rule_set, _cache_dir(cache_dir), workers=workers, sections=chosen)
    write_text_atomically(out, render_report(built))
    return _report_of(out, built, time.perf_counter() - started)


def _report_of(path: Path, built: BuiltReport, seconds: float) -> Report:
    summary = built.summary
    return Report(
        path=path,
        rules=built.rules,
        fingerprint=built.fingerprint,
        states=built.states,
        value=summary.value,
        p1_win=summary.wins(Seat.P1),
        p2_win=summary.wins(Seat.P2),
        unending=built.start.unending_probability,
        expected_length=summary.expected_length,
        certified=built.certificate.certified,
        max_exploitability=built.exploitability,
        sections=built.sections,
        seconds=seconds,
        built=built,
    )


# ------------------------------------------------------------------- sweep


@dataclass(frozen=True)
class Sweep:
    """One row per rule set of a sweep, in grid order (the first key varies
    slowest): each varied key with its value, then the figures at the start
    (the columns of `charge-spark sweep`'s CSV, with each side's wins and
    each way of winning, `knock_out` and `moon`, summed). A rule set that could not be
    solved has its `error` set and nan figures."""

    keys: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]

    def to_dataframe(self) -> pandas.DataFrame:
        """The rows as a pandas DataFrame (pandas: the `notebook` extra)."""
        import pandas

        return pandas.DataFrame(list(self.rows))


def sweep(base_rules: RuleSet, *, cache_dir: PathLike | None = None, workers: int | None = None,
          scheduler: str | None = None, max_states: int | None = None, **axes: Iterable[Any]) -> Sweep:
    """Every combination of the `axes` values solved (cached tables reused) on
    a Dask cluster, as `charge-spark sweep` does: a local one of `workers`
    processes (default: one per core), or the one at `scheduler`. Each axis
    is a rules key (dotted ones with `**{...}`) and its values, each as
    `rules` takes it; every rule set is checked before any is solved.

        >>> tiny = rules(board="S*M", health=1, bonus_cards="")
        >>> swept = sweep(tiny, **{"cost.lightning.battery": [1, 2, 3]})
        >>> swept.to_dataframe()[["cost.lightning.battery", "value"]]  # doctest: +SKIP
    """
    given = {key: list(values) for key, values in axes.items()}
    if not given:
        raise RulesError("nothing to sweep: give a key and its values, e.g. health=[1, 2]", source="sweep")
    grid = [GridAxis(key, tuple(_toml_value(key, value) for value in values)) for key, values in given.items()]
    try:
        points = grid_points(base_rules, grid)
    except RulesError as error:  # named as the call wrote it, not as `--grid` would
        raise error.located((error.source or "").replace("--grid ", "sweep: ", 1) or "sweep") from None
    cache = None if cache_dir is None else _cache_dir(cache_dir)
    solved = run_sweep([point.rules for point in points], scheduler=scheduler, workers=workers, cache_dir=cache,
                       max_states=max_states)
    combinations = _combinations(given)
    game: Any = ChargeSparkGame(base_rules)  # the engine's protocol types `expand` apart from this game's arrays
    outcomes = terminal_outcomes(game)
    rows = []
    for row, values in zip(solved, combinations):
        if row.ok and not row.certificate.certified:  # never silent, as on the command line
            warn_on_stderr(f"rule set {row.index + 1} ({_settings_text(values)}): {row.certificate.text}")
        elif not row.ok:
            warn_on_stderr(f"rule set {row.index + 1} ({_settings_text(values)}): {row.error}")
        rows.append(_sweep_row(values, row, outcomes))
    return Sweep(tuple(given), tuple(rows))


def _combinations(given: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Each combination of the values as given, in `grid_points`' order."""
    import itertools

    return [dict(zip(given, combination)) for combination in itertools.product(*given.values())]


def _settings_text(values: dict[str, Any]) -> str:
    return " ".join(f"{key}={value!r}" for key, value in values.items())


def _sweep_row(values: dict[str, Any], row: SweepRow, outcomes: Sequence[Outcome]) -> dict[str, Any]:
    nan = math.nan
    certificate = row.certificate
    return {
        **values,
        "fingerprint": row.fingerprint,
        "value": row.value,
        "p1_win": win_probability(row.outcomes, outcomes, Seat.P1) if row.ok else nan,
        "p2_win": win_probability(row.outcomes, outcomes, Seat.P2) if row.ok else nan,
        "knock_out": kind_probability(row.outcomes, outcomes, KNOCK_OUT) if row.ok else nan,
        "moon": kind_probability(row.outcomes, outcomes, MOON) if row.ok else nan,
        **{label: row.outcomes.get(label, nan) for label in outcome_labels()},
        "expected_length": row.expected_length,
        "states": row.states,
        "max_exploitability": row.max_exploitability,
        "certified": row.ok and certificate.certified,
        "solve_seconds": row.solve_seconds,
        "seconds": row.seconds,
        "reused": row.reused,
        "error": row.error,
    }
