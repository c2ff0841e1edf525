"""The solved table of a rule set: from the cache if stored there, else solved now and stored.

The one way every consumer (the `solve` command, reports, sweeps) gets a
solved rule set, so that all of them share the cache, its lock and its
handling of damaged files.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from rules.charge_spark.config import RulesError, RuleSet, canonical_mapping, fingerprint, rules_from_mapping
from rules.charge_spark.game import ChargeSparkGame, encoding_layout_of
from rules.charge_spark.size import estimate_reachable
from rules.charge_spark.state import initial_position

from .certificate import certificate_meta
from .core.boundary import Boundary
from .core.result import ARRAY_FIELDS, SolveResult
from .core.table_file import DamagedTableError, load_table, quarantine, save_table, table_lock, table_path
from .core.table_reader import TableReader
from .progress_lines import PhaseProgress
from .storage import TABLE_FORMAT, default_cache_dir

if TYPE_CHECKING:
    from .core.layered import WarmStart  # not imported at run time: it loads the compiled kernels

Solved = TypeVar("Solved")

DISK_RESERVE_BYTES = 5 * 10**9
"""A new table is stored only if the disk keeps at least twice its size plus this free:
a sweep or report of large rule sets must not fill the disk with tables it has
already summarised (their numbers are kept in the results cache)."""

TABLE_BYTES_PER_STATE = 250
"""About what a stored table takes a state: its figures, and about five cards a
side with their weights (249 bytes on the printed rules, 250 at health 1)."""


@dataclass(frozen=True)
class SolvedTable:
    """A solved rule set and where its table lives."""

    rules: RuleSet
    result: SolveResult
    path: Path
    reused: bool  # loaded from the cache rather than solved now
    stored: bool = True  # False when solved now and left unstored for want of disk space
    warm_started: bool = False  # solved now from another table's values (`WarmTable`)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.rules)

    @property
    def start(self) -> int:
        """Encoding of the start position."""
        return ChargeSparkGame(self.rules).encode(initial_position(self.rules))


def warn_on_stderr(message: str) -> None:
    """A one-line warning, where no caller collects them (a worker process, say)."""
    print(f"charge-spark: warning: {message}", file=sys.stderr, flush=True)


def cached_table(
    path: Path, key: str, warn: Callable[[str], None] | None = None, *, mapped: bool = False,
) -> SolveResult | None:
    """The solved table at `path`, or None; a damaged one is reported through
    `warn`, moved aside and ignored. `mapped`: memory-mapped rather than read
    into memory (every block verified, once for a reader kept open: `readers_kept_open`)."""
    try:
        return _reader(path, key).mapped() if mapped else load_table(path, key, fmt=TABLE_FORMAT)
    except FileNotFoundError:
        return None
    except DamagedTableError as error:
        _set_aside(path, error, warn)
        return None


def _set_aside(path: Path, error: DamagedTableError, warn: Callable[[str], None] | None) -> None:
    moved = quarantine(path)
    if warn is not None:
        warn(f"{error}; moved aside to {moved.name}, recomputing")


_kept_readers: dict[tuple, TableReader] | None = None  # see `readers_kept_open`
_kept_lock = threading.Lock()


@contextlib.contextmanager
def readers_kept_open() -> Iterator[None]:
    """Within it, `stored_part` opens each stored table once and keeps it, with
    the blocks it has verified: a long-running process answering many queries
    (`charge-spark explore`) checks each block once, not once per query. A file
    replaced since (a recomputed table) is opened afresh."""
    global _kept_readers
    _kept_readers = {}
    try:
        yield
    finally:
        _kept_readers = None


def _reader(path: Path, key: str) -> TableReader:
    """A reader of the table at `path`: the one kept open for it, if any (`readers_kept_open`)."""
    kept = _kept_readers
    if kept is None:
        return TableReader(path, key, TABLE_FORMAT)
    stat = path.stat()  # FileNotFoundError as TableReader's
    which = (str(path), key, stat.st_ino, stat.st_mtime_ns, stat.st_size)
    with _kept_lock:
        reader = kept.get(which)
        if reader is None:
            for other in [k for k in kept if k[:2] == which[:2]]:
                del kept[other]  # an older file at that path
            reader = kept[which] = TableReader(path, key, TABLE_FORMAT)
        return reader


def stored_part(
    path: Path, key: str, code: int, game, warn: Callable[[str], None] | None = None,
) -> SolveResult | None:
    """What the stored table at `path` knows at state `code` and its successors
    (enough for `SolveResult.answer`), read without loading the whole table;
    None if no sound table there holds `code`. A damaged one is reported
    through `warn` and moved aside."""
    try:
        reader = _reader(path, key)
        try:
            reader.index_of(code)
        except KeyError:
            return None
        nxt = np.asarray(game.expand(np.array([code], np.int64)).out_next)
        try:
            return reader.part(np.concatenate([[code], np.unique(nxt[nxt >= 0])]), detailed=np.array([code]))
        except KeyError:
            raise DamagedTableError(f"{path}: a successor of a stored state is missing") from None
    except FileNotFoundError:
        return None
    except DamagedTableError as error:
        _set_aside(path, error, warn)
        return None


def stored_boundary(path: Path, key: str, warn: Callable[[str], None] | None = None) -> Boundary | None:
    """The stored table at `path` as the edge of a solve of another start of
    its game (`Boundary.of_stored`: read as needed); None if no sound table
    is there. A damaged one is reported through `warn` and moved aside."""
    try:
        return Boundary.of_stored(TableReader(path, key, TABLE_FORMAT))
    except FileNotFoundError:
        return None
    except DamagedTableError as error:
        _set_aside(path, error, warn)
        return None


def solve_to_boundary(
    path: Path, key: str, solve: Callable[[Boundary | None], Solved], warn: Callable[[str], None] | None = None,
) -> tuple[Solved, bool]:
    """`solve(boundary)` with the stored table at `path` as the boundary if a
    sound one is there, else `solve(None)`; and whether the table was used.
    A block of the table found damaged while the solve reads it is reported
    through `warn`, the table moved aside, and the solve done without it."""
    boundary = stored_boundary(path, key, warn)
    if boundary is None:
        return solve(None), False
    try:
        return solve(boundary), True
    except DamagedTableError as error:
        _set_aside(path, error, warn)
        return solve(None), False


@dataclass(frozen=True)
class WarmTable:
    """A stored table whose values may seed the solve of another game with
    the same state encoding (a variant of its rules, a restricted game): the
    solve then starts each cyclic component from them, and is certified as
    from a cold start (`solve_from`'s `warm`)."""

    path: str
    key: str  # the fingerprint its header must carry (`TableReader`)


def warm_table_of(rules: RuleSet, cache_dir: Path | str | None = None) -> WarmTable | None:
    """The stored table of `rules` in the cache (default `default_cache_dir()`)
    as a warm start for solves of games like it; None when it is not stored."""
    key = fingerprint(rules)
    path = table_path(Path(cache_dir) if cache_dir else default_cache_dir(), key)
    return WarmTable(str(path), key) if path.is_file() else None


def warm_start(table: WarmTable | None, game, warn: Callable[[str], None] | None = None) -> WarmStart | None:
    """First estimates for a solve of `game` read from `table` as needed, or
    None (a cold start) when there is no table, no sound one, or its rules
    encode states otherwise than `game` (`encoding_layout`). Each layer's
    states are found through the table's index of its codes, a block at a
    time, and only their values read: nothing of the table stays in memory
    (a table written before the index had its codes held, 8 bytes a state)."""
    if table is None or not hasattr(game, "encoding_layout"):
        return None
    try:
        reader = TableReader(Path(table.path), table.key, TABLE_FORMAT)
        if _layout_of_table(reader) != game.encoding_layout():
            return None
        # An indexed table is searched block by block as each layer asks: no copy of its codes is held.
        source = reader if reader.indexed else Boundary.of_stored(reader)
    except FileNotFoundError:
        return None
    except DamagedTableError as error:
        if warn is not None:
            warn(f"{error}; solving without a warm start")
        return None
    return functools.partial(_estimates_or_none, source)


def _layout_of_table(reader: TableReader) -> tuple | None:
    """The encoding layout of the rules a stored table was solved for (None if its header does not say)."""
    try:
        return encoding_layout_of(rules_from_mapping(reader.header["meta"]["rules"]))
    except (KeyError, TypeError, RulesError):
        return None


def _estimates_or_none(source: TableReader | Boundary, codes: np.ndarray) -> np.ndarray:
    """The stored values of `codes`, nan where the table does not hold them
    (`Boundary.estimates`); none at all where a block it reads is damaged
    (that layer then starts cold: the estimates only speed the solve up)."""
    codes = np.asarray(codes, np.int64)
    try:
        if isinstance(source, Boundary):
            return source.estimates(codes)
        out = np.full(codes.size, np.nan)
        at, held = source.positions_of(codes)
        if held.any():
            out[held] = source.rows("values", at[held])
        return out
    except DamagedTableError:
        return np.full(codes.size, np.nan)


def solved_table(
    rules: RuleSet,
    cache_dir: Path | str | None = None,
    *,
    force: bool = False,
    max_states: int | None = None,
    show_progress: bool = False,
    warn: Callable[[str], None] | None = None,
    workers: int = 1,
    mapped: bool = False,
    warm: WarmTable | None = None,
) -> SolvedTable:
    """The table of every state reachable from the start under `rules`.

    Loaded from the cache (`cache_dir`, default `default_cache_dir()`) when a
    sound table is stored there (`mapped`: memory-mapped, not read into
    memory); otherwise solved and stored atomically, unless that would leave
    the disk too little free space (`room_to_store`) or the write fails: then
    `warn` says so in one line and the table is returned unstored. A second
    process asking for the same rules waits for the first and reuses its
    table. Rules whose estimated size clearly exceeds `max_states` (or the
    memory available) are refused before enumerating. A solve starts from
    `warm`'s values when its rules share the state encoding (`warm_start`),
    else cold: the same certified table either way."""
    key = fingerprint(rules)
    path = table_path(Path(cache_dir) if cache_dir else default_cache_dir(), key)
    with table_lock(path):
        result = None if force else cached_table(path, key, warn, mapped=mapped)
        if result is not None:
            return SolvedTable(rules, result, path, reused=True)
        from .core.resources import bytes_per_state
        from .core.solve import refuse_if_estimate_too_large, solve_from  # the kernels load only when a solve is needed

        game = ChargeSparkGame(rules)
        code = game.encode(initial_position(rules))
        seed = warm_start(warm, game, warn)
        estimated = estimate_reachable(rules)
        # Rules too large to solve are refused here, before the room warning, with nothing else said
        # (so the solve is not given the estimate to check again).
        refuse_if_estimate_too_large(estimated, "from the start", max_states, bytes_per_state(game))
        if warn is not None and (short := room_warning(path.parent, estimated)) is not None:
            warn(short)  # before the solve, not after it: the user may free room, or stop and choose another disk
        with resuming_in(resume_dir_of(path)) as resume:
            result = solve_from(
                game, [code], show_progress=show_progress, max_states=max_states, workers=workers,
                warm=seed, resume_dir=resume,
            )
        # The header holds the largest exploitability; a table over the bound also records how many states are.
        meta = {"fingerprint": key, "rules": canonical_mapping(rules), **certificate_meta(result)}
        result, stored = kept_in_cache(path, result, key, meta, warn, mapped=mapped, shown=show_progress)
        return SolvedTable(rules, result, path, reused=False, stored=stored, warm_started=seed is not None)


def kept_in_cache(
    path: Path, result: SolveResult, key: str, meta: dict, warn: Callable[[str], None] | None, *, mapped: bool = False,
    shown: bool = False,
) -> tuple[SolveResult, bool]:
    """`result` stored at `path` (`store_table`, its progress `shown` or not), and whether it was. With
    `mapped`, the solve's arrays are let go for a mapping of the file: of the
    stored table, else of a copy deleted at once (the mapping keeps it readable
    until it is dropped)."""
    stored = store_table(path, result, key, meta, warn, shown)
    if mapped and not _mapped_already(result):
        result = (cached_table(path, key, warn, mapped=True) if stored else _mapped_copy(path, result, key, meta)) or result
    return result, stored


def resume_dir_of(path: Path) -> Path:
    """Where the solve of the table at `path` keeps its finished ranks until it
    is stored, so that an interrupted solve resumes from them."""
    return path.parent / "resume" / path.stem


def further_resume_dir(cache_dir: str | os.PathLike[str], key: str, what: str) -> Path:
    """Where a report's further solve of the rules fingerprinted `key` (`what`:
    "start" for a variant, "without-CARD" for a restricted game), which stores no
    table, keeps its finished ranks until it ends: an interrupted report resumes
    them rather than solving them again. Apart from `resume_dir_of`'s, since that
    solve keeps strategies and this one does not."""
    return Path(cache_dir) / "resume" / f"{key}.{what}"


@contextlib.contextmanager
def resuming_in(directory: Path | None) -> Iterator[Path | None]:
    """`directory` for a solve's finished ranks; its parent goes too once the
    solve is done and no other solve keeps anything there."""
    yield directory
    if directory is not None:
        with contextlib.suppress(OSError):
            directory.parent.rmdir()


def _mapped_already(result: SolveResult) -> bool:
    """Whether the solve's per-state arrays, the codes aside, are memory-mapped
    already (a rank-by-rank solve's are, from files unlinked at once): then
    mapping the stored table, which verifies all of it again, would only cost time."""
    small = ("states", "terminal_payoff")  # the codes are held in memory for searching; the payoffs are a few numbers
    return all(isinstance(getattr(result, name), np.memmap) for name in ARRAY_FIELDS if name not in small)


def _mapped_copy(path: Path, result: SolveResult, key: str, meta: dict) -> SolveResult | None:
    """`result` written beside `path` and mapped back, the file unlinked at once;
    None where the disk has no room for it even for a while, or the write fails."""
    if shutil.disk_usage(path.parent).free < table_bytes(result) + DISK_RESERVE_BYTES:
        return None
    copy = path.with_name(f".{path.name}.unkept-{os.getpid()}")
    try:
        save_table(copy, result, key, meta, fmt=TABLE_FORMAT)
        return TableReader(copy, key, TABLE_FORMAT).mapped()
    except (OSError, DamagedTableError):
        return None
    finally:
        copy.unlink(missing_ok=True)


def table_bytes(result: SolveResult) -> int:
    """Roughly the size of `result` stored (its arrays; the header is small beside them)."""
    return sum(np.asarray(getattr(result, name)).nbytes for name in ARRAY_FIELDS)


def room_needed(size: int, held: int = 0) -> int:
    """The free bytes a disk needs to store a table of `size` bytes: the table,
    then 2 x `size` + `DISK_RESERVE_BYTES` left, after `held` bytes more that
    other files will take from it by then."""
    return 3 * size + held + DISK_RESERVE_BYTES


def room_to_store(directory: Path, size: int, held: int = 0) -> bool:
    """Whether a table of `size` bytes may be written to `directory` (`room_needed`)."""
    directory.mkdir(parents=True, exist_ok=True)
    return shutil.disk_usage(directory).free >= room_needed(size, held)


def room_warning(directory: Path, states: float) -> str | None:
    """What to say before a solve of about `states` states whose table the disk
    in `directory` will not have room to keep (`room_to_store`, once the solve is
    done); None where it will. A solve's figures are files in the temporary
    directory until its table is stored: on the same disk they take about the
    table's size from what is free then."""
    size = int(states * TABLE_BYTES_PER_STATE)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        held = size if os.stat(directory).st_dev == os.stat(tempfile.gettempdir()).st_dev else 0
        if room_to_store(directory, size, held):
            return None
        free = shutil.disk_usage(directory).free
    except OSError:
        return None  # an unusable cache directory is reported where the table is stored
    needs = room_needed(size, held)
    return (f"the table of these rules (about {size / 1e9:.1f} GB) will not be stored: {directory} has"
            f" {free / 1e9:.1f} GB free, and storing it needs about {needs / 1e9:.0f} GB (three times its size"
            f"{', as much again for the solve' if held else ''} and {DISK_RESERVE_BYTES / 1e9:.0f} GB to spare); the"
            " figures of this solve are given, but the next command on these rules solves them again (free some"
            " room, or give a larger disk's directory with --cache-dir or CHARGE_SPARK_CACHE)")


def store_table(
    path: Path, result: SolveResult, key: str, meta: dict, warn: Callable[[str], None] | None, shown: bool = False,
) -> bool:
    """Store the table unless the disk lacks room; a failed write leaves any stored table as it was.
    `shown`: a progress bar (a line every 30 s off a terminal; the printed rules' table takes 20-25 s)."""
    size = table_bytes(result)

    def save() -> None:  # atomic: a temporary file renamed over the old one
        with PhaseProgress("storing the table", max(1, round(size / 1e6)), unit=" MB", shown=shown) as bar:
            written = 0

            def wrote(count: int) -> None:
                nonlocal written
                written += count
                bar.update(round(written / 1e6))

            save_table(path, result, key, meta, fmt=TABLE_FORMAT, wrote=wrote)

    return stored_if_room(path, size, save, warn)


def stored_if_room(
    path: Path, size: int, save: Callable[[], None], warn: Callable[[str], None] | None, what: str = "the table",
) -> bool:
    """`save()` the file of about `size` bytes at `path` unless the disk lacks room
    (`room_to_store`), each refusal or failed write said through `warn` in one line."""
    say = warn or (lambda message: None)
    if not room_to_store(path.parent, size):
        free = shutil.disk_usage(path.parent).free
        say(f"not storing {what} {path.name} ({size / 1e9:.1f} GB): the disk would keep {(free - size) / 1e9:.1f}"
            f" GB free, under twice its size plus {DISK_RESERVE_BYTES / 1e9:.0f} GB")
        return False
    try:
        save()
    except OSError as error:
        say(f"could not store {what} {path.name}: {error}")
        return False
    return True
