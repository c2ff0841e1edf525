"""`ast.parse` made to take turns between threads, in every process that imports the engine.

numpy reads each .npy header (every table, checkpoint and layer file the
engine opens) with `ast.literal_eval`, which calls `ast.parse`. CPython 3.11
keeps the AST constructor's recursion depth per interpreter, not per call: two
threads parsing at once (one switched out mid-parse, by a collection) can
fail with "SystemError: AST constructor recursion depth mismatch"
(python/cpython#106905). It was seen at the end of a solve, on the assembly's
two threads; a Dask worker running several further solves on its threads, or
the explorer serving pages while its solve loads tables, reads headers on
several threads too. One process-wide lock around `ast.parse` covers them
all, whoever the reader: a header is a few hundred bytes, so the turns cost
nothing measurable.
"""

from __future__ import annotations

import ast
import functools
import os
import threading
from typing import Any

_TURNS = threading.RLock()
_parse = getattr(ast.parse, "__wrapped__", ast.parse)  # the interpreter's own, even if this module is loaded again


@functools.wraps(_parse)
def _parse_in_turn(*args: Any, **kwargs: Any) -> Any:
    with _TURNS:
        return _parse(*args, **kwargs)


def _fresh_turns() -> None:
    # A child forked while another thread of its parent held the lock would otherwise wait for it forever.
    global _TURNS
    _TURNS = threading.RLock()


os.register_at_fork(after_in_child=_fresh_turns)


def parse_in_turns() -> None:
    """Make `ast.parse` (and so `ast.literal_eval`, numpy's header reader) hold
    one process-wide lock while it runs."""
    ast.parse = _parse_in_turn
