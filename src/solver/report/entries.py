"""The report's section results as the results cache keeps them (JSON: numbers,
strings, lists), and back, so that a second report of the same rules reads
them instead of walking a table of millions of states again."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from ..analysis.draws import DrawValue
from ..analysis.policy_play import PlayFigures
from ..analysis.positions import AnnotatedPosition
from ..analysis.sensitivity import VariantPlay, VariantSummary
from ..analysis.stalls import Stall
from ..analysis.usage import CardStatus, CardUsage
from ..core.outcome import Outcome
from ..core.result import StateAnswer
from ..summary import StartSummary


def answer_entry(answer: StateAnswer) -> dict:
    return asdict(answer)


def answer_from(entry: dict) -> StateAnswer:
    return StateAnswer(**{
        **entry, "rows": tuple(entry["rows"]), "cols": tuple(entry["cols"]),
        "matrix": tuple(tuple(row) for row in entry["matrix"]),
    })


def outcomes_entry(outcomes: tuple[Outcome, ...]) -> list[dict]:
    return [o.to_json() for o in outcomes]


def outcomes_from(entry: list[dict]) -> tuple[Outcome, ...]:
    return tuple(Outcome.from_json(o) for o in entry)


def summary_entry(summary: StartSummary) -> dict:
    return {"value": summary.value, "outcomes": summary.outcomes, "expected_length": summary.expected_length,
            "length_pmf": summary.length_pmf.tolist(), "terminal_outcomes": outcomes_entry(summary.terminal_outcomes)}


def summary_from_entry(entry: dict) -> StartSummary:
    return StartSummary(entry["value"], dict(entry["outcomes"]), entry["expected_length"],
                        np.array(entry["length_pmf"], np.float64), outcomes_from(entry["terminal_outcomes"]))


def stalls_entry(stalls: list[tuple[str, Stall]]) -> list[dict]:
    return [{"text": text, **asdict(stall)} for text, stall in stalls]


def stalls_from(entry: list[dict]) -> list[tuple[str, Stall]]:
    return [(e["text"], Stall(**{k: v for k, v in e.items() if k != "text"})) for e in entry]


def usage_entry(usage: CardUsage) -> dict:
    return {"cards": list(usage.cards), "overall": usage.overall.tolist(), "by_turn": usage.by_turn.tolist(),
            "alive": usage.alive.tolist(), "status": {card: status.name for card, status in usage.status.items()}}


def usage_from(entry: dict) -> CardUsage:
    cards = tuple(entry["cards"])
    return CardUsage(
        cards, np.array(entry["overall"], np.float64).reshape(2, len(cards)),
        np.array(entry["by_turn"], np.float64).reshape(2, -1, len(cards)), np.array(entry["alive"], np.float64),
        {card: CardStatus[name] for card, name in entry["status"].items()},
    )


def draws_entry(draws: list[DrawValue]) -> list[dict]:
    return [asdict(d) for d in draws]


def draws_from(entry: list[dict]) -> list[DrawValue]:
    return [DrawValue(**d) for d in entry]


def positions_entry(positions: list[tuple[str, AnnotatedPosition]]) -> list[dict]:
    return [{"text": text, **{k: v for k, v in asdict(a).items() if k != "answer"}, "answer": answer_entry(a.answer)}
            for text, a in positions]


def positions_from(entry: list[dict]) -> list[tuple[str, AnnotatedPosition]]:
    return [(e["text"], AnnotatedPosition(e["title"], e["why"], e["code"], e["frequency"], answer_from(e["answer"])))
            for e in entry]


def figures_entry(figures: PlayFigures) -> dict:
    return asdict(figures)


def figures_from(entry: dict) -> PlayFigures:
    return PlayFigures(**entry)


def variant_entry(summary: VariantSummary) -> dict:
    return {"value": summary.value, "outcomes": summary.outcomes, "expected_length": summary.expected_length,
            "seconds": summary.seconds, "length_pmf": list(summary.length_pmf), "states": summary.states,
            "terminal_outcomes": outcomes_entry(summary.terminal_outcomes),
            "max_exploitability": summary.max_exploitability,
            "play": None if summary.play is None else summary.play.entry()}


def variant_from(entry: dict) -> VariantSummary:
    """A kept variant; one kept before the certificate was has none (`certificate` unknown: not certified),
    one kept before its card usage was has none (`play` None: not known)."""
    return VariantSummary(entry["value"], dict(entry["outcomes"]), outcomes_from(entry["terminal_outcomes"]),
                          entry["expected_length"], entry["seconds"], True, tuple(entry["length_pmf"]),
                          states=entry.get("states"), max_exploitability=entry.get("max_exploitability"),
                          play=VariantPlay.from_entry(entry.get("play")))
