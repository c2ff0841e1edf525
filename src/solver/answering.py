"""What a position of a rule set comes to, for every face that asks (the
command line, the explorer, the benchmark): the answer, from the stored table
or solved, the length and stalls from the position, and the one object
`query --json` prints."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rules.charge_spark.config import RuleSet, canonical_mapping, fingerprint
from rules.charge_spark.game import ChargeSparkGame, ReferenceChargeSparkGame
from rules.charge_spark.notation import format_position
from rules.charge_spark.size import estimate_reachable
from rules.charge_spark.state import Position, initial_position

from .certificate import table_certificate
from .core.boundary import Boundary
from .core.graph import GraphTooLargeError
from .core.outcome import Seat, win_probability
from .core.resources import bytes_per_state, states_that_fit, usable_cores
from .core.result import SolveResult, StateAnswer
from .core.table_file import table_path
from .progress_lines import rounded_duration
from .storage import default_cache_dir
from .tables import SolvedTable, cached_table, solve_to_boundary, solved_table, stored_part
from .user_errors import printable

if TYPE_CHECKING:  # imported where used: scipy's solvers are no part of a plain answer's start
    from .analysis.stalls import LengthAndStalls, LengthFigures


def warn_on_stderr(message: str) -> None:
    """A warning as the command line prints it."""
    print(f"charge-spark: warning: {printable(message)}", file=sys.stderr, flush=True)


def note_on_stderr(message: str) -> None:
    """A note (what is being computed and why) as the command line prints it."""
    print(f"charge-spark: {printable(message)}", file=sys.stderr, flush=True)


SOLVE_START = 5.0
"""Seconds `query` foretells for a solve whatever its size (the process
started, the compiled kernels loaded, the table stored) ..."""
SOLVE_RATE = 60_000
"""... and states a second past that, a whole run from process start to table
stored on the project's 2-core machine, alone: the printed rules' 49,383,601
states took 875 s (ec69077) and, hours later on another machine of that kind,
698, 597 and 590 s (dac55f4 and twice 92981aa, kernels compiled in the run);
the what-if `cost.counter.disc=1`'s 53,410,717 took 863 s and 745 s: 57,000
to 84,000 a second (2026-12-07), 60,000 on a slower hour. At 60,000 the printed rules are foretold 14 min. (The
rate was 40,000 until then, measured at 9ed71cf on 2026-12-05, and foretold
21 min.) Rule sets where a side has no stationary optimal strategy go slower
(the printed rules with Spark dealing 2: 1 h 17 min for 47.3 M states, at
c267ae7)."""

UNASKED_SOLVE_LIMIT = 5_000_000
"""The most states (estimated) `query` solves without `--max-states` (about 2
minutes at `SOLVE_RATE`): past it the user is asked to run `solve` first,
rather than half an hour's work starting unasked."""


def solve_seconds(states: float, rate: float = SOLVE_RATE) -> float:
    """The foretold seconds of a solve of `states` at `rate` states a second (`SOLVE_START` included)."""
    return SOLVE_START + states / rate


class SolveNotAskedError(GraphTooLargeError):
    """A query would solve more states than it may unasked (`UNASKED_SOLVE_LIMIT`)."""


def solve_time_text(states: float) -> str:
    """How long solving `states` takes (`solve_seconds`), rounded up: 'about 20 s', 'about 35 min', 'about 1.5 h'."""
    return rounded_duration(solve_seconds(states))


def answer_at(
    rule_set: RuleSet, position: Position, cache_dir: str | None, max_states: int | None, show_progress: bool,
    warn: Callable[[str], None] = warn_on_stderr, *, note: Callable[[str], None] | None = None,
    store: bool = False, unasked_limit: int | None = None, solve_command: str = "charge-spark solve",
) -> tuple[StateAnswer, SolveResult, Path | None, Path | None]:
    """The answer at `position`, with the path of the stored table it came
    from, and the path of the stored table at whose edge it was solved.

    From the stored table of the rules if one holds it; else by solving what
    is reachable from it. Where a table of the rules is stored but does not
    hold the position (a handicap start, say), play from it is solved only
    until it reaches states the table holds, and their figures are read from
    it: seconds instead of a whole solve. With no table, unless the estimate
    of the part reachable clearly exceeds the limit: the estimate is made
    from `position` itself (measured as closely for other positions as for
    the start), so a late position of a large game is still answered.

    With `store` and no table stored, the rules' whole table is solved and
    stored (`solved_table`) when its estimate is within `max_states`, else
    within `unasked_limit`: the next query reads it. `note` hears what is
    solved, how many states and about how long, before it starts. Without
    `max_states`, a solve estimated past `unasked_limit` is refused with
    `SolveNotAskedError`, which names `solve_command`."""
    game = ChargeSparkGame(rule_set)
    code = game.encode(position)
    key = fingerprint(rule_set)
    path = table_path(Path(cache_dir) if cache_dir else default_cache_dir(), key)
    # Only the state and its successors are read: a stored table can be gigabytes.
    result = stored_part(path, key, code, ReferenceChargeSparkGame(rule_set), warn)
    if result is not None:
        # One stage game from a stored table: the readable engine builds it at once,
        # where loading the compiled one would cost more than the whole answer.
        return result.answer(code, ReferenceChargeSparkGame(rule_set)), result, path, None
    say = note or (lambda message: None)
    limit = max_states if max_states is not None else unasked_limit
    asked = store or note is not None or unasked_limit is not None  # else as before: the explorer's way
    if asked and not path.exists():
        table = _table_solved_now(rule_set, position, path, max_states, limit, show_progress, warn, say, store,
                                  solve_command)
        if table is not None and _holds(table.result, code):
            return table.result.answer(code, game), table.result, None, None
    from .core.solve import solve_from

    def solve(boundary: Boundary | None) -> SolveResult:
        if boundary is not None:
            _say_states_added(game, code, boundary, max_states, unasked_limit, say)
        where = "from the start" if position == initial_position(rule_set) else "from this position"
        return solve_from(
            game, [code], show_progress=show_progress, max_states=max_states,
            estimated_states=estimate_reachable(rule_set, position), estimated_from=where,
            workers=usable_cores(), boundary=boundary,
        )

    result, used = solve_to_boundary(path, key, solve, warn)
    return result.answer(code, game), result, None, path if used else None


def _table_solved_now(
    rule_set: RuleSet, position: Position, path: Path, max_states: int | None, limit: int | None,
    show_progress: bool, warn: Callable[[str], None], say: Callable[[str], None], store: bool, solve_command: str,
) -> SolvedTable | None:
    """The rules' table solved and stored now, where `store` and its estimate is within `limit`; else None,
    once `say` has heard what the solve from `position` alone will be (or `SolveNotAskedError` past `limit`)."""
    from .core.solve import refuse_if_estimate_too_large

    per_state = bytes_per_state(ChargeSparkGame(rule_set))
    whole = estimate_reachable(rule_set, initial_position(rule_set))
    if store and (limit is None or whole <= limit):
        refuse_if_estimate_too_large(whole, "from the start", max_states, per_state)  # before saying it solves
        say(f"no stored table for these rules: solving {about_states(whole)} ({solve_time_text(whole)}),"
            " stored for next time")
        return solved_table(rule_set, path.parent, max_states=max_states, show_progress=show_progress,
                            warn=warn, workers=usable_cores())
    start = position == initial_position(rule_set)
    here = whole if start else estimate_reachable(rule_set, position)
    refuse_if_estimate_too_large(here, "from the start" if start else "from this position", max_states, per_state)
    if max_states is None and limit is not None and here > limit:
        reach = "these rules have" if start else "play from this position reaches"
        raise SolveNotAskedError(
            f"{reach} {about_states(here)} ({solve_time_text(here)} to solve): run {solve_command} first,"
            " or pass --max-states to solve them here")
    where = "from the start" if start else "from this position"
    why = "" if not store else f" (the rules' table, {about_states(whole)}, is stored by {solve_command})"
    say(f"no stored table for these rules: solving {about_states(here)} {where} ({solve_time_text(here)}),"
        f" not stored{why}")
    return None


def _say_states_added(
    game: ChargeSparkGame, code: int, boundary: Boundary, max_states: int | None, unasked_limit: int | None,
    say: Callable[[str], None],
) -> None:
    """Says how many states a solve from `code` to `boundary`'s edge adds; `SolveNotAskedError` past
    `unasked_limit` without `max_states` (past `max_states`, the solve's own guard refuses)."""
    limit = max_states if max_states is not None else unasked_limit
    added = states_added(game, code, boundary, limit)
    if added is not None:
        say(f"this position is outside the stored table: solving the {_states(added)} it adds"
            f" ({solve_time_text(added)}), up to the table's edge")
    elif max_states is None and unasked_limit is not None:
        raise SolveNotAskedError(
            f"this position adds more than {unasked_limit:,} states to the stored table (over"
            f" {solve_time_text(unasked_limit).removeprefix('about ')} to solve): pass --max-states to solve them here")


def states_added(game: ChargeSparkGame, code: int, boundary: Boundary, limit: int | None) -> int | None:
    """How many states a solve of play from `code` up to `boundary`'s edge holds besides the edge's
    (None past `limit`): enumerated as that solve enumerates them, a small part of its time."""
    from .core.layered import enumerate_by_rank

    if limit is None:
        limit = states_that_fit(bytes_per_state(game))
    try:
        layers = enumerate_by_rank(game, np.array([code], np.int64), max_states=limit, workers=usable_cores(),
                                   boundary=boundary)
    except GraphTooLargeError:
        return None
    return sum(layer.states.size for layer in layers if not layer.given)


def _holds(result: SolveResult, code: int) -> bool:
    try:
        result.index_of(code)
    except KeyError:
        return False
    return True


def _states(count: int) -> str:
    return f"{count:,} state" + ("" if count == 1 else "s")


def about_states(count: float) -> str:
    """An estimated count of states, as said before a solve: 'about 220,000 states'."""
    from .core.solve import approximate_count

    return f"about {approximate_count(count)} states"


def lasting_at(rule_set: RuleSet, position: Position, result: SolveResult, cache_dir: str | None, source: Path | None,
               edge: Path | None, follow_play: bool = False, warn: Callable[[str], None] = warn_on_stderr,
               note: Callable[[str], None] = note_on_stderr, shown: bool = False) -> LengthAndStalls | None:
    """The length figures and stalls from `position`, where `answer_at` answered it (None past a table's
    edge, and from a large stored table that does not keep them unless `follow_play`); `shown`: the
    progress of following play and of the length distribution (a minute and a half at the printed rules)."""
    from .analysis.stalls import length_and_stalls_at

    return length_and_stalls_at(
        rule_set, ChargeSparkGame(rule_set).encode(position), result,
        Path(cache_dir) if cache_dir else default_cache_dir(), source, edge is not None, warn,
        note, follow_play, shown,
    )


def usage_at(rule_set: RuleSet, position: Position, result: SolveResult, cache_dir: str | None, source: Path | None,
             edge: Path | None, follow_play: bool = False, warn: Callable[[str], None] = warn_on_stderr) -> dict | None:
    """Each card's share of each player's plays over whole games from `position`, where `answer_at`
    answered it, and the dead cards, as the report's card usage counts them: `{"p1": {card: share}, "p2": ...,
    "dead": [...]}`. None past a table's edge, and from a stored table of a million states or more unless
    `follow_play` (play is then followed through all of it)."""
    from .analysis.sensitivity import play_of
    from .analysis.stalls import KEPT_STATES, stored_states

    if edge is not None:
        return None
    game = ChargeSparkGame(rule_set)
    code = game.encode(position)
    if source is not None:
        key = fingerprint(rule_set)
        if not follow_play and stored_states(source, key) >= KEPT_STATES:
            return None
        whole = cached_table(source, key, warn, mapped=True)
        if whole is None:
            return None
        result = whole
    play, _ = play_of(game, result, code, 200)
    return {"p1": dict(zip(play.cards, play.p1_share)), "p2": dict(zip(play.cards, play.p2_share)),
            "dead": list(play.dead)}


def query_json(
    rule_set: RuleSet, position: str, answer: StateAnswer, result: SolveResult, lasting: LengthAndStalls | None = None,
) -> dict:
    """The answer as JSON; `lasting`: the `LengthAndStalls` from the position (None: not known)."""
    length = length_figures(answer, lasting)
    game = ChargeSparkGame(rule_set)
    return {
        "rules": canonical_mapping(rule_set),
        "fingerprint": fingerprint(rule_set),
        "position": position,
        "value": answer.value,
        "p1_win": win_probability(answer.terminal_probability, result.terminal_outcomes, Seat.P1),
        "p2_win": win_probability(answer.terminal_probability, result.terminal_outcomes, Seat.P2),
        "outcomes": dict(answer.terminal_probability),
        "unending": answer.unending_probability,
        "expected_length": None if math.isnan(answer.expected_length) else answer.expected_length,
        "length": {"mean": length.mean, "median": length.median, "p_beyond_200": length.p_beyond_200},
        "stalls": None if lasting is None else [
            {**asdict(stall), "position": format_position(game.decode(stall.position), rule_set),
             "code": stall.position}
            for stall in lasting.stalls
        ],
        "p1_strategy": answer.row_strategy,
        "p2_strategy": answer.col_strategy,
        "matrix": {"rows": list(answer.rows), "cols": list(answer.cols), "values": [list(r) for r in answer.matrix]},
        "exploitability": answer.exploitability,
        **table_certificate(result).as_json(),  # every figure above is of that table
        "certificate": {
            "exploitability": answer.exploitability,
            "p1_guarantee": answer.p1_guarantee,
            "p2_guarantee": answer.p2_guarantee,
            "bellman_residual": result.bellman_residual,
            "max_exploitability_all_states": result.table_max_exploitability,
            "strict_exploitability": answer.strict_exploitability,
            "unending_dependence": answer.unending_dependence,
            "states": result.table_states,
            "method": result.method,
            "seconds": {phase: round(seconds, 3) for phase, seconds in result.timings.items()},
        },
    }


def length_figures(answer: StateAnswer, lasting: LengthAndStalls | None) -> LengthFigures:
    """The `LengthFigures` of `lasting`, or without it the mean alone."""
    from .analysis.stalls import LengthFigures, mean_length

    if lasting is not None:
        return lasting.length
    return LengthFigures(mean_length(answer.expected_length, answer.unending_probability), None, None)
