"""Solved tables on disk: one file per key, written atomically, verified on load.
The application names the format (`TableFormat`); the engine only checks it.

A table is a numpy `.npz` (no pickle: loaded with `allow_pickle=False`) holding
the `SolveResult` arrays and a JSON header: format name and version, the
package version that wrote it, the caller's key and metadata (e.g. the rules
fingerprint), and a SHA-256 of every array's dtype, shape and bytes. Anything
that does not match -- truncation, a flipped byte, another format version,
another key -- raises `DamagedTableError`; the caller moves the file aside with
`quarantine` and recomputes. Writes go to a temporary file in the same
directory, are flushed and fsynced, then renamed over the target, so a reader
sees the old table or the new one, never half of one; `table_lock` lets a
second solve of the same key wait for the first instead of repeating it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import time
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .files import replaced_atomically
from .interruption import stop_if_asked
from .locks import exclusive_lock
from .outcome import Outcome
from .resources import usable_cores
from .result import ARRAY_FIELDS, PER_STATE_HURRY, SolveResult

BLOCK_BYTES = 1 << 20  # arrays are checksummed in blocks, so one state can be read and verified alone
CHUNK_BYTES = 16 * BLOCK_BYTES  # arrays are written and checked this much at a time
FIRST_CODES = "first_codes"
"""Header field: the first code of each block of `states`, so that finding a state reads one
block, not the ~26 of a binary search. Tables written without it are searched as before."""


class DamagedTableError(Exception):
    """A cache file that cannot be trusted (the message names the file and the problem)."""


@dataclass(frozen=True)
class TableFormat:
    """What a table file says it is, given by the application that writes and reads it:
    a file of another name, version or writer is refused, never mixed in."""

    name: str
    version: int
    written_by: str


def table_path(cache_dir: Path, key: str) -> Path:
    return Path(cache_dir) / f"{key}.npz"


def block_digests(a: np.ndarray) -> list[str]:
    """Digest of each `BLOCK_BYTES` block of `a`'s bytes (C order), a chunk's
    blocks hashed side by side (`hashing`)."""
    with hashing() as pool:
        return [digest for chunk in byte_chunks(a) for digest in pool.map(block_digest, _blocks(chunk))]


def hashing() -> ThreadPoolExecutor:
    """Threads that hash blocks on every usable core: hashlib lets go of the
    interpreter's lock over a block. On two cores the printed rules' 12.3 GB
    table is written in 22-24 s instead of 33-36 s, and opened with every
    block checked in 11-15 s instead of 18-21 s. Used as a context manager:
    its threads end with the block, before anything forks."""
    return ThreadPoolExecutor(usable_cores())


def _blocks(chunk: np.ndarray) -> Iterator[np.ndarray]:
    return (chunk[i : i + BLOCK_BYTES] for i in range(0, chunk.size, BLOCK_BYTES))


def byte_chunks(a: np.ndarray) -> Iterator[np.ndarray]:
    """`a`'s bytes (C order) in chunks of whole blocks. The pages of a
    memory-mapped array are released behind the reading, so that going through
    a table far larger than memory never holds all of it."""
    raw = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    for lo in range(0, raw.size, CHUNK_BYTES):
        yield raw[lo : lo + CHUNK_BYTES]
        _release(a, lo, min(raw.size, lo + CHUNK_BYTES))


def _release(a: np.ndarray, lo: int, hi: int) -> None:
    """Let the kernel drop bytes [lo, hi) of a memory-mapped array from this process's memory."""
    mapping = getattr(a, "_mmap", None)
    if mapping is None or not hasattr(mapping, "madvise") or not hasattr(mmap, "MADV_DONTNEED"):
        return
    base = int(getattr(a, "offset", 0)) % mmap.ALLOCATIONGRANULARITY  # where the array starts in its mapping
    start = (base + lo) // mmap.PAGESIZE * mmap.PAGESIZE
    with contextlib.suppress(OSError, ValueError):
        mapping.madvise(mmap.MADV_DONTNEED, start, base + hi - start)


def block_digest(raw: np.ndarray) -> str:
    return hashlib.blake2b(raw.data, digest_size=16).hexdigest()


def array_layout(a: np.ndarray) -> dict:
    return {"dtype": a.dtype.str, "shape": list(a.shape)}


def _whole_figures(result: SolveResult) -> dict:
    """What a reader of part of the table shows for the whole of it."""
    try:
        return {"states": result.table_states, "max_exploitability": result.table_max_exploitability,
                **asdict(result.table_hurry_figures)}
    except ValueError:  # arrays of inconsistent sizes: loading refuses the table anyway
        return {}


def save_table(
    path: Path, result: SolveResult, key: str, meta: dict | None = None, *, fmt: TableFormat,
    wrote: Callable[[int], None] | None = None,
) -> None:
    """Write `result` to `path` atomically (temporary file, fsync, rename).

    The arrays are streamed into the file a chunk at a time, with their block
    digests, and the header goes last: a result whose arrays are memory-mapped
    (a large solve) is written without ever being held in memory whole.
    `wrote(bytes)` is called as each chunk of an array is written."""
    header = {
        "terminal_outcomes": [o.to_json() for o in result.terminal_outcomes],
        "action_labels": list(result.action_labels),
        "unending_payoff": result.unending_payoff,
        "bellman_residual": result.bellman_residual,
        "method": result.method,
        "timings": result.timings,
        "hurried_rounds": result.hurried_rounds,
        "whole": _whole_figures(result),
    }
    write_arrays(path, {name: getattr(result, name) for name in ARRAY_FIELDS}, header, key, meta, fmt=fmt, wrote=wrote)


def write_arrays(
    path: Path, arrays: dict[str, np.ndarray], header: dict, key: str, meta: dict | None = None, *, fmt: TableFormat,
    wrote: Callable[[int], None] | None = None,
) -> None:
    """`arrays` (`states` among them: sorted codes) and `header` written to `path`
    as a table file (`save_table`), atomically; the format, key, layout and
    block digests are added to the header. `wrote(bytes)`: as in `save_table`."""
    path = Path(path)
    stop_if_asked()
    path.parent.mkdir(parents=True, exist_ok=True)
    with replaced_atomically(path) as tmp, open(tmp, "wb") as f:
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
            blocks = {name: _write_array(archive, name, a, wrote) for name, a in arrays.items()}
            header = {
                "format": fmt.name,
                "format_version": fmt.version,
                "written_by": fmt.written_by,
                "key": key,
                "meta": meta or {},
                **header,
                "arrays": {name: array_layout(a) for name, a in arrays.items()},
                "blocks": blocks,
            }
            first_codes = block_first_codes(arrays["states"])
            if first_codes is not None:
                header[FIRST_CODES] = first_codes
            with archive.open("header.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.frombuffer(json.dumps(header).encode(), np.uint8))
        stop_if_asked()  # asked while it was written: the file is removed, the one stored before kept


def block_first_codes(states: np.ndarray) -> list[int] | None:
    """The first code of each `BLOCK_BYTES` block of `states` (int64 codes); None
    where a block would not hold whole codes (no index is stored then)."""
    states = np.asarray(states)
    if states.ndim != 1 or states.dtype != np.int64 or BLOCK_BYTES % states.dtype.itemsize:
        return None
    return states[:: BLOCK_BYTES // states.dtype.itemsize].tolist()  # of a mapped array, a page a block


def _write_array(
    archive: zipfile.ZipFile, name: str, a: np.ndarray, wrote: Callable[[int], None] | None = None,
) -> list[str]:
    """Store `a` as member `name`.npy (what `np.savez` writes); its block digests,
    each chunk's hashed on other threads while this one writes it (the zip's
    own checksum, then the disk). `wrote(bytes)` after each chunk."""
    digests: list[str] = []
    with archive.open(f"{name}.npy", "w", force_zip64=True) as member, hashing() as pool:
        header = np.lib.format.header_data_from_array_1_0(np.ascontiguousarray(a[:0]))
        header["shape"] = a.shape
        np.lib.format.write_array_header_1_0(member, header)
        for chunk in byte_chunks(a):
            hashed = [pool.submit(block_digest, block) for block in _blocks(chunk)]
            member.write(chunk.data)
            digests.extend(future.result() for future in hashed)  # before the next chunk lets this one's pages go
            if wrote is not None:
                wrote(chunk.nbytes)
    return digests


def load_table(path: Path, key: str, *, fmt: TableFormat) -> SolveResult:
    """The table at `path`, checked against `key`; FileNotFoundError if there is
    none, DamagedTableError if it cannot be trusted."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            names = set(npz.files)
            if "header" not in names:
                raise DamagedTableError(f"{path}: not a solved table (no header)")
            header = checked_header(path, npz["header"].tobytes(), key, fmt)
            missing = [name for name in ARRAY_FIELDS if name not in names]
            if missing:
                raise DamagedTableError(f"{path}: missing arrays {', '.join(missing)}")
            arrays = {name: npz[name] for name in ARRAY_FIELDS}
    except FileNotFoundError:
        raise
    except DamagedTableError:
        raise
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, UnicodeDecodeError) as error:
        raise DamagedTableError(f"{path}: unreadable ({type(error).__name__}: {error})") from None
    for name, a in arrays.items():
        if array_layout(a) != header["arrays"].get(name) or block_digests(a) != header["blocks"].get(name):
            raise DamagedTableError(f"{path}: checksum mismatch in {name} (the file was changed or damaged)")
    problem = array_inconsistency(arrays)
    if problem:
        raise DamagedTableError(f"{path}: inconsistent arrays ({problem})")
    return result_from(path, arrays, header)


def result_from(path: Path, arrays: dict[str, Any], header: dict, **extra: Any) -> SolveResult:
    """The `SolveResult` of a table's arrays and header (`extra`: further fields)."""
    try:
        return SolveResult(
            **arrays,
            terminal_outcomes=header_outcomes(header),
            action_labels=tuple(header["action_labels"]),
            unending_payoff=float(header["unending_payoff"]),
            bellman_residual=float(header["bellman_residual"]),
            method=str(header["method"]),
            timings={str(k): float(v) for k, v in header["timings"].items()},
            hurried_rounds={str(k): int(v) for k, v in header.get("hurried_rounds", {}).items()},  # older tables: none
            **extra,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise DamagedTableError(f"{path}: malformed header ({error})") from None


def header_outcomes(header: dict) -> tuple[Outcome, ...]:
    """The terminal outcomes a table's header records."""
    return tuple(Outcome.from_json(entry) for entry in header["terminal_outcomes"])


def checked_header(path: Path, raw: bytes, key: str, fmt: TableFormat) -> dict:
    """The table's header, checked for format, version, solver and key."""
    header = json.loads(raw.decode())
    if not isinstance(header, dict) or header.get("format") != fmt.name:
        raise DamagedTableError(f"{path}: not a solved table")
    if header.get("format_version") != fmt.version:
        raise DamagedTableError(
            f"{path}: table format {header.get('format_version')}, this version reads {fmt.version}"
        )
    if header.get("written_by") != fmt.written_by:
        # Another solver version may compute or store differently: never mix them.
        raise DamagedTableError(f"{path}: written by solver {header.get('written_by')}, this is {fmt.written_by}")
    if header.get("key") != key:
        raise DamagedTableError(f"{path}: table of {header.get('key')!r}, expected {key!r}")
    if not isinstance(header.get("arrays"), dict) or not isinstance(header.get("blocks"), dict):
        raise DamagedTableError(f"{path}: malformed header (no array layout or checksums)")
    return header


def array_inconsistency(a: dict[str, np.ndarray]) -> str | None:
    """What is wrong with the arrays' sizes and kinds, or None."""
    n = a["states"].shape[0]
    for name in ARRAY_FIELDS:
        if a[name].dtype.kind not in "iuf":
            return f"{name} has dtype {a[name].dtype}"
    per_state = ("values", "unending_probability", "ending_turns", "p1_guarantee", "p2_guarantee", *PER_STATE_HURRY)
    for name in per_state:
        if a[name].shape != (n,):
            return f"{name} has shape {a[name].shape}, expected ({n},)"
    if a["terminal_probability"].shape != (n, a["terminal_payoff"].shape[0]):
        return "terminal_probability does not match states and terminal outcomes"
    for side in ("row", "col"):
        ptr, actions, strategy = a[f"{side}_ptr"], a[f"{side}_actions"], a[f"{side}_strategy"]
        if ptr.shape != (n + 1,) or (n and (ptr[0] != 0 or np.any(np.diff(ptr) < 1))):
            return f"{side}_ptr is not an index of {n} states"
        if actions.shape != (int(ptr[-1]),) or strategy.shape != actions.shape:
            return f"{side}_actions or {side}_strategy has the wrong length"
    if n > 1 and np.any(np.diff(a["states"]) <= 0):
        return "states are not sorted"
    return None


def quarantine(path: Path) -> Path:
    """Move a damaged table aside (kept for inspection, never loaded again)."""
    path = Path(path)
    target = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    os.replace(path, target)
    return target


@contextlib.contextmanager
def table_lock(path: Path, say: Callable[[str], None] | None = None) -> Iterator[None]:
    """Exclusive lock for computing the table at `path` (a second process waits, saying so: `locks`)."""
    with exclusive_lock(Path(path), say):
        yield
