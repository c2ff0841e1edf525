"""One side's certified guarantees of a solved table, stored without the rest.

A table used only as a bound (what one side's certified strategy holds the
other to, state by state) needs its states and that one figure: 16 bytes a
state where the whole table takes about 250. The file is a table file
(`table_file.write_arrays`: atomic, every block checksummed, the states
indexed) holding `states` and the guarantee, named by the application's own
`TableFormat`; it is read memory-mapped, every block verified on opening.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .result import SolveResult
from .shared_arrays import release_pages
from .table_file import DamagedTableError, TableFormat, write_arrays
from .table_reader import TableReader

SIDES = ("p1_guarantee", "p2_guarantee")


@dataclass(frozen=True, eq=False)
class GuaranteeTable:
    """Per state (`states`: sorted codes, held in memory for searching), what
    `side`'s certified strategy guarantees (memory-mapped when read from a file)."""

    states: np.ndarray
    guarantee: np.ndarray
    side: str
    max_exploitability: float  # of the solve the guarantees come from, over all its states
    method: str

    @property
    def num_states(self) -> int:
        return int(self.states.shape[0])

    def index_of(self, code: int) -> int:
        """Index of state `code`; KeyError if the table does not hold it."""
        at = int(np.searchsorted(self.states, code))
        if at >= self.num_states or int(self.states[at]) != code:
            raise KeyError(code)
        return at

    def guarantee_at(self, code: int) -> float:
        return float(self.guarantee[self.index_of(code)])


def guarantees_of(result: SolveResult, side: str) -> GuaranteeTable:
    """`side`'s guarantees of a solved table (its arrays shared, not copied)."""
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, not {side!r}")
    return GuaranteeTable(np.asarray(result.states), getattr(result, side), side,
                          float(result.table_max_exploitability), result.method)


def guarantee_bytes(table: GuaranteeTable) -> int:
    """Roughly the size of `table` stored."""
    return int(table.states.nbytes + np.asarray(table.guarantee).nbytes)


def save_guarantees(path: Path, table: GuaranteeTable, key: str, meta: dict | None = None, *, fmt: TableFormat) -> None:
    """Write `table` to `path` atomically, streamed a chunk at a time."""
    header = {"side": table.side, "max_exploitability": table.max_exploitability, "method": table.method}
    write_arrays(path, {"states": table.states, table.side: table.guarantee}, header, key, meta, fmt=fmt)


def load_guarantees(path: Path, key: str, *, fmt: TableFormat) -> GuaranteeTable:
    """The guarantees stored at `path`, checked against `key` and `fmt`, every
    block verified, the guarantees memory-mapped; FileNotFoundError if there is
    none, DamagedTableError if it cannot be trusted."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as archive:
            names = {info.filename for info in archive.infolist()}
    except FileNotFoundError:
        raise
    except (OSError, zipfile.BadZipFile) as error:
        raise DamagedTableError(f"{path}: unreadable ({type(error).__name__}: {error})") from None
    side = next((name for name in SIDES if f"{name}.npy" in names), None)
    if side is None:
        raise DamagedTableError(f"{path}: holds no guarantees")
    reader = TableReader(path, key, fmt, fields=("states", side))
    header = reader.header
    if header.get("side") != side:
        raise DamagedTableError(f"{path}: the header names {header.get('side')!r}, the file holds {side}")
    arrays = reader.verified_arrays()
    states, guarantee = arrays["states"], arrays[side]
    if guarantee.shape != states.shape or guarantee.dtype.kind != "f" or states.dtype != np.int64:
        raise DamagedTableError(f"{path}: inconsistent arrays ({side} does not match the states)")
    held = np.array(states)  # searched at every lookup: in memory (see `TableReader.mapped`)
    release_pages(states)
    if held.size > 1 and np.any(held[1:] <= held[:-1]):
        raise DamagedTableError(f"{path}: inconsistent arrays (states are not sorted)")
    try:
        return GuaranteeTable(held, guarantee, side, float(header["max_exploitability"]), str(header["method"]))
    except (KeyError, TypeError, ValueError) as error:
        raise DamagedTableError(f"{path}: malformed header ({error})") from None
