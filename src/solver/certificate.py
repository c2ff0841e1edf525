"""What "certified" means, in one place: every face (solve, query, sweep, the
explorer, the report) reads a table's or a further solve's largest
exploitability through `certificate_status` and shows its `text`.

A solve is certified when the largest exploitability of its strategies over
every state is at most `CERTIFICATE_BOUND`. Above it (an Everett recursive
game, where a side has no stationary optimal strategy, gets epsilon-optimal
strategies) the values are still bracketed by both sides' exact guarantees,
but no figure read from it may pass for a certified one."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

CERTIFICATE_BOUND = 1e-9
"""The largest exploitability a certified solve may have, over all its states."""

NOT_CERTIFIED = "not certified"
"""What a figure read from an uncertified solve says beside it."""


@dataclass(frozen=True)
class CertificateStatus:
    """Whether a solve is certified, and if not, within what epsilon its strategies are optimal."""

    certified: bool
    epsilon: float | None  # the largest exploitability over all states (None: not known)
    states_over_bound: int | None = None  # how many states exceed the bound (None: not counted)

    @property
    def known(self) -> bool:
        return self.epsilon is not None

    @property
    def text(self) -> str:
        """'certified (largest exploitability 3.4e-13)', or 'not certified: epsilon-optimal within 2.50e-01 ...'."""
        if self.certified:
            return f"certified (largest exploitability {self.epsilon:.1e}, bound {CERTIFICATE_BOUND:.0e})"
        if not self.known:
            return f"{NOT_CERTIFIED}: certificate unknown (kept by an earlier version without it)"
        over = "" if self.states_over_bound is None else (
            f"; {self.states_over_bound:,} state{'s' if self.states_over_bound != 1 else ''} over the bound")
        return f"{NOT_CERTIFIED}: epsilon-optimal within {self.epsilon:.2e} (bound {CERTIFICATE_BOUND:.0e}{over})"

    @property
    def mark(self) -> str:
        """'certified', else `text`: what a row of figures read from the solve says (a sweep's, say)."""
        return "certified" if self.certified else self.text

    def as_json(self) -> dict:
        """The `"certified"` and `"epsilon"` keys of a JSON answer (and the count where known)."""
        out: dict = {"certified": self.certified, "epsilon": self.epsilon}
        if self.states_over_bound is not None:
            out["states_over_bound"] = self.states_over_bound
        return out


def certificate_status(max_exploitability: float | None, states_over_bound: int | None = None) -> CertificateStatus:
    """The status of a solve whose largest exploitability over all states is
    `max_exploitability` (None or nan: unknown, hence not certified)."""
    if max_exploitability is None or math.isnan(max_exploitability):
        return CertificateStatus(False, None, states_over_bound)
    epsilon = float(max_exploitability)
    return CertificateStatus(epsilon <= CERTIFICATE_BOUND, epsilon, states_over_bound)


@dataclass(frozen=True)
class StatesOverBound:
    """The states of a table whose exploitability exceeds the bound: how many, and the worst few."""

    count: int
    worst: tuple[tuple[int, float], ...]  # (state code, exploitability), the largest first


def states_over_bound(result, shown: int = 5, chunk: int = 1 << 22) -> StatesOverBound:
    """`StatesOverBound` of a `SolveResult` (read in chunks: it may be memory-mapped and larger than memory)."""
    count, worst = 0, []
    for lo, exploitability in _exploitability_chunks(result, chunk):
        over = np.flatnonzero(exploitability > CERTIFICATE_BOUND)
        count += int(over.size)
        top = over[np.argsort(-exploitability[over], kind="stable")[:shown]]
        worst += [(int(result.states[lo + i]), float(exploitability[i])) for i in top]
    worst.sort(key=lambda pair: -pair[1])
    return StatesOverBound(count, tuple(worst[:shown]))


def table_certificate(result) -> CertificateStatus:
    """The status of the whole table a `SolveResult` is (or is part of): from the stored table's header
    where it holds part of one (the count over the bound where the header records it: `certificate_meta`),
    else from its states, read in chunks, counted only when over the bound."""
    if result.whole_states is not None:
        return certificate_status(result.whole_max_exploitability, result.whole_states_over_bound)
    return _counted(largest_exploitability(result), result)


def certificate_meta(result) -> dict:
    """What a stored table's metadata records of its certificate beyond its largest exploitability (which
    the header holds already): the count of states over the bound, where there are any."""
    status = table_certificate(result)
    return {} if status.certified or status.states_over_bound is None else {
        "states_over_bound": status.states_over_bound}


def _counted(epsilon: float, result) -> CertificateStatus:
    status = certificate_status(epsilon)
    return status if status.certified else certificate_status(epsilon, states_over_bound(result, 0).count)


def largest_exploitability(result, chunk: int = 1 << 22) -> float:
    """`result.max_exploitability`, in chunks: the table may be memory-mapped and larger than memory."""
    return max((float(e.max(initial=0.0)) for _, e in _exploitability_chunks(result, chunk)), default=0.0)


def _exploitability_chunks(result, chunk: int) -> Iterator[tuple[int, np.ndarray]]:
    for lo in range(0, result.num_states, chunk):
        yield lo, result.exploitability_in(slice(lo, lo + chunk))
