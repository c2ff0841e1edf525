"""Rule sweeps: many rule sets solved on a Dask cluster, one row of results each.

A sweep is a list of rule sets, usually the product of a few varied keys
(`grid_points`). `run_sweep` solves each one (or loads its cached table) on a
Dask cluster, a local one by default, and hands back one `SweepRow` per rule
set as it finishes. `CsvRows` writes rows as they arrive, so an interrupted
sweep keeps what it finished; the cache keeps the tables, so running the
sweep again only solves what is missing.

The rule sets run through `jobs.run_jobs` on Dask. Workers need this package
importable (a local cluster inherits it); for an existing cluster, install it
on every worker.
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from rules.charge_spark.config import RulesError, RuleSet, apply_overrides, fingerprint
from rules.charge_spark.game import ChargeSparkGame

from .certificate import CertificateStatus, certificate_status, table_certificate
from .core import resources
from .core.graph import GraphTooLargeError
from .core.jobs import dask_client, run_jobs, worker_memory_limit
from .core.resources import GRAPH_BYTES_PER_STATE, bytes_per_state
from .tables import solved_table, warn_on_stderr

# Dask and the solver's kernels are imported where a sweep runs, so the CLI starts without them.
if TYPE_CHECKING:
    from distributed import Client

GRID_SYNTAX = "KEY=V1,V2,... (each value as in --set KEY=VALUE)"
MAX_POINTS = 10_000
"""Largest grid accepted: far beyond any sweep worth running, small enough to list."""
RETRIES = 2
"""Extra attempts for a task whose worker raised; Dask also reruns the tasks of a lost worker."""


class SweepError(RuntimeError):
    """Some rule sets of a sweep could not be solved (their rows say why)."""


# ------------------------------------------------------------------- grids


@dataclass(frozen=True)
class GridAxis:
    """One varied key and its values, as written (each is a `--set` VALUE)."""

    key: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class SweepPoint:
    """One rule set of a grid and the value it takes on each varied key."""

    settings: tuple[tuple[str, str], ...]  # (key, value as written), in axis order
    rules: RuleSet


def split_values(text: str) -> list[str]:
    """VALUES of `--grid KEY=VALUES` split at the commas outside brackets and
    quotes, so a list value stays whole: `bonus_cards=[],["ray","trap"]`."""
    values, depth, quote, start = [], 0, "", 0
    for i, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            values.append(text[start:i].strip())
            start = i + 1
    values.append(text[start:].strip())
    return values


def parse_grid(argument: str) -> GridAxis:
    """One `--grid KEY=V1,V2,...` argument; RulesError naming it if malformed."""
    source = f"--grid {argument}"
    if "=" not in argument:
        raise RulesError(f"expected {GRID_SYNTAX} (no '=')", source=source)
    key_text, values_text = argument.split("=", 1)
    key = ".".join(part.strip() for part in key_text.split("."))
    if not key_text.strip() or any(not part for part in key.split(".")):
        raise RulesError(f"empty key; expected {GRID_SYNTAX}", source=source)
    values = split_values(values_text)
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise RulesError(f"value {repeated[0]!r} is given twice", key=key, source="--grid")
    return GridAxis(key, tuple(values))


def grid_points(base: RuleSet, axes: Sequence[GridAxis], overrides: Sequence[str] = ()) -> list[SweepPoint]:
    """Every combination of the axes' values (the first axis varies slowest),
    each applied with `overrides` on top of `base`. All are built, and so
    validated, here: a bad value stops the sweep before anything is solved,
    with a RulesError naming the `--grid` value."""
    keys = [axis.key for axis in axes]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise RulesError("is varied by more than one --grid", key=twice[0], source="--grid")
    count = math.prod(len(axis.values) for axis in axes)
    if count > MAX_POINTS:
        raise RulesError(f"the grid has {count:,} rule sets; at most {MAX_POINTS:,}", source="--grid")
    points = []
    for combination in itertools.product(*(axis.values for axis in axes)):
        settings = tuple(zip(keys, combination))
        grid_sources = {f"--set {key}={value}": f"--grid {key}={value}" for key, value in settings}
        try:
            # Applied after --set (and validated together), so a grid value wins.
            rules = apply_overrides(base, [*overrides, *(f"{key}={value}" for key, value in settings)])
        except RulesError as error:
            if error.source in grid_sources:
                raise error.located(grid_sources[error.source]) from None
            raise
        points.append(SweepPoint(settings, rules))
    return points


# -------------------------------------------------------------------- rows


@dataclass(frozen=True)
class SweepRow:
    """The start of one solved rule set (or why it could not be solved).

    `solve_seconds` is what solving the table took (now, or when the cached
    table was made); `seconds` is what this sweep spent on it (solving or
    loading, and summarising). The outcome split and the length belong to the
    strategies in the table; the value does not."""

    index: int  # position of the rule set in the sweep
    rules: RuleSet
    fingerprint: str
    value: float
    outcomes: dict[str, float]  # each terminal label -> probability, and "unending"
    expected_length: float  # turns, given that the game ends
    states: int
    solve_seconds: float
    seconds: float
    reused: bool  # the table came from the cache
    error: str | None = None  # set when the rule set could not be solved; the numbers are then nan
    max_exploitability: float = math.nan  # the table's certificate, over all its states
    states_over_bound: int | None = None  # how many of them exceed its bound (None: none, or not recorded)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def certificate(self) -> CertificateStatus:
        return certificate_status(self.max_exploitability, self.states_over_bound)


def state_limit(max_states: int | None, per_state: int | None = None) -> tuple[int | None, str | None]:
    """The most states a solve on this worker may enumerate, and what to say if
    that refuses a rule set (None: the solve's own message says it). Workers
    solving side by side share the machine's memory, so the worker's memory
    limit (a local cluster splits the machine between its workers) binds when
    it is tighter than both `max_states` and the memory available now.
    `per_state`: the solve's bytes a state (default: a whole-graph solve's)."""
    per_state = per_state or GRAPH_BYTES_PER_STATE
    memory = worker_memory_limit()
    if memory is None:
        return max_states, None
    cap = int(0.9 * memory / per_state)
    available = resources.states_that_fit(per_state)
    if (max_states is not None and max_states <= cap) or (available is not None and available <= cap):
        return max_states, None
    return cap, (
        f"more than {cap:,} reachable states, the most a solve can hold in 90% of its worker's"
        f" {memory / 1e9:.1f} GB memory limit at {per_state:,} bytes a state"
    )


def solve_row(rules: RuleSet, cache_dir: str | None, max_states: int | None) -> SweepRow:
    """Solve `rules` (or load its table) and summarise the start: the task a worker runs."""
    from .summary import summarise_start

    started = time.perf_counter()
    # Charge & Spark is solved rank by rank: the limit is at that solve's bytes a state.
    limit, refusal = state_limit(max_states, bytes_per_state(ChargeSparkGame(rules)))
    try:
        # Mapped: once stored, the solve's arrays are let go; the summary reads one state of the table.
        table = solved_table(rules, cache_dir, max_states=limit, warn=warn_on_stderr, mapped=True)
    except GraphTooLargeError as error:
        nan = float("nan")
        return SweepRow(0, rules, fingerprint(rules), nan, {}, nan, 0, nan, time.perf_counter() - started,
                        False, error=refusal or str(error))
    summary = summarise_start(table, max_turns=0)  # a row holds no length distribution
    certificate = table_certificate(table.result)
    return SweepRow(
        index=0,
        rules=rules,
        fingerprint=table.fingerprint,
        value=summary.value,
        outcomes=summary.outcomes,
        expected_length=summary.expected_length,
        states=table.result.num_states,
        solve_seconds=sum(table.result.timings.values()),
        seconds=time.perf_counter() - started,
        reused=table.reused,
        max_exploitability=math.nan if certificate.epsilon is None else certificate.epsilon,
        states_over_bound=certificate.states_over_bound,
    )


# --------------------------------------------------------------- execution


@dataclass(frozen=True)
class SweepJob:
    """One rule set to solve: what a worker needs (the arguments of `solve_row`)."""

    rules: RuleSet
    cache_dir: str | None
    max_states: int | None


def solve_job(job: SweepJob) -> SweepRow:
    """`solve_row` of one job: the function a worker runs."""
    return solve_row(job.rules, job.cache_dir, job.max_states)


def run_sweep(
    rule_sets: Sequence[RuleSet],
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    client: Client | None = None,
    cache_dir: Path | str | None = None,
    max_states: int | None = None,
    retries: int = RETRIES,
    on_row: Callable[[SweepRow], None] | None = None,
    show_progress: bool = False,
) -> list[SweepRow]:
    """Solve every rule set of `rule_sets` on Dask and summarise its start.

    Rule sets are solved once per fingerprint, in the cache `cache_dir` (the
    default cache of each worker if None), so a sweep run again, or one that
    shares rule sets with another, reuses the tables. `scheduler` is the
    address of a running Dask scheduler (e.g. "tcp://10.0.0.5:8786"); without
    it a local cluster of `workers` processes (default: one per core) is
    started for the sweep and shut down after it; `client`, a connected
    `distributed.Client` (e.g. from `dask_client`), is used instead of both.

    `on_row(row)` is called for each row as it finishes (in the order they
    finish); the list returned is in the order of `rule_sets` (`row.index`).
    A rule set too large to solve gives a row with `error` set. A task whose
    worker raises is tried `retries` more times, and one whose worker dies is
    rerun on another (`jobs.WorkersLostError` if one kills every worker it
    is given); a task that still fails raises here. On any exit, interrupts
    included, the tasks left are cancelled and a local cluster is shut down.
    """
    rule_sets = list(rule_sets)
    indices_of: dict[str, list[int]] = {}
    for i, rules in enumerate(rule_sets):
        indices_of.setdefault(fingerprint(rules), []).append(i)
    if not rule_sets:
        return []
    cache = str(Path(cache_dir).resolve()) if cache_dir is not None else None
    groups = list(indices_of.values())  # one job a fingerprint, answering every rule set of it
    rows: list[SweepRow | None] = [None] * len(rule_sets)

    def answered(job: int, solved: SweepRow) -> None:
        for i in groups[job]:
            rows[i] = replace(solved, index=i, rules=rule_sets[i])
            if on_row is not None:
                on_row(rows[i])

    with contextlib.ExitStack() as stack:
        if client is None:
            client = stack.enter_context(dask_client(scheduler, workers))
        run_jobs(solve_job, [SweepJob(rule_sets[indices[0]], cache, max_states) for indices in groups],
                 client=client, retries=retries, unit=" rule sets", show_progress=show_progress, on_answer=answered)
    return [row for row in rows if row is not None]


# --------------------------------------------------------------------- CSV


def outcome_labels() -> tuple[str, ...]:
    """The outcome columns: the game's terminal outcomes, then unending play."""
    from .summary import UNENDING
    return (*ChargeSparkGame.terminal_labels, UNENDING)


@dataclass
class CsvRows:
    """A CSV of sweep rows written as they arrive: the header at once, then
    one flushed line per row, so an interrupted sweep keeps its finished rows.

    Columns: the point's number (1-based, grid order), each varied key, the
    fingerprint, the value at the start, one probability per outcome, the
    expected length, the state count, the solve and sweep seconds, whether
    the table was reused, its certificate (the largest exploitability and
    "certified" or "not certified: ..."), and the error if it could not be solved."""

    stream: TextIO
    keys: Sequence[str]
    _writer: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._writer = csv.writer(self.stream, lineterminator="\n")
        self._writer.writerow(self.columns())
        self.stream.flush()

    def columns(self) -> list[str]:
        return [
            "point", *self.keys, "fingerprint", "value", *outcome_labels(), "expected_length", "states",
            "solve_seconds", "seconds", "reused", "max_exploitability", "certificate", "error",
        ]

    def write(self, row: SweepRow, settings: Sequence[tuple[str, str]] = ()) -> None:
        values = dict(settings)

        def number(x: float) -> str:
            return "" if math.isnan(x) else repr(x)

        self._writer.writerow([
            row.index + 1, *(values.get(key, "") for key in self.keys), row.fingerprint, number(row.value),
            *(number(row.outcomes[label]) if label in row.outcomes else "" for label in outcome_labels()),
            number(row.expected_length), row.states, number(round(row.solve_seconds, 3)),
            round(row.seconds, 3), "yes" if row.reused else "no", number(row.max_exploitability),
            row.certificate.mark if row.ok else "", row.error or "",
        ])
        self.stream.flush()
