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

from rules.charge_spark.config import RuleSet, canonical_mapping, fingerprint
from rules.charge_spark.game import ChargeSparkGame, ReferenceChargeSparkGame
from rules.charge_spark.notation import format_position
from rules.charge_spark.size import estimate_reachable
from rules.charge_spark.state import Position, initial_position

from .certificate import table_certificate
from .core.outcome import Seat, win_probability
from .core.resources import usable_cores
from .core.result import SolveResult, StateAnswer
from .core.table_file import table_path
from .storage import default_cache_dir
from .tables import solve_to_boundary, stored_part
from .user_errors import printable

if TYPE_CHECKING:  # imported where used: scipy's solvers are no part of a plain answer's start
    from .analysis.stalls import LengthAndStalls, LengthFigures


def warn_on_stderr(message: str) -> None:
    """A warning as the command line prints it."""
    print(f"charge-spark: warning: {printable(message)}", file=sys.stderr, flush=True)


def note_on_stderr(message: str) -> None:
    """A note (what is being computed and why) as the command line prints it."""
    print(f"charge-spark: {printable(message)}", file=sys.stderr, flush=True)


def answer_at(
    rule_set: RuleSet, position: Position, cache_dir: str | None, max_states: int | None, show_progress: bool,
    warn: Callable[[str], None] = warn_on_stderr,
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
    the start), so a late position of a large game is still answered."""
    game = ChargeSparkGame(rule_set)
    code = game.encode(position)
    key = fingerprint(rule_set)
    path = table_path(Path(cache_dir) if cache_dir else default_cache_dir(), key)
    # Only the state and its successors are read: a stored table can be gigabytes.
    result = stored_part(path, key, code, ReferenceChargeSparkGame(rule_set), warn)
    source = path if result is not None else None
    edge = None
    if result is None:
        from .core.solve import solve_from

        where = "from the start" if position == initial_position(rule_set) else "from this position"
        result, used = solve_to_boundary(path, key, lambda boundary: solve_from(
            game, [code], show_progress=show_progress and sys.stderr.isatty(), max_states=max_states,
            estimated_states=estimate_reachable(rule_set, position), estimated_from=where,
            workers=usable_cores(), boundary=boundary,
        ), warn)
        edge = path if used else None
    # One stage game from a stored table: the readable engine builds it at once,
    # where loading the compiled one would cost more than the whole answer.
    answer = result.answer(code, game if source is None else ReferenceChargeSparkGame(rule_set))
    return answer, result, source, edge


def lasting_at(rule_set: RuleSet, position: Position, result: SolveResult, cache_dir: str | None, source: Path | None,
               edge: Path | None, follow_play: bool = False, warn: Callable[[str], None] = warn_on_stderr,
               note: Callable[[str], None] = note_on_stderr) -> LengthAndStalls | None:
    """The length figures and stalls from `position`, where `answer_at` answered it (None past a table's
    edge, and from a large stored table that does not keep them unless `follow_play`)."""
    from .analysis.stalls import length_and_stalls_at

    return length_and_stalls_at(
        rule_set, ChargeSparkGame(rule_set).encode(position), result,
        Path(cache_dir) if cache_dir else default_cache_dir(), source, edge is not None, warn,
        note, follow_play,
    )


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
