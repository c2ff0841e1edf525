"""The solved table of a rule set: from the cache if stored there, else solved now and stored.

The one way every consumer (the `solve` command, reports, sweeps) gets a
solved rule set, so that all of them share the cache, its lock and its
handling of damaged files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rules.charge_spark.config import RuleSet, canonical_mapping, fingerprint
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.size import estimate_reachable
from rules.charge_spark.state import initial_position

from .cache import DamagedTableError, default_cache_dir, load_table, quarantine, save_table, table_lock, table_path
from .result import SolveResult
from .table_reader import TableReader


@dataclass(frozen=True)
class SolvedTable:
    """A solved rule set and where its table lives."""

    rules: RuleSet
    result: SolveResult
    path: Path
    reused: bool  # loaded from the cache rather than solved now

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.rules)

    @property
    def start(self) -> int:
        """Encoding of the start position."""
        return ChargeSparkGame(self.rules).encode(initial_position(self.rules))


def cached_table(path: Path, key: str, warn: Callable[[str], None] | None = None) -> SolveResult | None:
    """The solved table at `path`, or None; a damaged one is reported through
    `warn`, moved aside and ignored."""
    try:
        return load_table(path, key)
    except FileNotFoundError:
        return None
    except DamagedTableError as error:
        _set_aside(path, error, warn)
        return None


def _set_aside(path: Path, error: DamagedTableError, warn: Callable[[str], None] | None) -> None:
    moved = quarantine(path)
    if warn is not None:
        warn(f"{error}; moved aside to {moved.name}, recomputing")


def stored_part(
    path: Path, key: str, code: int, game, warn: Callable[[str], None] | None = None,
) -> SolveResult | None:
    """What the stored table at `path` knows at state `code` and its successors
    (enough for `SolveResult.answer`), read without loading the whole table;
    None if no sound table there holds `code`. A damaged one is reported
    through `warn` and moved aside."""
    try:
        reader = TableReader(path, key)
        try:
            reader.index_of(code)
        except KeyError:
            return None
        nxt = np.asarray(game.expand(np.array([code], np.int64)).out_next)
        try:
            return reader.part(np.concatenate([[code], np.unique(nxt[nxt >= 0])]))
        except KeyError:
            raise DamagedTableError(f"{path}: a successor of a stored state is missing") from None
    except FileNotFoundError:
        return None
    except DamagedTableError as error:
        _set_aside(path, error, warn)
        return None


def solved_table(
    rules: RuleSet,
    cache_dir: Path | str | None = None,
    *,
    force: bool = False,
    max_states: int | None = None,
    show_progress: bool = False,
    warn: Callable[[str], None] | None = None,
    workers: int = 1,
) -> SolvedTable:
    """The table of every state reachable from the start under `rules`.

    Loaded from the cache (`cache_dir`, default `default_cache_dir()`) when a
    sound table is stored there; otherwise solved and stored atomically. A
    second process asking for the same rules waits for the first and reuses
    its table. Rules whose estimated size clearly exceeds `max_states` (or
    the memory available) are refused before enumerating."""
    key = fingerprint(rules)
    path = table_path(Path(cache_dir) if cache_dir else default_cache_dir(), key)
    with table_lock(path):
        result = None if force else cached_table(path, key, warn)
        if result is not None:
            return SolvedTable(rules, result, path, reused=True)
        from .solve import solve_from  # the compiled kernels load only when a solve is needed

        game = ChargeSparkGame(rules)
        code = game.encode(initial_position(rules))
        result = solve_from(
            game, [code], show_progress=show_progress, max_states=max_states,
            estimated_states=estimate_reachable(rules), estimated_from="from the start", workers=workers,
        )
        save_table(path, result, key, {"fingerprint": key, "rules": canonical_mapping(rules)})
        return SolvedTable(rules, result, path, reused=False)
