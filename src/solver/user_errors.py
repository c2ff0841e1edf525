"""The errors a user's input can cause, and their one line: the command line
and the explorer report each of them the same way."""

from __future__ import annotations

from rules.charge_spark.cards import UnknownCardError
from rules.charge_spark.config import RulesError
from rules.charge_spark.notation import PositionError

from .analysis.results_cache import PartsFileError
from .core.files import CacheDirectoryError
from .core.graph import GraphTooLargeError
from .core.jobs import SchedulerError, WorkersLostError
from .sweep import SweepError

USER_ERRORS = (  # and OutputError, which the command line adds
    RulesError, PositionError, UnknownCardError, GraphTooLargeError, SchedulerError, SweepError, WorkersLostError,
    PartsFileError, CacheDirectoryError,
)


def printable(text: str) -> str:
    """`text` on one line with control characters escaped: messages echo user
    input, which must neither break the line nor reach the terminal raw."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def one_line(error: Exception) -> str:
    """The line that says what was wrong (the CLI prints it after `charge-spark: error: `)."""
    return printable(str(error))
