"""Two rule sets side by side: what each comes to at the start, row by row,
and the difference in each row.

A side is a list of `--set` items applied to the printed rules (none: the
printed rules). Its figures are those `query start --json` gives (value, how
games end, the length, the opening strategies) and the share of each card in
each player's plays over whole games under the table's strategies (as the
report's card usage gives them).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from rules.charge_spark.config import (
    RulesError,
    RuleSet,
    apply_overrides,
    differences_from_default,
    fingerprint,
    with_one_set_per_key_hint,
)
from rules.charge_spark.game import ChargeSparkGame

from ..certificate import CertificateStatus, certificate_status
from ..core.table_file import table_path
from ..core.table_reader import TableReader
from ..storage import TABLE_FORMAT, default_cache_dir
from ..tables import solved_table
from .answers import ExploreInputError, Explorer, message
from .rule_sets import MAX_SETTINGS

HIGHLIGHT_SHARE = 0.01
"""A row of chances or shares is highlighted when the sides differ by more than 1 percentage point."""
HIGHLIGHT_TURNS = 0.01
"""A row of turns is highlighted when the sides differ by more than 1% of the shorter."""
USAGE_STATES = 2_000_000
"""The largest table whose card usage is computed for a comparison (play is followed through it)."""


def side_rules(settings: Sequence[str], side: str) -> RuleSet:
    """The printed rules with `settings` applied as `--set` applies them; a bad item's
    message is the CLI's, after the side's name ("b: --set health=0: ...")."""
    if len(settings) > MAX_SETTINGS:
        raise ExploreInputError(f"{side}: too many items ({len(settings):,}; at most {MAX_SETTINGS})")
    try:
        return apply_overrides(RuleSet(), list(settings))
    except RulesError as error:  # `board=S*M health=1` in one box: says to give one item per key
        raise ExploreInputError(f"{side}: {message(with_one_set_per_key_hint(error, settings))}") from None


@dataclass(frozen=True)
class Side:
    """One rule set of a comparison and what it comes to at the start."""

    settings: tuple[str, ...]  # the items that make it from the printed rules
    explorer: Explorer
    start: dict  # the object `query start --json` prints
    usage: dict[str, dict[str, float]] | None  # "p1", "p2": each card's share of that player's plays; None: not computed

    @property
    def certificate(self) -> CertificateStatus:
        """Its table's, as its start's answer gives it: every figure of the side carries its mark."""
        return certificate_status(self.start["epsilon"], self.start.get("states_over_bound"))

    def as_json(self) -> dict:
        return {"settings": list(self.settings), "fingerprint": self.explorer.fingerprint,
                "changed": differences_from_default(self.explorer.rules), **self.certificate.as_json(),
                "start": self.start, "usage": self.usage}


def side_of(explorer: Explorer, settings: Sequence[str]) -> Side:
    start = explorer.query(explorer.position("start"))
    return Side(tuple(settings), explorer, start, card_shares(explorer.rules, explorer.cache_dir))


@functools.lru_cache(maxsize=16)
def card_shares(rules: RuleSet, cache_dir: str | None) -> dict[str, dict[str, float]] | None:
    """Each card's share of each player's plays over whole games from the start, under the stored
    table's strategies; None for a table past `USAGE_STATES` (following play through it takes long)."""
    from ..analysis.usage import table_card_usage
    from ..core.play import play_from

    key = fingerprint(rules)
    if TableReader(table_path(cache_dir or default_cache_dir(), key), key, TABLE_FORMAT).num_states > USAGE_STATES:
        return None  # told from the file's head, before the table is mapped (and every block of it checked)
    table = solved_table(rules, cache_dir, mapped=True)  # stored already: read, not solved
    game = ChargeSparkGame(rules)
    usage = table_card_usage(game, table.result, play_from(game, table.result, table.start))
    return {seat: {card: float(share) for card, share in zip(usage.cards, usage.overall[i])}
            for i, seat in enumerate(("p1", "p2"))}


@dataclass(frozen=True)
class Row:
    """One figure of both sides."""

    section: str
    label: str
    a: float | None
    b: float | None
    unit: str  # "share" (a chance, a value or a share, from 0 to 1) or "turns"

    @property
    def difference(self) -> float | None:
        """b minus a (None where a side lacks the figure)."""
        return None if self.a is None or self.b is None else self.b - self.a

    @property
    def highlighted(self) -> bool:
        """Whether the sides differ by more than 1 percentage point (a row of turns: by more than 1%)."""
        if self.difference is None:
            return False
        if self.unit == "turns":
            return abs(self.difference) > HIGHLIGHT_TURNS * min(abs(self.a or 0.0), abs(self.b or 0.0))
        return abs(self.difference) > HIGHLIGHT_SHARE

    def as_json(self) -> dict:
        return {"section": self.section, "label": self.label, "a": self.a, "b": self.b, "unit": self.unit,
                "difference": self.difference, "highlighted": self.highlighted}


def _finite(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _union(*keys: Sequence[str]) -> list[str]:
    """The keys of each in order of first appearance."""
    return list(dict.fromkeys(k for some in keys for k in some))


def compare_rows(a: Side, b: Side) -> list[Row]:
    """The rows of the comparison: the start, how games end, the length, the opening strategies, card usage."""
    sa, sb = a.start, b.start
    rows = [Row("start", "value to P1", sa["value"], sb["value"], "share"),
            Row("how games end", "P1 wins", sa["p1_win"], sb["p1_win"], "share"),
            Row("how games end", "P2 wins", sa["p2_win"], sb["p2_win"], "share")]
    rows += [Row("how games end", label, sa["outcomes"].get(label, 0.0), sb["outcomes"].get(label, 0.0), "share")
             for label in _union(sa["outcomes"], sb["outcomes"])]
    rows += [Row("how games end", "unending", sa["unending"], sb["unending"], "share"),
             Row("length", "mean length (turns)", _finite(sa["length"]["mean"]), _finite(sb["length"]["mean"]), "turns"),
             Row("length", "median length (turns)", _finite(sa["length"]["median"]), _finite(sb["length"]["median"]),
                 "turns")]
    for player, key in (("P1", "p1_strategy"), ("P2", "p2_strategy")):
        rows += [Row("opening strategies", f"{player} opens with {card}", sa[key].get(card, 0.0), sb[key].get(card, 0.0),
                     "share") for card in _union(sa[key], sb[key])]
    for player, key in (("P1", "p1"), ("P2", "p2")):
        ua = a.usage[key] if a.usage is not None else None
        ub = b.usage[key] if b.usage is not None else None
        cards = _union(ua or {}, ub or {})
        rows += [Row("card usage", f"{player} plays {card}", None if ua is None else ua.get(card, 0.0),
                     None if ub is None else ub.get(card, 0.0), "share") for card in cards]
    return rows


def compare_json(a: Side, b: Side) -> dict:
    """What `GET /api/compare` answers: both sides and every row."""
    return {"a": a.as_json(), "b": b.as_json(), "rows": [row.as_json() for row in compare_rows(a, b)],
            "highlight": {"share": HIGHLIGHT_SHARE, "turns_relative": HIGHLIGHT_TURNS}}
