"""The wild game's table of a rule set (`rules.charge_spark.wild`): P1's
upper bound on its hidden value at every position of the open table, with any
of P1's bonus cards in hand unseen; P2's bound is read off the seat-swapped
position (the rules are symmetric, so one table serves both seats).

Solved by the same engine as the open game and stored in the same cache,
under its own key, with the same lock and handling of damaged files.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rules.charge_spark.cards import Card
from rules.charge_spark.config import RuleSet, canonical_mapping, fingerprint
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.hidden import Known
from rules.charge_spark.state import Position
from rules.charge_spark.wild import WildGame, wild_state_of

from ..core.result import SolveResult
from ..core.table_file import table_lock, table_path
from ..storage import default_cache_dir
from ..tables import cached_table, resume_dir_of, resuming_in, store_table

WILD_UP_TO = 100_000
"""Open tables up to this many states get a wild table (its turn is compiled, but a
wild table is not yet sized by the memory it needs)."""

WILD_KEY_SUFFIX = "-wild"
"""A wild table is stored under its rule set's fingerprint and this suffix."""


def wild_key(rules: RuleSet) -> str:
    return fingerprint(rules) + WILD_KEY_SUFFIX


def seen_splits(bonus: tuple[Card, ...]) -> list[tuple[Card, ...]]:
    """Every multiset of `bonus` the opponent may have seen (the rest unseen)."""
    return sorted({seen for size in range(len(bonus) + 1) for seen in itertools.combinations(sorted(bonus), size)})


def wild_roots(game: WildGame, open_game: ChargeSparkGame, open_states: np.ndarray) -> np.ndarray:
    """P1's wild states of every open position, with each split of P1's hand into seen and unseen."""
    codes = set()
    for code in np.asarray(open_states, dtype=np.int64):
        position = open_game.decode(int(code))
        for seen in seen_splits(position.p1.bonus):
            codes.add(game.encode(wild_state_of(position, seen)))
    return np.array(sorted(codes), dtype=np.int64)


@dataclass(frozen=True)
class WildTable:
    """A solved wild game, read by position and seat."""

    rules: RuleSet
    result: SolveResult
    path: Path
    reused: bool
    stored: bool = True

    @functools.cached_property
    def game(self) -> WildGame:
        return WildGame(self.rules)

    def p1_bound(self, position: Position, seen: tuple[Card, ...]) -> float:
        """Upper bound on P1's value at `position`, P2 having seen `seen` of P1's bonus cards in hand:
        what P2's certified wild strategy holds P1 to (the value, up to the certificate's rounding)."""
        return float(self.result.p2_guarantee[self.result.index_of(self.game.encode(wild_state_of(position, seen)))])

    def p2_bound(self, position: Position, seen: tuple[Card, ...]) -> float:
        """Lower bound on P1's value at `position`, P1 having seen `seen` of P2's bonus cards in hand."""
        return 1.0 - self.p1_bound(position.swapped(), seen)

    def bound(self, holder: int, position: Position, seen: tuple[Card, ...]) -> float:
        """`holder`'s bound on P1's value: upper for P1 (0), lower for P2 (1)."""
        return self.p1_bound(position, seen) if holder == 0 else self.p2_bound(position, seen)


def solved_wild_table(
    rules: RuleSet,
    open_states: np.ndarray,
    cache_dir: Path | str | None = None,
    *,
    force: bool = False,
    warn: Callable[[str], None] | None = None,
) -> WildTable:
    """The wild table of `rules` from the cache, else solved from the wild states of
    `open_states` (the open table's states: the table is keyed by the rules alone,
    so pass the states of the table solved from the start) and stored."""
    key = wild_key(rules)
    path = table_path(Path(cache_dir) if cache_dir else default_cache_dir(), key)
    with table_lock(path):
        result = None if force else cached_table(path, key, warn)
        if result is not None:
            return WildTable(rules, result, path, reused=True)
        from ..core.solve import solve_from  # the compiled kernels load only when a solve is needed

        game = WildGame(rules)
        roots = wild_roots(game, ChargeSparkGame(rules), open_states)
        with resuming_in(resume_dir_of(path)) as resume:
            result = solve_from(game, roots, show_progress=False, resume_dir=resume)
        meta = {"fingerprint": fingerprint(rules), "rules": canonical_mapping(rules), "game": "wild game for P1"}
        stored = store_table(path, result, key, meta, warn)
        return WildTable(rules, result, path, reused=False, stored=stored)


def wild_bounds(table: WildTable, decode: Callable[[int], Position]) -> Callable[[int, Known], tuple[float, float]]:
    """`phase_tree.WildBounds` read off `table`: per open-game code (decoded by `decode`) and
    each seat's seen cards, (P2's, P1's) wild bound on P1's value, each read once."""
    found: dict[tuple[int, Known], tuple[float, float]] = {}

    def bounds(code: int, known: Known) -> tuple[float, float]:
        key = (code, known)
        pair = found.get(key)
        if pair is None:
            position = decode(code)
            pair = found[key] = (table.p2_bound(position, known[1]), table.p1_bound(position, known[0]))
        return pair

    return bounds
