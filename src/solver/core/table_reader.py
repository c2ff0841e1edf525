"""A stored table opened without reading it: the few states a query needs.

A table of the default rules is gigabytes; a query needs one state and its
successors. The arrays are memory-mapped straight out of the `.npz` (stored
uncompressed), and every block of `table_file.BLOCK_BYTES` is checked against the
header's digest the first time anything in it is read, so a damaged file is
still never used: it raises `DamagedTableError` like a full load.

A state is found through the header's first code of each block of `states`
(`table_file.FIRST_CODES`): bisecting those needs no file access, then the one
block that can hold the code is read (and the next one's first code, when the
code lies past the block's last). Every entry used is checked against the
verified block, so a damaged index raises `DamagedTableError`, never finds a
wrong state. A table written without the index is binary-searched, a state a probe.
"""

from __future__ import annotations

import struct
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .result import ARRAY_FIELDS, PER_STATE_HURRY, HurryFigures, SolveResult
from .shared_arrays import release_pages
from .table_file import (
    BLOCK_BYTES,
    FIRST_CODES,
    DamagedTableError,
    TableFormat,
    array_inconsistency,
    block_digest,
    checked_header,
    hashing,
    result_from,
)

_LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # a zip member's local file header


class TableReader:
    """Read-only, verified access to a stored table's arrays, a few elements at a time."""

    def __init__(self, path: Path, key: str, fmt: TableFormat, fields: tuple[str, ...] = ARRAY_FIELDS) -> None:
        """`fields`: the arrays the file holds (a solved table's, by default)."""
        self.path = Path(path)
        self._verified: dict[str, set[int]] = {}
        try:
            with zipfile.ZipFile(self.path) as archive:
                members = {info.filename: info for info in archive.infolist()}
                if "header.npy" not in members:
                    raise DamagedTableError(f"{self.path}: not a solved table (no header)")
                with archive.open("header.npy") as f:
                    raw = np.lib.format.read_array(f, allow_pickle=False).tobytes()
            self.header = checked_header(self.path, raw, key, fmt)
            self._arrays = {name: self._map(members, name) for name in fields}
        except (DamagedTableError, FileNotFoundError):
            raise
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, UnicodeDecodeError, struct.error) as error:
            raise DamagedTableError(f"{self.path}: unreadable ({type(error).__name__}: {error})") from None
        self.num_states = int(self._arrays["states"].shape[0])
        self._first_codes = self._checked_first_codes()

    def _checked_first_codes(self) -> np.ndarray | None:
        """The header's first code of each block of `states`, checked for kind,
        length and order; None in a table written without them."""
        listed = self.header.get(FIRST_CODES)
        if listed is None:
            return None
        states = self._arrays["states"]
        problem = _index_problem(listed, states.dtype, self.num_states)
        if problem:
            raise DamagedTableError(f"{self.path}: the header's index of the states {problem}")
        return np.array(listed, np.int64)

    @property
    def indexed(self) -> bool:
        """Whether states are found through the header's index (else binary-searched)."""
        return self._first_codes is not None

    def _map(self, members: dict, name: str) -> np.ndarray:
        info = members.get(f"{name}.npy")
        if info is None:
            raise DamagedTableError(f"{self.path}: missing array {name}")
        if info.compress_type != zipfile.ZIP_STORED:
            raise DamagedTableError(f"{self.path}: {name} is compressed, tables are stored plain")
        with open(self.path, "rb") as f:
            f.seek(info.header_offset)
            fields = _LOCAL_HEADER.unpack(f.read(_LOCAL_HEADER.size))
            if fields[0] != b"PK\x03\x04":
                raise DamagedTableError(f"{self.path}: {name} has no zip header")
            f.seek(info.header_offset + _LOCAL_HEADER.size + fields[-2] + fields[-1])
            version = np.lib.format.read_magic(f)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read_header(f)
            offset = f.tell()
        if fortran or dtype.hasobject:
            raise DamagedTableError(f"{self.path}: {name} is not a plain C-ordered array")
        if {"dtype": dtype.str, "shape": list(shape)} != self.header["arrays"].get(name):
            raise DamagedTableError(f"{self.path}: {name} does not match the header's layout")
        if offset + int(np.prod(shape)) * dtype.itemsize > self.path.stat().st_size:
            raise DamagedTableError(f"{self.path}: truncated in {name}")
        if int(np.prod(shape)) == 0:
            return np.empty(shape, dtype)
        return np.memmap(self.path, dtype=dtype, mode="r", offset=offset, shape=tuple(shape))

    def take(self, name: str, lo: int, hi: int) -> np.ndarray:
        """A copy of `name[lo:hi]` (along the first axis), every block it touches verified."""
        a = self._arrays[name]
        if not 0 <= lo <= hi <= a.shape[0]:
            raise IndexError(f"{name}[{lo}:{hi}] out of range")
        if hi > lo:
            row = self._row_bytes(name)
            self._verify(name, range(lo * row // BLOCK_BYTES, (hi * row - 1) // BLOCK_BYTES + 1))
        taken = np.array(a[lo:hi])
        release_pages(a)  # copied: a solve reading a table as it goes keeps none of its pages
        return taken

    def rows(self, name: str, index: np.ndarray) -> np.ndarray:
        """A copy of `name[index]` (along the first axis), every block it touches verified."""
        a = self._arrays[name]
        index = np.asarray(index, np.int64)
        if index.size and (index.min() < 0 or index.max() >= a.shape[0]):
            raise IndexError(f"{name}: an index out of range")
        row = self._row_bytes(name)
        self._verify(name, np.unique(np.concatenate([index * row // BLOCK_BYTES, (index * row + row - 1) // BLOCK_BYTES])))
        taken = np.array(a[index])
        release_pages(a)
        return taken

    def _row_bytes(self, name: str) -> int:
        a = self._arrays[name]
        return a.dtype.itemsize * (int(np.prod(a.shape[1:])) if a.ndim > 1 else 1)

    def _verify(self, name: str, blocks) -> None:
        """Check each of `blocks` of `name` against the header's digest, once."""
        a = self._arrays[name]
        seen = self._verified.setdefault(name, set())
        raw = a.reshape(-1).view(np.uint8) if a.size else np.empty(0, np.uint8)
        digests = self.header["blocks"].get(name, [])
        for block in blocks:
            block = int(block)
            if block in seen:
                continue
            if block >= len(digests) or not _block_matches(raw, block, digests[block]):
                raise DamagedTableError(f"{self.path}: checksum mismatch in {name} (the file was changed or damaged)")
            seen.add(block)

    def mapped(self) -> SolveResult:
        """The whole table with every array memory-mapped (read-only), each block
        verified now: analyses can stream over a table larger than the memory
        they may use, the pages staying reclaimable file cache: each block let
        go once read (verifying the printed rules' table read all 12 GB of it
        into this process's resident pages)."""
        arrays = self.verified_arrays()
        problem = array_inconsistency(arrays)
        if problem:
            raise DamagedTableError(f"{self.path}: inconsistent arrays ({problem})")
        # The states are searched (binary search over the whole array) for every lookup; a
        # mapped array sits at an unaligned offset in the zip, where numpy would copy all of
        # it for each search: they are held in memory instead (8 bytes a state).
        states = np.array(arrays["states"])
        for a in arrays.values():  # the checks above read the offsets and the states
            release_pages(a)
        return result_from(self.path, {**arrays, "states": states}, self.header)

    def verified_arrays(self) -> dict[str, np.ndarray]:
        """Every array memory-mapped, each block verified now (once for a reader
        kept open), the pages let go behind the check."""
        with hashing() as pool:  # blocks checked side by side: each is read and hashed alone
            self._verify_all(pool)
        return dict(self._arrays)

    def _verify_all(self, pool: ThreadPoolExecutor) -> None:
        """`verified_arrays`' checks, the blocks hashed on `pool`; the first mismatch
        ends them (the blocks not yet checked are dropped)."""
        try:
            for name, a in self._arrays.items():
                raw = a.reshape(-1).view(np.uint8) if a.size else np.empty(0, np.uint8)
                digests = self.header["blocks"].get(name, [])
                done = self._verified.get(name, set())  # a reader kept open checks each block once
                left = [i for i in range(len(digests)) if i not in done]
                if len(digests) != -(-raw.size // BLOCK_BYTES) or not all(
                    pool.map(lambda i: _block_matches(raw, i, digests[i]), left)  # noqa: B023 - used at once
                ):
                    raise DamagedTableError(f"{self.path}: checksum mismatch in {name} (the file was changed or damaged)")
                self._verified[name] = set(range(len(digests)))
                release_pages(a)
        except DamagedTableError:
            pool.shutdown(cancel_futures=True)
            raise

    def index_of(self, code: int) -> int:
        """Index of the state `code`; KeyError if the table does not hold it."""
        if self._first_codes is None:
            return self._searched_index_of(code)
        if not np.iinfo(np.int64).min <= code <= np.iinfo(np.int64).max:
            raise KeyError(code)
        return int(self.indices_of(np.array([code], np.int64))[0])

    def indices_of(self, codes: np.ndarray) -> np.ndarray:
        """Index of each of `codes`; KeyError (naming one) if the table does not hold them all."""
        codes = np.asarray(codes, np.int64).reshape(-1)
        if self._first_codes is None:
            return np.array([self._searched_index_of(int(c)) for c in codes], np.int64)
        at, held = self._indexed_positions(codes)
        if not held.all():
            raise KeyError(int(codes[~held][0]))
        return at

    def positions_of(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where each of `codes` is, or would be inserted, in `states`, and whether
        the table holds it: only the blocks of `states` they fall in are read
        (each verified), so no copy of the table's codes is needed. An indexed
        table only (`indexed`)."""
        return self._indexed_positions(np.asarray(codes, np.int64).reshape(-1))

    def _indexed_positions(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where each of `codes` is, or would be inserted, in `states` (as
        `np.searchsorted`), and whether it is there: the blocks the header's
        index points at are read, verified, and searched one at a time (never
        more than a block of codes held at once, however many are asked)."""
        held = np.zeros(codes.size, np.bool_)
        at = np.zeros(codes.size, np.int64)
        if self.num_states == 0 or codes.size == 0:
            return at, held
        first_codes = self._index()
        per_block = BLOCK_BYTES // self._row_bytes("states")
        block = np.maximum(np.searchsorted(first_codes, codes, side="right") - 1, 0)
        order = np.argsort(block, kind="stable")
        by_block = block[order]
        needed = np.unique(by_block)
        bounds = np.searchsorted(by_block, np.append(needed, needed[-1] + 1))
        for b, lo, hi in zip(needed.tolist(), bounds[:-1].tolist(), bounds[1:].tolist()):
            piece = self._states_block(b, per_block)
            if piece.size > 1 and np.any(piece[1:] <= piece[:-1]):
                raise DamagedTableError(f"{self.path}: inconsistent arrays (states are not sorted)")
            asked = order[lo:hi]
            wanted = codes[asked]
            within = np.searchsorted(piece, wanted)
            inside = within < piece.size
            held[asked[inside]] = piece[within[inside]] == wanted[inside]
            at[asked] = b * per_block + within
            # A code past its block's last one must lie below the next block's first (the index says so).
            if not inside.all() and b + 1 < first_codes.size:
                self._states_block(b + 1, per_block, first_only=True)
        return at, held

    def _index(self) -> np.ndarray:
        """The header's first code of each block of `states` (for an indexed table)."""
        if self._first_codes is None:
            raise ValueError(f"{self.path}: the table has no index of its states")
        return self._first_codes

    def _states_block(self, block: int, per_block: int, first_only: bool = False) -> np.ndarray:
        """The codes of block `block` of `states` (its first alone if `first_only`),
        verified, and checked against the header's index."""
        lo = block * per_block
        codes = self.take("states", lo, lo + 1 if first_only else min(self.num_states, lo + per_block))
        if codes[0] != self._index()[block]:
            raise DamagedTableError(
                f"{self.path}: the header's index of the states does not match block {block}"
                " (the file was changed or damaged)"
            )
        return codes

    def _searched_index_of(self, code: int) -> int:
        """`index_of` in a table without an index: a binary search, reading one state per probe."""
        lo, hi = 0, self.num_states
        while lo < hi:  # binary search, reading one state per probe
            mid = (lo + hi) // 2
            if int(self.take("states", mid, mid + 1)[0]) < code:
                lo = mid + 1
            else:
                hi = mid
        if lo >= self.num_states or int(self.take("states", lo, lo + 1)[0]) != code:
            raise KeyError(code)
        return lo

    def part(self, codes: np.ndarray, detailed: np.ndarray | None = None) -> SolveResult:
        """A `SolveResult` holding only the states `codes` (each must be in the
        table), with the whole table's size and certificate. With `detailed`
        (some of `codes`), only those get every figure and their strategies;
        the others get their values alone (their other figures nan, no
        actions): what a stage matrix needs of the successors, a few blocks
        read instead of one per figure each."""
        index = np.unique(self.indices_of(codes))
        full = index if detailed is None else np.unique(self.indices_of(detailed))
        if not np.all(np.isin(full, index)):
            raise ValueError("the detailed states must be among the codes")
        at = np.searchsorted(index, full)
        is_full = np.zeros(index.size, np.bool_)
        is_full[at] = True
        per_state = {name: self.rows(name, index) for name in ("states", "values")}
        for name in ("terminal_probability", "unending_probability", "ending_turns", "p1_guarantee", "p2_guarantee",
                     *PER_STATE_HURRY):
            some = self.rows(name, full)
            every = np.full((index.size, *some.shape[1:]), np.nan if some.dtype.kind == "f" else -1, some.dtype)
            every[at] = some
            per_state[name] = every
        sides = {}
        for side in ("row", "col"):
            bounds = [self.take(f"{side}_ptr", i, i + 2) if whole else np.zeros(2, np.int64)
                      for i, whole in zip(index, is_full)]
            sides[f"{side}_ptr"] = np.concatenate([[0], np.cumsum([b[1] - b[0] for b in bounds])]).astype(np.int64)
            for field in ("actions", "strategy"):
                name = f"{side}_{field}"
                parts = [self.take(name, int(b[0]), int(b[1])) for b in bounds]
                sides[name] = np.concatenate(parts) if parts else self.take(name, 0, 0)
        whole = self.header.get("whole", {})
        terminal_payoff = self.take("terminal_payoff", 0, self._arrays["terminal_payoff"].shape[0])
        return result_from(
            self.path, {**per_state, **sides, "terminal_payoff": terminal_payoff}, self.header,
            whole_states=int(whole.get("states", self.num_states)),
            whole_max_exploitability=float(whole.get("max_exploitability", float("nan"))),
            whole_states_over_bound=_count_or_none(self.header.get("meta", {}).get("states_over_bound")),
            whole_hurry=HurryFigures(
                float(whole.get("max_strict_exploitability", float("nan"))), int(whole.get("fallback_states", -1)),
                int(whole.get("standoff_states", -1)),
            ),
        )


def _count_or_none(count) -> int | None:
    """A count the caller's metadata records (`states_over_bound`), or None where it records none."""
    return count if type(count) is int and count >= 0 else None


def _index_problem(listed, dtype: np.dtype, num_states: int) -> str | None:
    """What is wrong with a header's first codes of the blocks of `num_states`
    states of `dtype`, or None."""
    if dtype != np.int64 or BLOCK_BYTES % dtype.itemsize:
        return f"is of no use with codes of dtype {dtype}"
    if not isinstance(listed, list) or not all(type(code) is int for code in listed):
        return "is not a list of whole numbers"
    blocks = -(-num_states * dtype.itemsize // BLOCK_BYTES)
    if len(listed) != blocks:
        return f"has {len(listed)} entries, expected {blocks} (one a block)"
    info = np.iinfo(dtype)
    if listed and not info.min <= min(listed) <= max(listed) <= info.max:
        return f"holds a code out of the range of {dtype}"
    if any(a >= b for a, b in zip(listed, listed[1:])):
        return "is not sorted"
    return None


def _block_matches(raw: np.ndarray, block: int, digest: str) -> bool:
    """Whether block `block` of the mapped bytes `raw` has `digest`, its pages let go once read."""
    part = raw[block * BLOCK_BYTES : (block + 1) * BLOCK_BYTES]
    try:
        return block_digest(part) == digest
    finally:
        release_pages(part)
