"""The `charge-spark` command line: parse, call, print. No game logic here."""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import shlex
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click
import numpy as np

from rules.charge_spark.config import (
    RulesError,
    RuleSet,
    apply_overrides,
    canonical_mapping,
    differences_from_default,
    fingerprint,
    load_rules,
    rules_to_toml,
    with_one_set_per_key_hint,
)
from rules.charge_spark.game import ChargeSparkGame, ReferenceChargeSparkGame
from rules.charge_spark.notation import format_position, parse_position
from rules.charge_spark.state import initial_position
from rules.charge_spark.turn import KNOCK_OUT, MOON

from . import progress_lines  # noqa: F401 - the progress lines of every command read "charge-spark: ..."
from .analysis.results_cache import ResultsCache
from .answering import UNASKED_SOLVE_LIMIT, answer_at, lasting_at, query_json, usage_at
from .certificate import CERTIFICATE_BOUND, CertificateStatus, certificate_status, states_over_bound, table_certificate
from .core import interruption
from .core.files import OutputError, check_writable, write_text_atomically, writes_through
from .core.outcome import Outcome, Seat, win_probability
from .core.resources import FOLLOW_PLAY_BYTES_PER_STATE, states_that_fit, usable_cores
from .core.result import STANDOFF_DEPENDENCE, HurryFigures, SolveResult, StateAnswer
from .core.table_file import table_path
from .storage import CACHE_ENV, check_cache_dir, default_cache_dir
from .sweep import SweepError
from .tables import cached_table, resume_dir_of, solved_table, stored_part
from .user_errors import USER_ERRORS, printable

if TYPE_CHECKING:  # imported where used: scipy's solvers are no part of the other commands' start
    from .analysis.stalls import LengthAndStalls

UNCERTIFIED_EXIT = 3
"""`solve`'s exit status when the table's certificate is over its bound (the table is still stored)."""
NAMED_STATES = 5
"""How many of the states over the bound `solve` names, the worst first."""
_ENVIRONMENT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EROFS, errno.EPERM, errno.ENOTDIR, errno.EISDIR}
_NUMPY_NO_SPACE = "Not enough free space to write"
"""How numpy says a file it writes (`np.save`, `tofile`) found the disk full: an OSError without an errno."""


def _machine_error(error: OSError) -> str | None:
    """What the machine refused, where `error` is the machine's doing (a full disk, a read-only or
    forbidden directory) and not a bug: its one-line reason, else None."""
    if error.errno in _ENVIRONMENT_ERRNOS:
        return error.strerror or str(error)
    if error.errno is None and str(error).startswith(_NUMPY_NO_SPACE):
        return f"{os.strerror(errno.ENOSPC)} ({error})"
    return None


class ChargeSparkCLI(click.Group):
    """Turns the documented user errors into one line on stderr and exit status 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (*USER_ERRORS, OutputError) as error:
            if ctx.obj and ctx.obj.get("debug"):
                traceback.print_exc()
            click.echo(f"charge-spark: error: {printable(str(error))}", err=True)
            ctx.exit(2)
        except OSError as error:
            refused = _machine_error(error)
            if refused is None:
                _report_internal_error(ctx, error)
            where = f" ({error.filename})" if error.filename else ""
            click.echo(
                f"charge-spark: error: {printable(refused)}{printable(where)}; a solve writes"
                f" working files under {printable(tempfile.gettempdir())} (set TMPDIR to change it) and its table"
                " to the cache directory (--cache-dir); nothing already saved was changed", err=True,
            )
            ctx.exit(2)
        except click.UsageError as error:
            hint = f" (see '{error.ctx.command_path} --help')" if error.ctx else ""
            click.echo(f"charge-spark: error: {printable(error.format_message())}{hint}", err=True)
            ctx.exit(2)
        except (click.exceptions.Exit, click.Abort, click.ClickException):
            raise  # click's own ways out: it prints and exits as documented
        except (KeyboardInterrupt, Exception) as error:
            # A signal that lands inside compiled code or the compiler surfaces
            # as another error chained to the KeyboardInterrupt; anything else
            # is a bug, said in one line (its traceback with --debug).
            if not _caused_by_interrupt(error):
                _report_internal_error(ctx, error)
            # Tables are written atomically: an interrupted run leaves the cache as it was;
            # a command that keeps finished work says where (`interrupt_note`).
            note = (ctx.obj or {}).get("interrupt_note", "nothing partial was saved")
            click.echo(f"charge-spark: interrupted; {printable(note)}", err=True)
            ctx.exit(130)


def _report_internal_error(ctx: click.Context, error: BaseException) -> NoReturn:
    """A bug: one line naming the command and the error (the traceback too with --debug), exit status 1."""
    if ctx.obj and ctx.obj.get("debug"):
        traceback.print_exception(error)
    command = ctx.invoked_subcommand or ctx.command_path
    what = printable(f"{type(error).__name__}: {error}")
    what = what if len(what) <= 300 else what[:300] + "..."
    click.echo(f"charge-spark: internal error: {command}: {what}; run with --debug for the traceback", err=True)
    ctx.exit(1)


def _caused_by_interrupt(error: BaseException | None) -> bool:
    seen = 0
    while error is not None and seen < 20:
        if isinstance(error, KeyboardInterrupt):
            return True
        error = error.__cause__ or error.__context__
        seen += 1
    return False


@click.group(cls=ChargeSparkCLI)
@click.option("--debug", is_flag=True, help="Show a traceback on errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Game-theory solver for the card duel Charge & Spark."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    interruption.forget()
    # Both explicitly: a process started in the background inherits SIGINT ignored.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    quiet_resource_tracker()


RESOURCE_TRACKER_WARNING = "ignore:resource_tracker:UserWarning"
"""An interrupted sweep or report stops its worker processes mid-task, and the
resource tracker they share then lists what it cleans up after them on stderr,
below the command's own last line. It does clean it up: the list is noise."""


def quiet_resource_tracker() -> None:
    """Have the resource tracker (started later, with this environment) keep its list to itself."""
    present = os.environ.get("PYTHONWARNINGS", "")
    if RESOURCE_TRACKER_WARNING not in present.split(","):
        os.environ["PYTHONWARNINGS"] = ",".join(filter(None, [present, RESOURCE_TRACKER_WARNING]))


def _interrupt(signum, frame) -> None:
    interruption.ask_to_stop()  # kept should the exception be lost (raised inside a finalizer)
    raise KeyboardInterrupt


def rules_options(command):
    command = click.option(
        "--set", "overrides", multiple=True, metavar="KEY=VALUE",
        help="Override one rules key (TOML dotted key), e.g. cost.lightning.battery=3; "
             "for one player only, p1.cost.lightning.battery=3. Repeatable.",
    )(command)
    command = click.option(
        "--rules", "rules_file", type=click.Path(dir_okay=False), default=None,
        help="A rules file (TOML). Default: the spec's default rules.",
    )(command)
    return command


def rules_in_force(rules_file: str | None, overrides: tuple[str, ...]) -> RuleSet:
    rules = load_rules(rules_file) if rules_file else RuleSet()
    try:
        return apply_overrides(rules, list(overrides))
    except RulesError as error:  # `--set 'board=S*M health=1'`: says to give one --set per key
        raise with_one_set_per_key_hint(error, overrides) from None


@main.command()
@rules_options
def rules(rules_file: str | None, overrides: tuple[str, ...]) -> None:
    """Print the rule set in force as TOML (a starting point for your own file)."""
    click.echo(rules_to_toml(rules_in_force(rules_file, overrides)), nl=False)


def _checked_cache_dir(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        check_cache_dir(value)
    return value


def cache_options(command):
    command = click.option(
        "--cache-dir", type=click.Path(file_okay=False), default=None, callback=_checked_cache_dir,
        help=f"Where solved tables live (default: ${CACHE_ENV} or ~/.cache/charge-spark/tables).",
    )(command)
    return command


def warn(message: str) -> None:
    click.echo(f"charge-spark: warning: {printable(message)}", err=True)


@main.command()
@rules_options
@cache_options
@click.option("--force", is_flag=True, help="Solve again even if a solved table is cached.")
@click.option("--max-states", type=click.IntRange(min=1), default=None, help="Refuse to enumerate more states than this.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Processes the solve runs on (default: every core this process may use). Any number gives the same table.")
def solve(rules_file: str | None, overrides: tuple[str, ...], cache_dir: str | None, force: bool, max_states: int | None,
          workers: int | None) -> None:
    """Solve every state reachable from the start and store the table in the cache."""
    rule_set = rules_in_force(rules_file, overrides)
    started = time.perf_counter()
    key = fingerprint(rule_set)
    path = table_path(Path(cache_dir) if cache_dir else default_cache_dir(), key)
    code = ChargeSparkGame(rule_set).encode(initial_position(rule_set))
    # Already solved: read what the summary shows, not the whole table.
    result = None if force else stored_part(path, key, code, ReferenceChargeSparkGame(rule_set), warn)
    reused = stored = result is not None
    if result is None:
        notes = click.get_current_context().obj
        notes["interrupt_note"] = (
            f"no table was saved; the ranks solved so far are kept in {resume_dir_of(path)}: solve again to resume")
        table = solved_table(
            rule_set, cache_dir, force=force, max_states=max_states, show_progress=True, warn=warn,
            workers=workers or usable_cores(),
        )
        notes.pop("interrupt_note")
        result, path, reused, stored = table.result, table.path, table.reused, table.stored
    if not reused and follow_play_fits(result.num_states):
        from .analysis.stalls import keep_length_and_stalls

        # Following play at once, while the table is at hand: a query of the start then reads it.
        keep_length_and_stalls(rule_set, code, result, path.parent, shown=True)
    elif not reused:
        warn(f"the length distribution and stalls from the start were not kept: following play through"
             f" {result.num_states:,} states needs about {result.num_states * FOLLOW_PLAY_BYTES_PER_STATE / 1e9:.0f} GB"
             " of memory, more than is available ('query start --follow-play' computes them where it fits)")
    game = ReferenceChargeSparkGame(rule_set) if reused else ChargeSparkGame(rule_set)
    answer = result.answer(code, game)
    status = table_certificate(result)
    over_lines: list[str] = []
    if not status.certified:  # never silent: the states over the bound are named, and the exit status says so
        whole = result if not reused else stored_whole(path, key)
        over_lines, status = states_over_bound_lines(rule_set, whole, status)
    verdict = "ok" if status.certified else "NOT CERTIFIED"
    lines = [
        f"rules        {rule_set.name or '(unnamed)'}  [fingerprint {key}]",
        f"changed      {rules_difference(rule_set)}",
        f"states       {result.table_states:,}",
        f"value        {answer.value:.12f} at the start (to P1){value_mark(status)}",
        f"certificate  exploitability at the start {answer.exploitability:.2e}, largest over all states"
        f" {result.table_max_exploitability:.2e} ({verdict}, bound {CERTIFICATE_BOUND:.0e});"
        f" largest Bellman residual {result.bellman_residual:.2e}",
        *over_lines,
        hurry_line(result.table_hurry_figures),
        rounds_line(result.hurried_rounds),
        (f"table        {path} ({path.stat().st_size / 1e6:,.1f} MB)" if stored else
         "table        not stored (see the warning above); the figures here are the solve's own")
        + ("  [already solved; --force to solve again]" if reused else ""),
        f"time         {timing_line(result, time.perf_counter() - started) if not reused else f'{time.perf_counter() - started:.2f} s (loaded)'}",
    ]
    click.echo("\n".join(lines))
    if result.hurried_rounds.get("capped"):  # the figures then come from the cap, not from the rule's fixed point
        from .core.hurry import MAX_ROUNDS  # here only: a query from a stored table loads no compiler
        warn(f"hurried play stopped at its cap of {MAX_ROUNDS} rounds, short of its own stopping rule, on"
             f" {result.hurried_rounds['capped']:,} of {sum(result.hurried_rounds.values()):,} parts: lengths and card"
             " usage there are those of the last round")
    if not status.certified:
        click.get_current_context().exit(UNCERTIFIED_EXIT)


def stored_whole(path: Path, key: str) -> SolveResult | None:
    """The whole stored table at `path`, memory-mapped (None if it cannot be read): to find its states over the bound."""
    return cached_table(path, key, warn, mapped=True)


def states_over_bound_lines(
    rule_set: RuleSet, result: SolveResult | None, status: CertificateStatus,
) -> tuple[list[str], CertificateStatus]:
    """The lines naming a table's states over the bound (their count and the worst few, in the spec's
    notation), and the status with that count; `result` None: the table could not be read again."""
    if result is None:
        return [f"             {status.text}; the states over the bound could not be read"], status
    over = states_over_bound(result, NAMED_STATES)
    status = certificate_status(status.epsilon, over.count)
    game = ChargeSparkGame(rule_set)
    lines = [f"             {status.text}; the worst {len(over.worst)} of them:"]
    lines += [f"             {exploitability:.2e}  at {format_position(game.decode(code), rule_set)}"
              for code, exploitability in over.worst]
    return lines, status


def uncertified_lines(status: CertificateStatus) -> list[str]:
    """The line under a value read from an uncertified table (none for a certified one)."""
    return [] if status.certified else [f"certificate  {status.text.replace('not certified', 'NOT CERTIFIED', 1)}"]


def value_mark(status: CertificateStatus) -> str:
    """What follows a value read from a table: nothing if it is certified, else ' (not certified)'."""
    return "" if status.certified else " (not certified)"


@main.command()
@click.argument("position")
@rules_options
@cache_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--max-states", type=click.IntRange(min=1), default=None,
              help="Refuse to enumerate more states than this (and solve up to it unasked).")
@click.option("--no-store", "no_store", is_flag=True, help="Do not store the table a query solves.")
@click.option("--follow-play", "follow_play", is_flag=True,
              help="Follow play through a large stored table for the length's median and tail and the stalls.")
@click.option("--usage", "with_usage", is_flag=True,
              help="With --json: each card's share of each player's plays over whole games from POSITION, as the"
                   " report counts them (`usage`; null past a table's edge, or from a table of a million states"
                   " or more without --follow-play).")
def query(
    position: str, rules_file: str | None, overrides: tuple[str, ...], cache_dir: str | None, as_json: bool,
    max_states: int | None, no_store: bool, follow_play: bool, with_usage: bool = False,
) -> None:
    """Optimal play at POSITION (`start`, or the spec's notation in quotes).

    Answered from the solved table of the rules in force if one is stored
    that holds the position. With none stored, the rules' table is solved
    now and stored, as `solve` does (not with --no-store), after a line on
    stderr saying how many states and about how long; past about 5 million
    states a query asks for `solve` first unless --max-states is given. A
    position the stored table does not hold is solved up to its edge, after
    a line saying how many states that adds.
    """
    rule_set = rules_in_force(rules_file, overrides)
    parsed = parse_position(position, rule_set)
    started = time.perf_counter()
    path = table_path(Path(cache_dir) if cache_dir else default_cache_dir(), fingerprint(rule_set))
    if not no_store and not path.exists():  # the table may be solved here, as `solve` solves it
        click.get_current_context().obj["interrupt_note"] = (
            f"no table was saved; the ranks solved so far are kept in {resume_dir_of(path)}: query or solve again"
            " to resume")
    answer, result, source, edge = answer_at(
        rule_set, parsed, cache_dir, max_states, show_progress=not as_json, warn=warn, note=query_note,
        store=not no_store, unasked_limit=UNASKED_SOLVE_LIMIT,
        solve_command=solve_command_line(rules_file, overrides, cache_dir),
    )
    lasting = lasting_at(rule_set, parsed, result, cache_dir, source, edge, follow_play, warn=warn, note=query_note,
                         shown=True)
    elapsed = time.perf_counter() - started
    if as_json:
        figures = query_json(rule_set, format_position(parsed, rule_set), answer, result, lasting)
        if with_usage:
            figures["usage"] = usage_at(rule_set, parsed, result, cache_dir, source, edge, follow_play, warn=warn)
        click.echo(json.dumps(figures))
    else:
        click.echo(query_text(rule_set, format_position(parsed, rule_set), answer, result, elapsed, source, edge,
                              lasting))


def query_note(message: str) -> None:
    """A line on stderr saying what is being computed and why."""
    click.echo(f"charge-spark: {printable(message)}", err=True)


def solve_command_line(rules_file: str | None, overrides: tuple[str, ...], cache_dir: str | None) -> str:
    """The `solve` command that stores the table of the rules a command was given, in its cache."""
    words = ["charge-spark", "solve"]
    if rules_file is not None:
        words += ["--rules", rules_file]
    for override in overrides:
        words += ["--set", override]
    if cache_dir is not None:
        words += ["--cache-dir", cache_dir]
    return shlex.join(words)


def follow_play_fits(states: int) -> bool:
    """Whether following play through a table of `states` fits in the memory available now."""
    fit = states_that_fit(FOLLOW_PLAY_BYTES_PER_STATE)
    return fit is None or states <= fit


def rounds_line(tally: dict[str, int]) -> str:
    """How hurried play's strategy iteration ended, over the solve's parts (each side of each rank's layer)."""
    if not tally:
        return "rounds       hurried play's rounds not recorded (a table stored by an earlier version)"
    from .core.hurry import MAX_ROUNDS  # here only: a query from a stored table loads no compiler

    settled = sorted((int(k), v) for k, v in tally.items() if k != "capped")
    by_rounds = ", ".join(f"{count:,} after {rounds}" for rounds, count in settled)
    capped = tally.get("capped", 0)
    return (f"rounds       hurried play's strategy iteration, {sum(tally.values()):,} parts (a side of a rank):"
            f" {sum(count for _, count in settled):,} settled by its own rule ({by_rounds or 'none'} rounds),"
            f" {capped:,} stopped at the cap of {MAX_ROUNDS} rounds")


def hurry_line(figures: HurryFigures) -> str:
    """The stricter certificate of hurried play over the whole table, and where it could not be used."""
    verdict = "ok" if figures.max_strict_exploitability <= CERTIFICATE_BOUND else "exceeds the bound somewhere"
    return (
        f"hurried      largest exploitability with endless play scored as a loss {figures.max_strict_exploitability:.2e}"
        f" ({verdict}); {figures.fallback_states:,} states keep the value solve's strategy;"
        f" {figures.standoff_states:,} standoff states (the value depends on how endless play is scored)"
    )


@main.command()
@rules_options
@cache_options
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (loopback: only this machine; 0.0.0.0 lets others in).")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port to listen on (0: any free one).")
@click.pass_context
def explore(ctx: click.Context, rules_file: str | None, overrides: tuple[str, ...], cache_dir: str | None, host: str,
            port: int) -> None:
    """Browse positions and play against the solver in a web browser: a local
    server over the rule set's solved table (solved first if not stored)."""
    from .explore.serve import serve

    rule_set = rules_in_force(rules_file, overrides)
    ctx.obj["interrupt_note"] = "the explorer stopped; nothing partial was saved"
    serve(rule_set, cache_dir, host, port, lambda line: click.echo(printable(line)), warn,
          solve_command_line(rules_file, overrides, cache_dir))


@main.command()
@rules_options
@cache_options
@click.option("--out", "output", type=click.Path(dir_okay=False), default=None,
              help="Write the report here (default: reports/charge-and-spark.html for the printed rules,"
                   " reports/charge-and-spark-FINGERPRINT.html otherwise).")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Solves run at once (default 2, fewer when that many would not fit in memory together).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run the further solves (restricted games, rule variants) on this Dask scheduler's workers, e.g."
                   " tcp://10.0.0.5:8786; a worker whose memory limit cannot hold a solve is left out. The rest"
                   " runs here.")
@click.option("--sections", "section_names", default=None, metavar="NAME,...",
              help="Only these sections (headline, usage, strength, price, cost-curves, sensitivity, positions, skill,"
                   " hidden; the headline is always in); the report says which it leaves out. Default: all.")
@click.option("--json", "json_file", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Also write every figure the page shows to FILE as JSON (keys such as headline, price, cost_curves,"
                   " sensitivity; see docs/report.md).")
@click.option("--parts", "parts_file", type=click.Path(dir_okay=False), default=None,
              help="Keep the report's finished parts in this JSON file rather than in the cache, and reuse those it"
                   " holds (same rules, same version): a report resumed on another machine, or its page written"
                   " again without solving.")
@click.pass_context
def report(ctx: click.Context, rules_file: str | None, overrides: tuple[str, ...], cache_dir: str | None,
           output: str | None, workers: int | None, scheduler: str | None, section_names: str | None,
           parts_file: str | None, json_file: str | None) -> None:
    """Write the HTML balance report of the rules in force (one self-contained file).

    Every part is kept in the cache as soon as it is computed: running the
    same report again reuses them, and an interrupted one resumes."""
    from .report.build import build_report, chosen_sections
    from .report.partial import PartialReport
    from .report.render import render_report

    try:
        sections = chosen_sections(section_names)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--sections") from None
    if scheduler and workers:
        raise click.UsageError("--workers sizes the solves run here; a --scheduler's cluster has its own")
    rule_set = rules_in_force(rules_file, overrides)
    if parts_file:  # a parts file that cannot be these rules' is refused before anything is solved
        if writes_through(parts_file):  # read, then replaced as parts finish: a FIFO or a device is neither
            raise OutputError(f"cannot keep the parts in {parts_file}: not a regular file")
        ResultsCache.at(parts_file, fingerprint(rule_set))
        check_writable(Path(parts_file))
    # Connected (and its workers checked) before anything is written: an unusable cluster leaves no trace.
    client = ctx.with_resource(report_cluster(scheduler, rule_set))
    path = Path(output) if output else default_report_path(rule_set)
    if not output:
        path.parent.mkdir(parents=True, exist_ok=True)
    check_writable(path)
    if json_file:
        check_writable(Path(json_file))
    started = time.perf_counter()
    note = lambda message: click.echo(f"report: {printable(message)}", err=True)  # noqa: E731
    ctx.obj["interrupt_note"] = ("nothing partial was saved; the parts finished so far are kept in the cache:"
                                " run the report again to resume")
    partial = PartialReport.beside(path, note)

    def show_partial(report) -> None:
        if partial.due():
            partial.write(render_report(report))
            ctx.obj["interrupt_note"] = (f"the report so far is in {partial.path}; the parts finished so far are"
                                        " kept in the cache: run the report again to resume")

    try:
        built = build_report(rule_set, cache_dir, workers=workers, show_progress=True, log=note,
                             sections=sections, on_partial=show_partial, client=client, parts_file=parts_file)
    except BaseException as error:  # the page so far says at its top that it will not be finished
        partial.mark_stopped("was interrupted" if _caused_by_interrupt(error) else f"failed: {printable(str(error))}")
        raise
    write_text_atomically(path, render_report(built))
    if json_file:
        from .report.figures import report_figures

        write_text_atomically(Path(json_file), json.dumps(report_figures(built), indent=1, allow_nan=False) + "\n")
    partial.remove()
    click.echo(f"wrote {path}{f' and {json_file}' if json_file else ''} in {time.perf_counter() - started:.1f} s")


@contextlib.contextmanager
def report_cluster(scheduler: str | None, rule_set: RuleSet):
    """A client of the Dask cluster at `scheduler`, some of whose workers hold the report's solves (None without one)."""
    if scheduler is None:
        yield None
        return
    from .core.jobs import dask_client
    from .report.solves import cluster_workers_for, restricted_need

    with dask_client(scheduler) as client:
        cluster_workers_for(client, restricted_need(rule_set))  # the smallest further solve of the rules' size
        yield client


def default_report_path(rule_set: RuleSet) -> Path:
    """One file per rule set, so reports of different rules never overwrite each other."""
    key = fingerprint(rule_set)
    suffix = "" if key == fingerprint(RuleSet()) else f"-{key}"
    return Path("reports") / f"charge-and-spark{suffix}.html"


@main.command()
@rules_options
@cache_options
@click.option("--horizon", type=click.IntRange(min=1), default=None,
              help="Longest horizon (turns) a phase's tree may grow to before it is given as bounds. Default: 40.")
@click.option("--max-nodes", type=click.IntRange(min=1), default=None,
              help="Largest phase tree solved (nodes); a phase that needs more is given as bounds. Default: 200,000.")
@click.option("--frequent", type=click.IntRange(min=1), default=None,
              help="Solve only the K phases met most often in play from the start."
              " Default: all of them, or the 8 most frequent where there are over 2,000 phases or the table"
              " has over a million states.")
@click.option("--every-phase", is_flag=True,
              help="Solve every phase, however many (S*M at health 1 has 17,373: about a day on 2 cores).")
@click.option("--top", type=click.IntRange(min=0), default=15, show_default=True, help="Starts listed, by gain.")
@click.option("--all", "show_all", is_flag=True, help="List every start.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--efg", "efg_dir", type=click.Path(file_okay=False), default=None,
              help="Write each phase's last tree here as Gambit .efg files (start-K.efg at the lower valuation;"
                   " start-K-upper.efg too where the phase is given as bounds), for other solvers to check.")
@click.option("--max-states", type=click.IntRange(min=1), default=None,
              help="Refuse to enumerate more states than this (in the open game, and in the wild game with --wild).")
@click.option("--wild", is_flag=True,
              help="Bound both sides of each phase by the wild games (solved, or read from the cache, first):"
                   " each start's wild bounds, and the horizon's leaves at them rather than at 0 or 1.")
def hidden(
    rules_file: str | None, overrides: tuple[str, ...], cache_dir: str | None, horizon: int | None, max_nodes: int | None,
    frequent: int | None, every_phase: bool, top: int, show_all: bool, as_json: bool, efg_dir: str | None,
    max_states: int | None, wild: bool,
) -> None:
    """What hiding drawn bonus cards changes, phase by phase.

    The open game is solved (or read from the cache) first; then every hidden
    phase (from a draw the opponent cannot tell, until every hidden card is
    played or can be told) is solved exactly as a game tree of growing
    horizon, or bracketed by honest bounds where the tree outgrows the cap.
    """
    from .hidden.analysis import DEFAULT_MAX_HORIZON, DEFAULT_MAX_NODES
    from .hidden.run import hidden_analysis, phases_progress
    from .hidden.text import hidden_text

    if every_phase and frequent is not None:
        raise click.UsageError("--every-phase solves every phase; --frequent K only K of them: give one")
    rule_set = rules_in_force(rules_file, overrides)
    on_tree = None if efg_dir is None else efg_writer(Path(efg_dir), rule_set)
    started = time.perf_counter()
    table = solved_table(rule_set, cache_dir, max_states=max_states, show_progress=not as_json,
                         warn=warn, workers=usable_cores(), mapped=True)
    wild_table = None
    if wild:
        from .hidden.wild_table import solved_wild_table

        wild_table = solved_wild_table(rule_set, table.result.states, cache_dir, warn=warn, workers=usable_cores(),
                                       show_progress=True, max_states=max_states)
    with phases_progress() as progress:
        analysis = hidden_analysis(
            rule_set, table.result, max_horizon=horizon or DEFAULT_MAX_HORIZON,
            max_nodes=max_nodes or DEFAULT_MAX_NODES, frequent=frequent, progress=progress, on_tree=on_tree,
            wild=wild_table, every_phase=every_phase,
        )
    if as_json:
        click.echo(json.dumps(dict(analysis.as_json(), rules=canonical_mapping(rule_set),
                                   fingerprint=fingerprint(rule_set))))
        return
    header = [
        f"rules        {rule_set.name or '(unnamed)'}  [fingerprint {fingerprint(rule_set)}]",
        f"changed      {rules_difference(rule_set)}",
        f"open game    {analysis.states:,} states ({'read from the cache' if table.reused else 'solved now'});"
        f" {time.perf_counter() - started:.1f} s in all",
    ]
    click.echo(hidden_text(analysis, header, None if show_all else top))


def efg_writer(folder: Path, rule_set: RuleSet):
    """What writes each phase's tree into `folder` (made if need be; checked writable before any work)."""
    from .core.efg import save_efg

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"cannot write into {folder}: {error.strerror or error}") from None
    check_writable(folder / "start-0000.efg")

    def write(k: int, result, phase_tree) -> None:
        title = f"Charge & Spark [rules {fingerprint(rule_set)}] hidden phase from {result.position} | {result.played}"
        save_efg(phase_tree.tree, folder / f"start-{k:04d}.efg", phase_tree.lower,
                 f"{title} (horizon {result.horizon}, leaves at their lower bound)")
        if not result.exact:
            save_efg(phase_tree.tree, folder / f"start-{k:04d}-upper.efg", phase_tree.upper,
                     f"{title} (horizon {result.horizon}, leaves at their upper bound)")

    return write


@main.command("export-nfg")
@click.argument("position")
@rules_options
@cache_options
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="Write here (default: stdout).")
@click.option("--labels", is_flag=True, help="Name the strategies after the cards (OpenSpiel's reader rejects this form).")
@click.option("--max-states", type=click.IntRange(min=1), default=None, help="Refuse to enumerate more states than this.")
def export_nfg(
    position: str, rules_file: str | None, overrides: tuple[str, ...], cache_dir: str | None,
    output: str | None, labels: bool, max_states: int | None,
) -> None:
    """The stage game at POSITION as a Gambit strategic-form (.nfg) file.

    Payoffs are the values to P1 after each pair of cards; P2's are their
    negatives (zero-sum), so the file's game has the position's value.
    """
    from .core.nfg import write_nfg

    rule_set = rules_in_force(rules_file, overrides)
    parsed = parse_position(position, rule_set)
    answer, _, _, _ = answer_at(rule_set, parsed, cache_dir, max_states, show_progress=output is not None, warn=warn)
    title = f"Charge & Spark {format_position(parsed, rule_set)} [rules {fingerprint(rule_set)}]"
    text = write_nfg(np.array(answer.matrix), answer.rows, answer.cols, title, labels=labels)
    if output is None:
        click.echo(text, nl=False)
    else:
        write_text_atomically(Path(output), text)
        click.echo(f"wrote {output}: {len(answer.rows)} x {len(answer.cols)} stage game, value {answer.value:.12f}", err=True)


@main.command("solve-openspiel")
@click.argument("game_spec", metavar="GAME")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--max-states", type=click.IntRange(min=1), default=None, help="Refuse to enumerate more states than this.")
def solve_openspiel(game_spec: str, as_json: bool, max_states: int | None) -> None:
    """Solve an OpenSpiel two-player zero-sum game with perfect information (needs the
    `crosscheck` extra), e.g. "goofspiel(num_cards=4,imp_info=False,points_order=descending)".

    Prints the value at the start and the stage matrix at the first decision,
    in the game's own returns for player 0.
    """
    try:
        from .openspiel import OpenSpielGame, load_game
    except ImportError as error:  # pragma: no cover - depends on the install
        raise click.UsageError(f"OpenSpiel is not installed ({error}); install the `crosscheck` extra") from None
    from .core.solve import solve_from

    try:
        spiel_game = load_game(game_spec)
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    game = OpenSpielGame(spiel_game)
    root = game.root()
    result = solve_from(game, [root], show_progress=not as_json, max_states=max_states)
    first = game.first_decision()
    i = result.index_of(first)
    rows = [game.action_label(first, 0, a) for a in result.row_actions[result.row_ptr[i] : result.row_ptr[i + 1]]]
    cols = [game.action_label(first, 1, a) for a in result.col_actions[result.col_ptr[i] : result.col_ptr[i + 1]]]
    matrix = result.stage_matrix(first, game)
    value = float(result.values[result.index_of(root)])
    if as_json:
        click.echo(json.dumps({
            "game": game_spec, "value": value, "states": result.num_states,
            "exploitability": result.max_exploitability,
            "matrix": {"rows": rows, "cols": cols, "values": matrix.tolist()},
        }))
        return
    width = max(len(x) for x in rows + cols) + 2
    lines = [
        f"game         {game_spec}",
        f"states       {result.num_states:,}",
        f"value        {value:.12f}   (player 0's return, at the start)",
        f"certificate  largest exploitability over all states {result.max_exploitability:.2e}",
        "", "stage matrix at the first decision (rows player 0, columns player 1)",
        " " * width + "".join(f"{c:>{width}}" for c in cols),
    ]
    lines += [f"{r:<{width}}" + "".join(f"{v:>{width}.4f}" for v in row) for r, row in zip(rows, matrix)]
    click.echo("\n".join(lines))


@main.command()
@click.option(
    "--grid", "grids", multiple=True, required=True, metavar="KEY=V1,V2,...",
    help="Vary one rules key over these values (each as in --set; a list value in brackets, "
    'e.g. bonus_cards=[],["ray"]). Repeat for the product of several keys.',
)
@rules_options
@cache_options
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Write the CSV here (default: stdout); each row is written as its rule set finishes.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Also write a page charting value and game length against each key.")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run on this Dask scheduler, e.g. tcp://10.0.0.5:8786 (default: a local cluster).")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Worker processes of the local cluster (default: one per core).")
@click.option("--max-states", type=click.IntRange(min=1), default=None,
              help="Refuse to enumerate more states than this, per rule set.")
@click.pass_context
def sweep(
    ctx: click.Context, grids: tuple[str, ...], rules_file: str | None, overrides: tuple[str, ...],
    cache_dir: str | None, out: str | None, html_path: str | None, scheduler: str | None,
    workers: int | None, max_states: int | None,
) -> None:
    """Solve every combination of the --grid values (reusing cached tables) and
    write one CSV row per rule set: the varied keys, fingerprint, value at the
    start, outcome split, expected length and solve time."""
    from .core.jobs import dask_client
    from .sweep import CsvRows, grid_points, parse_grid, run_sweep

    if scheduler and workers:
        raise click.UsageError("--workers sizes the local cluster; a --scheduler's cluster has its own")
    base = load_rules(rules_file) if rules_file else RuleSet()
    axes = [parse_grid(argument) for argument in grids]
    try:
        points = grid_points(base, axes, overrides)  # every rule set checked before anything runs
    except RulesError as error:
        raise with_one_set_per_key_hint(error, overrides) from None
    for path in (out, html_path):
        if path is not None:
            check_writable(path)
    started = time.perf_counter()
    # Connected before the CSV is opened: an unreachable scheduler leaves an old file as it was.
    with dask_client(scheduler, workers) as client, csv_output(out) as stream:
        table = CsvRows(stream, [axis.key for axis in axes])
        ctx.obj["interrupt_note"] = f"the rows finished so far are in {out}" if out else "the rows finished so far were printed"
        rows = run_sweep(
            [point.rules for point in points], client=client, cache_dir=cache_dir, max_states=max_states,
            on_row=lambda row: table.write(row, points[row.index].settings),
            # No bar over rows printed to the same terminal; off a terminal, a line every 30 s.
            show_progress=out is not None or not sys.stdout.isatty() or not sys.stderr.isatty(),
        )
    if html_path is not None:
        from .sweep_page import sweep_page

        note = f"rules: {rules_file or 'the defaults'}" + "".join(f"; --set {o}" for o in overrides)
        write_text_atomically(Path(html_path), sweep_page("Charge & Spark rule sweep", axes, points, rows, note))
    reused = sum(row.reused for row in rows)
    click.echo(
        f"{len(rows)} rule sets ({reused} from the cache) in {time.perf_counter() - started:.1f} s"
        + (f"; rows in {out}" if out else "") + (f"; page in {html_path}" if html_path else ""),
        err=True,
    )
    for row in rows:  # never silent: the rows' figures are not certified
        if row.ok and not row.certificate.certified:
            settings = " ".join(f"{key}={value}" for key, value in points[row.index].settings)
            warn(f"rule set {row.index + 1} ({settings}): {row.certificate.text}")
    failed = [row for row in rows if not row.ok]
    for row in failed:
        settings = " ".join(f"{key}={value}" for key, value in points[row.index].settings)
        warn(f"rule set {row.index + 1} ({settings}): {row.error}")
    if failed:
        raise SweepError(f"{len(failed)} of {len(rows)} rule sets could not be solved (see the error column)")


@contextlib.contextmanager
def csv_output(out: str | None):
    """The stream the CSV goes to: `out` (created or emptied now) or stdout."""
    if out is None:
        yield sys.stdout
        return
    try:
        stream = open(out, "w", encoding="utf-8", newline="")
    except OSError as error:
        raise OutputError(f"cannot write {out}: {error.strerror or error}") from None
    with stream:
        yield stream


def rules_difference(rule_set: RuleSet) -> str:
    """The keys that differ from the printed rules, as KEY=VALUE."""
    return " ".join(differences_from_default(rule_set)) or "none"


WON = {KNOCK_OUT: "by knock-out", MOON: "at the moon"}  # how a kind of win reads after "P1 wins"


def wins_line(answer: StateAnswer, outcomes: tuple[Outcome, ...], seat: Seat) -> str:
    """P(`seat` wins), then how: "0.600000   (by knock-out 0.400000, at the moon 0.200000)"."""
    ways = ", ".join(
        f"{WON.get(o.kind, o.kind)} {answer.terminal_probability[o.label]:.6f}" for o in outcomes if o.winner == seat
    )
    return f"{win_probability(answer.terminal_probability, outcomes, seat):.6f}   ({ways})"


def _spread_text(answer: StateAnswer, lasting: LengthAndStalls | None) -> str:
    """The median and the tail of the length."""
    from .summary import LENGTH_TURNS

    if lasting is None:
        return ("(the median, the tail and the stalls need play followed through the stored table:"
                " --follow-play; not past a table's edge)")
    length = lasting.length
    median = f"half of all games are over by turn {length.median}" if length.median is not None else (
        f"fewer than half of all games are over by turn {LENGTH_TURNS}")
    mean = "" if length.mean is not None or math.isnan(answer.expected_length) else (
        "; no finite mean: the game may never end")
    return f"{median}; {100 * length.p_beyond_200:.2f}% still going after {LENGTH_TURNS} turns{mean}"


def _stalls_lines(rule_set: RuleSet, lasting: LengthAndStalls | None) -> list[str]:
    """The stalls block (nothing when play has none)."""
    from .analysis.stalls import MIN_SHARE

    if lasting is None or not lasting.stalls:
        return []
    game = ChargeSparkGame(rule_set)
    lines = ["", f"stalls       loops of play holding at least {100 * MIN_SHARE:g}% of the expected length",
             "             (share of it, exit probability per turn, smallest probability either side plays there):"]
    for stall in lasting.stalls:
        share = "never ends" if stall.never_ends else f"{100 * stall.share:.1f}%"
        lines.append(
            f"             {share:>10}  exit {stall.exit_probability:.4f}  smallest {_probability(stall.min_probability)}"
            f"  {stall.kind:<15}  {stall.states:,} states  at {format_position(game.decode(stall.position), rule_set)}"
        )
    return lines


def _probability(p: float) -> str:
    """A probability that may be far below a percent, in eight characters."""
    return f"{p:<8.4f}" if p >= 1e-3 else f"{p:<8.1e}"


def _length_text(expected: float) -> str:
    if math.isnan(expected):
        return "the game never ends from here under these strategies"
    return f"{expected:.2f} turns expected until the game ends (this one included), given that it ends"


def _strategy_line(strategy: dict[str, float]) -> str:
    return "  ".join(f"{card} {p:.4f}" for card, p in strategy.items())


def timing_line(result: SolveResult, elapsed: float) -> str:
    n = result.table_states
    t = result.timings
    parts = [f"{elapsed:.1f} s in all"]
    for phase in ("enumerate", "solve", "certify"):
        if phase in t:
            rate = f", {n / t[phase]:,.0f} states/s" if t[phase] > 0 and phase != "certify" else ""
            parts.append(f"{phase} {t[phase]:.1f} s{rate}")
    return "; ".join(parts)


def query_text(
    rule_set: RuleSet, position: str, answer: StateAnswer, result: SolveResult, elapsed: float,
    source: Path | None = None, edge: Path | None = None, lasting: LengthAndStalls | None = None,
) -> str:
    width = max(len(c) for c in answer.rows + answer.cols) + 1
    header = " " * width + "".join(f"{c:>{width + 2}}" for c in answer.cols)
    status = table_certificate(result)
    lines = [
        f"rules        {rule_set.name or '(unnamed)'}  [fingerprint {fingerprint(rule_set)}]",
        f"changed      {rules_difference(rule_set)}",
        f"board        {rule_set.board}  (assumed layout: the sources give no track)",
        "model        open bonus hands; payoff P(P1 wins) + 0.5 P(unending)",
        f"position     {position}",
        "",
        f"value        {answer.value:.12f}   (to P1){value_mark(status)}",
        *uncertified_lines(status),
        f"P1 wins      {wins_line(answer, result.terminal_outcomes, Seat.P1)}",
        f"P2 wins      {wins_line(answer, result.terminal_outcomes, Seat.P2)}",
        f"unending     {answer.unending_probability:.6f}",
        f"length       {_length_text(answer.expected_length)}",
        f"             {_spread_text(answer, lasting)}",
        "             (the split and the length are those of the strategies shown; other optimal strategies may differ)",
        *_stalls_lines(rule_set, lasting),
        "",
        f"P1 plays     {_strategy_line(answer.row_strategy)}",
        f"P2 plays     {_strategy_line(answer.col_strategy)}",
        "",
        "stage matrix: value to P1 after each pair of cards (rows P1, columns P2)",
        header,
    ]
    for card, row in zip(answer.rows, answer.matrix):
        lines.append(f"{card:<{width}}" + "".join(f"{v:>{width + 2}.4f}" for v in row))
    # Over the bound, the value is still between both exact guarantees, which this line gives.
    verdict = "ok" if answer.exploitability <= CERTIFICATE_BOUND else "NOT CERTIFIED: epsilon-optimal"
    lines += [
        "",
        f"certificate  exploitability {answer.exploitability:.2e} ({verdict}, bound {CERTIFICATE_BOUND:.0e}):"
        f" P1's strategy guarantees {answer.p1_guarantee:.12f}, P2's {answer.p2_guarantee:.12f}",
        f"             largest Bellman residual {result.bellman_residual:.2e}; largest exploitability"
        f" over all {result.table_states:,} states {result.table_max_exploitability:.2e}",
        f"             with endless play scored as a loss for the strategy's owner: {answer.strict_exploitability:.2e}"
        + (f"; a standoff (the value moves by {answer.unending_dependence:.2g} with that scoring)"
           if answer.unending_dependence > STANDOFF_DEPENDENCE else ""),
        f"             {timing_line(result, elapsed) if source is None else f'answered in {elapsed:.2f} s from the solved table {source}'}",
        f"             method: {result.method}",
    ]
    if edge is not None:
        lines.append(f"             solved up to the states the stored table {edge} holds (their figures read from it)")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
