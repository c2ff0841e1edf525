"""The wild game's table of a rule set (`rules.charge_spark.wild`): P1's
upper bound on its hidden value at every position of the open table, with any
of P1's bonus cards in hand unseen; P2's bound is read off the seat-swapped
position (the rules are symmetric, so one table serves both seats).

Solved by the same engine as the open game and kept in the same cache, with
the same lock and handling of damaged files; of its solve only the bounds are
stored (`core.guarantee_file`), a twelfth of the whole table.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rules.charge_spark.cards import Card
from rules.charge_spark.config import RuleSet, canonical_mapping, fingerprint
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.hidden import Known
from rules.charge_spark.state import Position
from rules.charge_spark.wild import WildGame, wild_state_of

from ..core.graph import GraphTooLargeError, distinct_sorted, merged_distinct
from ..core.guarantee_file import GuaranteeTable, guarantee_bytes, guarantees_of, load_guarantees, save_guarantees
from ..core.shared_arrays import release_pages
from ..core.table_file import DamagedTableError, quarantine, table_lock, table_path
from ..storage import GUARANTEE_FORMAT, default_cache_dir
from ..tables import cached_table, resume_dir_of, resuming_in, stored_if_room

WILD_KEY_SUFFIX = "-wild"
"""A wild table is keyed by its rule set's fingerprint and this suffix."""
KEPT_BOUNDS = 1 << 20
"""Bounds read that `wild_bounds` keeps at most (a phase's leaves recur across its horizons)."""
BOUNDS_SUFFIX = ".bounds"
"""Its bounds are stored under its key and this (an earlier version stored the whole table under the key alone)."""


def wild_key(rules: RuleSet) -> str:
    return fingerprint(rules) + WILD_KEY_SUFFIX


def seen_splits(bonus: tuple[Card, ...]) -> list[tuple[Card, ...]]:
    """Every multiset of `bonus` the opponent may have seen (the rest unseen)."""
    return sorted({seen for size in range(len(bonus) + 1) for seen in itertools.combinations(sorted(bonus), size)})


def wild_roots(game: WildGame, open_game: ChargeSparkGame, open_states: np.ndarray, chunk: int = 1 << 22) -> np.ndarray:
    """P1's wild states of every open position, with each split of P1's hand into seen and unseen.

    Digit arithmetic over the codes, hand by hand (P1's bonus digits are the
    low digits of its player code): the printed rules have 49 million open
    positions, each one decoded would take the best part of an hour."""
    codec = open_game.codec
    open_states = np.asarray(open_states, dtype=np.int64)
    # Per hand held: each seen split's code and how many cards stay unseen.
    splits = [(hand, [(codec.encode_bonus(seen), len(held) - len(seen)) for seen in seen_splits(held)])
              for hand, held in ((hand, codec.decode_bonus(hand)) for hand in range(codec.bonus_space))]
    chunks = []
    for lo in range(0, open_states.size, chunk):
        codes = open_states[lo:lo + chunk]
        found = []
        hands = (codes // codec.players) % codec.bonus_space
        for hand, seen_codes in splits:
            with_hand = codes[hands == hand]
            if with_hand.size == 0:
                continue
            for seen, unseen in seen_codes:
                stripped = with_hand - (hand - seen) * codec.players  # P1's hand down to the seen cards
                found.append((stripped * (game.max_unseen + 1) + unseen) * 2)
        chunks.append(distinct_sorted(np.concatenate(found)) if found else np.empty(0, np.int64))
    return merged_distinct(chunks)


@dataclass(frozen=True)
class WildTable:
    """A solved wild game's bounds, read by position and seat: per wild state, what P2's
    certified wild strategy holds P1 to (the rest of the solve is not kept)."""

    rules: RuleSet
    bounds: GuaranteeTable
    path: Path
    reused: bool
    stored: bool = True

    @functools.cached_property
    def game(self) -> WildGame:
        return WildGame(self.rules)

    @property
    def num_states(self) -> int:
        return self.bounds.num_states

    def release_pages(self) -> None:
        """Let go the pages of the stored bounds read so far (read again from the file when needed)."""
        release_pages(self.bounds.guarantee)

    def p1_bound(self, position: Position, seen: tuple[Card, ...]) -> float:
        """Upper bound on P1's value at `position`, P2 having seen `seen` of P1's bonus cards in hand:
        what P2's certified wild strategy holds P1 to (the value, up to the certificate's rounding)."""
        return self.bounds.guarantee_at(self.game.encode(wild_state_of(position, seen)))

    def p2_bound(self, position: Position, seen: tuple[Card, ...]) -> float:
        """Lower bound on P1's value at `position`, P1 having seen `seen` of P2's bonus cards in hand."""
        return 1.0 - self.p1_bound(position.swapped(), seen)

    def bound(self, holder: int, position: Position, seen: tuple[Card, ...]) -> float:
        """`holder`'s bound on P1's value: upper for P1 (0), lower for P2 (1)."""
        return self.p1_bound(position, seen) if holder == 0 else self.p2_bound(position, seen)


def wild_bounds_path(cache_dir: Path | str | None, rules: RuleSet) -> Path:
    """Where the wild table's bounds of `rules` are stored."""
    return table_path(Path(cache_dir) if cache_dir else default_cache_dir(), wild_key(rules) + BOUNDS_SUFFIX)


def solved_wild_table(
    rules: RuleSet,
    open_states: np.ndarray,
    cache_dir: Path | str | None = None,
    *,
    force: bool = False,
    warn: Callable[[str], None] | None = None,
    workers: int = 1,
    show_progress: bool = False,
    max_states: int | None = None,
) -> WildTable:
    """The wild table's bounds of `rules` from the cache, else solved from the wild states of
    `open_states` (the open table's states: the table is keyed by the rules alone,
    so pass the states of the table solved from the start) and stored.

    Sized by memory like any solve: its roots alone (a lower bound on its
    states) are checked before anything is enumerated, and enumeration stops
    with `GraphTooLargeError` past what fits (or past `max_states`). Only the
    bounds are stored (16 bytes a state; the printed rules' table has about 77
    million states), read memory-mapped."""
    path = wild_bounds_path(cache_dir, rules)
    key = wild_key(rules)
    with table_lock(path):
        bounds = None if force else _stored_bounds(path, key, warn)
        if bounds is not None:
            return WildTable(rules, bounds, path, reused=True)
        from ..core.solve import solve_from  # the compiled kernels load only when a solve is needed

        game = WildGame(rules)
        roots = wild_roots(game, ChargeSparkGame(rules), open_states)
        with resuming_in(resume_dir_of(path)) as resume, _named_the_wild_table():
            result = solve_from(game, roots, show_progress=show_progress, resume_dir=resume, workers=workers,
                                max_states=max_states, estimated_states=roots.size,
                                estimated_from="in their wild game (its roots: each open position, P1's hand split into seen and unseen)")
        del roots
        bounds = guarantees_of(result, "p2_guarantee")
        del result
        stored = _store_bounds(path, bounds, key, rules, warn)
        if stored:  # the solve's arrays let go for the file's mapping
            bounds = load_guarantees(path, key, fmt=GUARANTEE_FORMAT)
        return WildTable(rules, bounds, path, reused=False, stored=stored)


def _stored_bounds(path: Path, key: str, warn: Callable[[str], None] | None) -> GuaranteeTable | None:
    """The bounds stored at `path`, else those of a whole wild table an earlier version stored (kept
    as bounds, the whole table removed); None if there are neither. A damaged file is moved aside."""
    try:
        return load_guarantees(path, key, fmt=GUARANTEE_FORMAT)
    except FileNotFoundError:
        pass
    except DamagedTableError as error:
        moved = quarantine(path)
        if warn is not None:
            warn(f"{error}; moved aside to {moved.name}, recomputing")
    whole = table_path(path.parent, key)
    result = cached_table(whole, key, warn, mapped=True)
    if result is None:
        return None
    bounds = guarantees_of(result, "p2_guarantee")
    if not stored_if_room(path, guarantee_bytes(bounds),
                          lambda: save_guarantees(path, bounds, key, {"from": whole.name}, fmt=GUARANTEE_FORMAT), warn,
                          "the wild table's bounds"):
        return bounds  # read from the whole table this time
    del result  # its mapping; the bounds are read back from their own file below
    whole.unlink(missing_ok=True)
    if warn is not None:
        warn(f"the wild table {whole.name}, stored whole by an earlier version, is kept as its bounds ({path.name})")
    return load_guarantees(path, key, fmt=GUARANTEE_FORMAT)


def _store_bounds(path: Path, bounds: GuaranteeTable, key: str, rules: RuleSet, warn: Callable[[str], None] | None) -> bool:
    """Store `bounds` unless the disk lacks room (`tables.stored_if_room`)."""
    meta = {"fingerprint": fingerprint(rules), "rules": canonical_mapping(rules), "game": "wild game for P1"}
    return stored_if_room(path, guarantee_bytes(bounds),
                          lambda: save_guarantees(path, bounds, key, meta, fmt=GUARANTEE_FORMAT), warn,
                          "the wild table's bounds")


@contextlib.contextmanager
def _named_the_wild_table() -> Iterator[None]:
    """A refusal by size says it is the wild table's: `hidden --wild` solves the open table first."""
    try:
        yield
    except GraphTooLargeError as error:
        raise type(error)(f"the wild table of these rules: {error}") from None


def wild_bounds(table: WildTable, decode: Callable[[int], Position]) -> Callable[[int, Known], tuple[float, float]]:
    """`phase_tree.WildBounds` read off `table`: per open-game code (decoded by `decode`) and
    each seat's seen cards, (P2's, P1's) wild bound on P1's value, each read once."""
    found: dict[tuple[int, Known], tuple[float, float]] = {}

    def bounds(code: int, known: Known) -> tuple[float, float]:
        key = (code, known)
        pair = found.get(key)
        if pair is None:
            if len(found) >= KEPT_BOUNDS:  # kept for the phases' recurring leaves, not for ever
                found.clear()
            position = decode(code)
            pair = found[key] = (table.p2_bound(position, known[1]), table.p1_bound(position, known[0]))
        return pair

    return bounds
