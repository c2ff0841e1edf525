"""What a point of cost or damage is worth: P1's value at the start when one
number of one card is changed for P1 alone (a one-seat rule set, issue 44).

For every cost a card has (each tile kind it costs) and every attack's damage,
the rules' number is moved one step better and one worse for P1, and one
more step the costlier or stronger way (+2), where the rules allow it: the
points of that number's *cost curve*. The start is symmetric between the seats,
so a change for both players leaves the value at 0.5; a change for P1 alone
shows what the number is worth to its owner.

Each point is a value-only solve, as a restricted game is (`restricted.py`):
unhurried, no strategies assembled, nothing stored, warm-started from the
rules' own table (a one-seat change keeps the state encoding), its certificate
kept beside its value. A one-seat rule set has no seat swap: it is solved
unfolded."""

from __future__ import annotations

import time
from dataclasses import dataclass, fields, replace

from rules.charge_spark.cards import Card
from rules.charge_spark.config import RulesError, RuleSet, apply_overrides, fingerprint
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position

from ..certificate import CertificateStatus, certificate_status
from ..tables import WarmTable, further_resume_dir, resuming_in, warm_start, warn_on_stderr
from .sensitivity import TILE_KINDS, Skipped

STEPS = (-1, 1, 2)
"""Each number's moves from the rules' own (0): one down, one up, two up."""
DAMAGE = "damage"


@dataclass(frozen=True)
class PricePoint:
    """P1's number `kind` ("battery", "disc" or "damage") of `card` set to
    `amount` (the rules' own: `printed`), P2's left as it is."""

    card: str
    kind: str
    printed: int
    amount: int
    rules: RuleSet

    @property
    def key(self) -> str:
        """The rules key, shared form: "cost.spark.battery", "damage.lightning"."""
        return f"damage.{self.card}" if self.kind == DAMAGE else f"cost.{self.card}.{self.kind}"

    @property
    def setting(self) -> str:
        """How to ask for it: "p1.cost.spark.battery=0"."""
        return f"p1.{self.key}={self.amount}"

    @property
    def step(self) -> int:
        return self.amount - self.printed

    @property
    def better(self) -> int:
        """Steps better for P1: a cost one down or a damage one up is +1."""
        return self.step if self.kind == DAMAGE else -self.step

    @property
    def label(self) -> str:
        """"P1's spark costs 0 battery (1)", "P1's lightning deals 3 (2)"."""
        if self.kind == DAMAGE:
            return f"P1's {self.card} deals {self.amount} ({self.printed})"
        return f"P1's {self.card} costs {self.amount} {self.kind} ({self.printed})"


def price_points(rules: RuleSet) -> tuple[list[PricePoint], list[Skipped]]:
    """The points of every cost curve of `rules` (see the module docstring),
    card by card, each number's points in order of amount; those the rules
    refuse, with the reason."""
    base = replace(rules, name="")
    numbers: list[tuple[str, str, int]] = []  # card, kind, P1's printed amount
    playable = [card for card in Card if not card.is_bonus or card in rules.bonus_cards]
    for card in playable:
        for kind, amount in zip(TILE_KINDS, rules.seat(0).cost(card)):
            if amount > 0:
                numbers.append((card.label, kind, amount))
    for card in playable:
        if card.is_attack:
            numbers.append((card.label, DAMAGE, rules.seat(0).damage_of(card)))
    points, skipped = [], []
    for card, kind, printed in numbers:
        for amount in sorted(printed + step for step in STEPS):
            if amount < 0:
                continue
            key = f"damage.{card}" if kind == DAMAGE else f"cost.{card}.{kind}"
            try:
                changed = apply_overrides(base, [f"p1.{key}={amount}"])
            except (RulesError, ValueError) as error:
                skipped.append(Skipped(PricePoint(card, kind, printed, amount, base).label, str(error)))
                continue
            points.append(PricePoint(card, kind, printed, amount, changed))
    return points, skipped


def point_key(point: PricePoint) -> str:
    """Identity of a point's answer, for the results cache (its rules are its identity)."""
    return f"price:{fingerprint(point.rules)}"


@dataclass(frozen=True)
class PointValue:
    """P1's certified value at the start of a point's one-seat rule set."""

    value: float
    error: str | None = None
    """Why it could not be solved (the value is then nan)."""
    seconds: float | None = None
    warm_started: bool = False
    states: int | None = None
    max_exploitability: float | None = None
    """The solve's certificate over all its states (None: not known)."""

    @property
    def certificate(self) -> CertificateStatus:
        return certificate_status(self.max_exploitability)

    @property
    def certified(self) -> bool:
        """Whether the value may be read as a number (solved, and certified)."""
        return self.error is None and self.certificate.certified

    def entry(self) -> dict:
        return {"value": self.value, "seconds": self.seconds, "states": self.states,
                "warm_started": self.warm_started, "max_exploitability": self.max_exploitability}

    @classmethod
    def from_entry(cls, entry: dict) -> PointValue:
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in entry.items() if key in known})


@dataclass(frozen=True)
class PriceJob:
    point: PricePoint
    workers: int = 1
    show_progress: bool = False
    max_states: int | None = None
    warm_from: WarmTable | None = None
    """The rules' own stored table (`tables.warm_table_of`): its values start the solve."""
    cache_dir: str | None = None
    """Where the solve keeps its finished ranks until it ends (`tables.further_resume_dir`); None: nothing kept."""


def point_value(job: PriceJob) -> PointValue:
    """The point's value (or why it could not be had)."""
    try:
        return _point_value(job)
    except Exception as error:  # noqa: BLE001 - shown in the report rather than losing every other point
        return PointValue(float("nan"), f"{type(error).__name__}: {error}")


def _point_value(job: PriceJob) -> PointValue:
    from ..core.solve import solve_start_figures

    started = time.perf_counter()
    rules = job.point.rules
    game = ChargeSparkGame(rules)
    start = game.encode(initial_position(rules))
    warm = warm_start(job.warm_from, game, warn_on_stderr)
    kept = further_resume_dir(job.cache_dir, fingerprint(rules), "value") if job.cache_dir else None
    with resuming_in(kept) as resume:
        figures = solve_start_figures(
            game, [start], hurried=False, show_progress=job.show_progress, workers=job.workers,
            max_states=job.max_states, warm=warm, resume_dir=resume,
        )
    return PointValue(float(figures.values[0]), seconds=time.perf_counter() - started, warm_started=warm is not None,
                      states=int(figures.num_states), max_exploitability=figures.max_exploitability)
