"""The rule sets the explorer answers: the one it was started with, and each
one a request names with `set=KEY=VALUE` items on top of it (read exactly as
`--set`, by `apply_overrides`). Each has its own `Explorer`; the latest few
are kept.

A rule set's values reach the rules parser and nothing else: no shell, no
path. The table of a rule set is found in the cache by its fingerprint.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from rules.charge_spark.config import RuleSet, apply_overrides, canonical_mapping, fingerprint
from rules.charge_spark.game import ReferenceChargeSparkGame
from rules.charge_spark.size import estimate_reachable
from rules.charge_spark.state import initial_position

from ..core.resources import LAYERED_BYTES_PER_STATE, states_that_fit
from ..core.table_file import table_path
from ..storage import default_cache_dir
from ..tables import solved_table, stored_part
from .answers import ExploreInputError, Explorer

MAX_SETTINGS = 64
"""`set=` items one request may give (a rule set has about 35 keys)."""
KEPT_RULE_SETS = 8
"""Rule sets whose `Explorer` (and the answers it remembers) is kept besides the one started with."""
REQUEST_SOLVE_STATES = 60_000
"""The largest table (estimated states) the explorer solves while a request waits: a few seconds."""
MAX_BOARD = 64
"""The longest board the explorer takes (the printed one has 6 squares)."""
PLAYER_STATES_LIMIT = 10_000_000
"""One player's health x tiles x board squares past which a rule set is refused before it is even
estimated: its game would be far beyond any machine's memory."""


class TooLargeError(ExploreInputError):
    """A rule set whose table is not stored and that the explorer will not solve."""


def rules_keys(rules: RuleSet) -> dict[str, str]:
    """Every key `charge-spark rules` writes (dotted, as `--set` takes them) with its value as `--set` text."""
    flat: dict[str, str] = {}

    def walk(mapping: dict[str, Any], prefix: str) -> None:
        for key, value in mapping.items():
            if isinstance(value, dict):
                walk(value, f"{prefix}{key}.")
            else:
                flat[f"{prefix}{key}"] = ",".join(map(str, value)) if isinstance(value, list) else str(value)

    walk(canonical_mapping(rules), "")
    return flat


def settings_between(base: RuleSet, rules: RuleSet) -> tuple[str, ...]:
    """The `set=` items that make `rules` from `base`: each key whose value differs, as KEY=VALUE."""
    before = rules_keys(base)
    return tuple(f"{key}={value}" for key, value in rules_keys(rules).items() if before.get(key) != value)


def player_states(rules: RuleSet) -> int:
    """A crude product of one player's ranges (health, tiles, squares): no game of it is larger per player."""
    return rules.health * (rules.battery_tiles + 1) * (rules.disc_tiles + 1) * len(rules.board)


class RuleSets:
    """The explorer's rule sets, each from `set=` items over `base`. Safe to share between threads."""

    def __init__(self, base: Explorer, request_solve_states: int = REQUEST_SOLVE_STATES) -> None:
        self.base = base
        self.cache_dir = base.cache_dir
        self.request_solve_states = request_solve_states
        self._explorers: OrderedDict[tuple[str, str], Explorer] = OrderedDict()
        self._lock = threading.Lock()
        self._solving = threading.Lock()  # one solve at a time: two cores gain nothing from two

    def rules(self, settings: Sequence[str]) -> RuleSet:
        """`base`'s rules with `settings` applied as `--set` applies them (`RulesError` with its message)."""
        if len(settings) > MAX_SETTINGS:
            raise ExploreInputError(f"too many set= items ({len(settings):,}; at most {MAX_SETTINGS})")
        return apply_overrides(self.base.rules, list(settings))

    def explorer(self, settings: Sequence[str]) -> Explorer:
        """The `Explorer` of the rule set `settings` make: its table stored first where it is not."""
        return self.explorer_for(self.rules(settings))

    def explorer_for(self, rules: RuleSet) -> Explorer:
        """The `Explorer` of `rules`: its table stored first where it is not."""
        key = (fingerprint(rules), rules.name)
        if key == (self.base.fingerprint, self.base.rules.name):
            return self.base
        with self._lock:
            if key in self._explorers:
                self._explorers.move_to_end(key)
                return self._explorers[key]
        self.make_stored(rules)
        explorer = Explorer(rules, self.cache_dir, settings=settings_between(self.base.rules, rules))
        with self._lock:
            self._explorers[key] = explorer
            while len(self._explorers) > KEPT_RULE_SETS:
                self._explorers.popitem(last=False)
        return explorer

    def is_stored(self, rules: RuleSet) -> bool:
        """Whether the cache holds the table of `rules` (a few blocks of it read)."""
        refuse_unbounded(rules)
        key = fingerprint(rules)
        path = table_path(self.cache_dir or default_cache_dir(), key)
        game = ReferenceChargeSparkGame(rules)
        return stored_part(path, key, game.encode(initial_position(rules)), game, None) is not None

    def check_solvable(self, rules: RuleSet) -> None:
        """`TooLargeError` unless the table of `rules` is stored or the explorer would solve it."""
        if self.is_stored(rules):
            return
        estimate = estimate_reachable(rules)
        limit = self.request_solve_states
        fit = states_that_fit(LAYERED_BYTES_PER_STATE)
        if fit is not None and estimate > fit:
            raise TooLargeError(too_large_message(rules, estimate, f"more than fit in the memory available ({fit:,})"))
        if estimate > limit:
            raise TooLargeError(too_large_message(rules, estimate, f"more than the explorer solves during a request"
                                                                   f" ({limit:,})"))

    def make_stored(self, rules: RuleSet) -> None:
        """Solve and store the table of `rules` now, if it is not stored and is small enough to solve while
        a request waits; `TooLargeError` before anything is written if it is not."""
        self.check_solvable(rules)
        if self.is_stored(rules):
            return
        with self._solving:
            solved_table(rules, self.cache_dir, max_states=2 * self.request_solve_states)


def refuse_unbounded(rules: RuleSet) -> None:
    """`TooLargeError` for rules no machine could solve, found without estimating their size (which takes
    longer the longer the board): a board past `MAX_BOARD` squares, or one player with more states alone
    than `PLAYER_STATES_LIMIT`."""
    if len(rules.board) > MAX_BOARD:
        raise TooLargeError(f"the rules [{fingerprint(rules)}] are too large to solve: a board of"
                            f" {len(rules.board):,} squares (the explorer takes at most {MAX_BOARD})")
    if player_states(rules) > PLAYER_STATES_LIMIT:
        raise TooLargeError(f"the rules [{fingerprint(rules)}] are too large to solve: one player alone has more than"
                            f" {PLAYER_STATES_LIMIT:,} states (health x tiles x squares)")


def too_large_message(rules: RuleSet, estimate: float, why: str) -> str:
    return (f"the table of these rules [{fingerprint(rules)}] is not stored, and at about {estimate:,.0f} states it is"
            f" {why}: store it first with `charge-spark solve`")
