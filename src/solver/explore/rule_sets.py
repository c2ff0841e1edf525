"""The rule sets the explorer answers: the one it was started with, and each
one a request names with `set=KEY=VALUE` items on top of it (read exactly as
`--set`, by `apply_overrides`). Each has its own `Explorer`; the latest few
are kept. A rule set whose table the cache does not hold is solved in the
background (`solves`); until it is stored, asking for it raises
`TableNotReady` with where its solve stands. A plain request never starts a
solve past `ASK_FIRST_STATES` (nor one cancelled): it raises `SolveNotAsked`
with the solve's estimated states, time and memory, and only a request that
asks for the solve (`start=True`: a POST) starts it.

A rule set's values reach the rules parser and nothing else: no shell, no
path. The table of a rule set is found in the cache by its fingerprint.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rules.charge_spark.config import (
    RulesError,
    RuleSet,
    apply_overrides,
    canonical_mapping,
    differences_from_default,
    fingerprint,
    with_one_set_per_key_hint,
)
from rules.charge_spark.game import ReferenceChargeSparkGame
from rules.charge_spark.state import initial_position

from ..answering import SOLVE_RATE, solve_seconds
from ..core.progress import rounded_duration
from ..core.resources import layered_bytes_per_state
from ..core.table_file import table_path
from ..storage import default_cache_dir
from ..tables import stored_part
from .answers import ASK_FIRST_STATES, ExploreInputError, Explorer
from .solves import BackgroundSolves, SolveStatus, refuse_unbounded, too_large_for_memory

MAX_SETTINGS = 64
"""`set=` items one request may give (a rule set has about 35 keys)."""
EXPLORER_SOLVE_RATE = SOLVE_RATE / 2
"""States a second at which the explorer foretells a background solve's time: its worker solves on one
core, and `SOLVE_RATE` was measured by `solve` on two (an assumption, not a measurement: the progress page
then says the time left at the pace measured)."""
KEPT_RULE_SETS = 4
"""Rule sets whose `Explorer` (and the answers it remembers, up to tens of megabytes) is kept besides the one
started with."""


class TableNotReady(Exception):
    """Tables asked for that are being solved or wait their turn: each with its label ("" alone, "a" or
    "b" in a comparison), its `SolveStatus` and how many solves run or wait before it."""

    def __init__(self, waiting: list[tuple[str, SolveStatus, int]]) -> None:
        super().__init__("the table is being solved")
        self.waiting = waiting

    def as_json(self) -> dict:
        """The API's 202: the first waiting table's status and progress (and every side's, in a comparison)."""
        first, status, ahead = self.waiting[0]
        answer: dict = {"status": status.state, "progress": status.as_json(ahead)}
        if first:
            answer["sides"] = {side: {"status": s.state, "progress": s.as_json(n)} for side, s, n in self.waiting}
        return answer


@dataclass(frozen=True)
class SolveEstimate:
    """What the solve of a rule set's table not stored would take, said before it is started."""

    label: str  # "" alone, "a" or "b" in a comparison
    fingerprint: str
    changed: str  # the keys that differ from the printed rules
    states: float
    memory_bytes: float
    cancelled: bool  # its last solve was cancelled (the cache is as it was before it)

    @property
    def time_text(self) -> str:
        """'about 4 min': at `EXPLORER_SOLVE_RATE`."""
        return rounded_duration(solve_seconds(self.states, EXPLORER_SOLVE_RATE))

    @property
    def memory_text(self) -> str:
        return f"{self.memory_bytes / 1e9:,.1f} GB" if self.memory_bytes >= 1e8 else f"{self.memory_bytes / 1e6:,.0f} MB"

    def as_json(self) -> dict:
        return {"fingerprint": self.fingerprint, "changed": self.changed, "estimated_states": round(self.states),
                "estimated_time": self.time_text, "estimated_memory_bytes": round(self.memory_bytes),
                "cancelled": self.cancelled}


class SolveNotAsked(Exception):
    """Tables not stored whose solve a plain request does not start (past `ASK_FIRST_STATES`, or cancelled):
    each one's `SolveEstimate`."""

    def __init__(self, estimates: list[SolveEstimate]) -> None:
        super().__init__("the table is not stored, and its solve has not been asked for")
        self.estimates = estimates

    def as_json(self) -> dict:
        """The API's 409: what each solve would take, and how to start it."""
        first = self.estimates[0]
        why = "was cancelled" if first.cancelled else f"is about {round(first.states):,} states ({first.time_text})"
        answer: dict = {"status": "cancelled" if first.cancelled else "not started",
                        "error": f"the table of these rules [{first.fingerprint}] is not stored and its solve {why}:"
                                 " POST this address to start it",
                        "estimate": first.as_json()}
        if first.label:
            answer["sides"] = {e.label: e.as_json() for e in self.estimates}
        return answer


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


class RuleSets:
    """The explorer's rule sets, each from `set=` items over `base`. Safe to share between threads."""

    def __init__(self, base: Explorer) -> None:
        self.base = base
        self.cache_dir = base.cache_dir
        self.solves = BackgroundSolves(base.cache_dir)  # its worker starts with the first solve
        self._explorers: OrderedDict[tuple[str, str], Explorer] = OrderedDict()
        self._lock = threading.Lock()

    def rules(self, settings: Sequence[str]) -> RuleSet:
        """`base`'s rules with `settings` applied as `--set` applies them (`RulesError` with its message)."""
        if len(settings) > MAX_SETTINGS:
            raise ExploreInputError(f"too many set= items ({len(settings):,}; at most {MAX_SETTINGS})")
        try:
            return apply_overrides(self.base.rules, list(settings))
        except RulesError as error:  # `set=board=S*M health=1`: says to give one item per key
            raise with_one_set_per_key_hint(error, settings) from None

    def explorer(self, settings: Sequence[str], start: bool = False) -> Explorer:
        """The `Explorer` of the rule set `settings` make (`TableNotReady` while its table is solved)."""
        return self.explorer_for(self.rules(settings), start=start)

    def explorer_for(self, rules: RuleSet, label: str = "", start: bool = False) -> Explorer:
        """The `Explorer` of `rules` if its table is stored; else its solve is queued (if it is not yet) and
        `TableNotReady` says where it stands; `TooLargeError` at once for a table too large to solve.
        Unless `start`, a solve past `ASK_FIRST_STATES`, or one cancelled, is not queued: `SolveNotAsked`."""
        key = (fingerprint(rules), rules.name)
        if key == (self.base.fingerprint, self.base.rules.name):
            return self.base
        with self._lock:
            if key in self._explorers:
                self._explorers.move_to_end(key)
                return self._explorers[key]
        running = self.solves.status(key[0])
        if running is not None and running.state in ("queued", "solving"):
            # Its table may be on disk already while the worker still follows play from the start
            # for the length and stalls a query reads: the answer waits for the whole job.
            raise TableNotReady([(label, running, self.solves.ahead_of(key[0]))])
        if not self.is_stored(rules):
            estimate = too_large_for_memory(rules)
            cancelled = running is not None and running.state == "cancelled"
            if not start and (cancelled or estimate > ASK_FIRST_STATES):
                raise SolveNotAsked([self.estimate(rules, label, estimate, cancelled)])
            status = self.solves.request(rules, estimate)
            if status.state == "failed":
                self.solves.forget(key[0])  # said once: asking again starts another solve
                raise ExploreInputError(f"the solve of these rules [{key[0]}] failed: {status.error}")
            if status.state != "stored" or not self.is_stored(rules):
                raise TableNotReady([(label, status, self.solves.ahead_of(key[0]))])
        self.solves.forget(key[0])
        explorer = Explorer(rules, self.cache_dir, settings=settings_between(self.base.rules, rules),
                            started=self.base.rules)
        with self._lock:
            self._explorers[key] = explorer
            while len(self._explorers) > KEPT_RULE_SETS:
                self._explorers.popitem(last=False)
        return explorer

    @staticmethod
    def estimate(rules: RuleSet, label: str, states: float, cancelled: bool = False) -> SolveEstimate:
        """What solving `rules`' table (about `states` states) would take."""
        return SolveEstimate(label, fingerprint(rules), " ".join(differences_from_default(rules)) or "none",
                             states, states * layered_bytes_per_state(), cancelled)

    def start(self, rules: RuleSet) -> None:
        """Queue the solve of `rules`' table unless it is stored (a POST asked for it); `TooLargeError` at
        once when it would not fit in memory."""
        key = fingerprint(rules)
        if (key, rules.name) == (self.base.fingerprint, self.base.rules.name) or self.is_stored(rules):
            return
        status = self.solves.request(rules)
        if status.state == "failed":  # a failure said before: asked again, it starts again
            self.solves.forget(key)
            self.solves.request(rules)

    def is_stored(self, rules: RuleSet) -> bool:
        """Whether the cache holds the table of `rules` (a few blocks of it read)."""
        refuse_unbounded(rules)
        key = fingerprint(rules)
        path = table_path(self.cache_dir or default_cache_dir(), key)
        game = ReferenceChargeSparkGame(rules)
        return stored_part(path, key, game.encode(initial_position(rules)), game, None) is not None

    def check_solvable(self, rules: RuleSet) -> None:
        """`TooLargeError` unless the table of `rules` is stored or would fit in memory to be solved."""
        if not self.is_stored(rules):
            too_large_for_memory(rules)
