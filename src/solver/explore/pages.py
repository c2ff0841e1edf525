"""The explorer's HTML pages: the position page, the coach page and the page
of a request it cannot answer.

Jinja2 with autoescaping on, as the report: every string that reaches a page
(the position box's text, an error message echoing it) is escaped; the
figures escape their own text. Nothing is fetched: styles and the one script
are inline."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from rules.charge_spark.cards import BONUS_CARDS, Card
from rules.charge_spark.config import CHOICES, MAX_BONUS_CARDS, RuleSet, differences_from_default
from rules.charge_spark.state import Position

from ..certificate import table_certificate
from ..core.outcome import Seat, win_probability
from .answers import Answered, Branch, Explorer
from .board_svg import board_svg
from .coach import CoachGame, to_seat
from .compare import USAGE_STATES, Side, compare_rows
from .figures import stage_heat_map, strategy_bars, win_split
from .rule_sets import ASK_FIRST_STATES, SolveEstimate, rules_keys
from .solves import SolveStatus

TEMPLATES = Path(__file__).parent / "templates"


def url(path: str, settings: Sequence[str] = (), **params: str | int | None) -> str:
    """`path` with the given query parameters (None left out) and a `set=` for each of `settings`, encoded."""
    given = [(key, str(value)) for key, value in params.items() if value is not None]
    given += [("set", item) for item in settings]
    return f"{path}?{urlencode(given)}" if given else path


def link(explorer: Explorer, path: str, **params: str | int | None) -> str:
    """`url` of a page of `explorer`'s rule set: its `set=` items carried along."""
    return url(path, explorer.settings, **params)


def fixed(x: float, digits: int) -> str:
    """`x` to `digits` decimals, never "-0.00": a round-off below the last digit shows as 0."""
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


@cache
def _environment() -> Environment:
    environment = Environment(
        loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"], default=True),
        undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    )
    environment.filters["fixed"] = fixed
    return environment


@dataclass(frozen=True)
class RulesField:
    """One key of the rules form: a select of its `options` where the key takes one of a few (`CHOICES`), else
    a text box as wide as its value."""

    key: str
    value: str
    options: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        """The text box's width in characters: its whole value shows."""
        return max(len(self.value) + 2, 6)

    @property
    def wide(self) -> bool:
        """A box that takes the form's whole row (the title, the board): its value may be long."""
        return self.key in ("name", "board") or self.size > 18


def rules_form(rules: RuleSet) -> tuple[tuple[RulesField, ...], tuple[tuple[str, int], ...]]:
    """The rules form's fields (every key `charge-spark rules` writes but `bonus_cards`, each enumerated one a
    select, one-seat keys too) and each bonus card with its copies in the pile (checkboxes, with a count)."""
    fields = tuple(RulesField(key, value, CHOICES.get(key.rsplit(".", 1)[-1], ()))
                   for key, value in rules_keys(rules).items() if key != "bonus_cards")
    pile = [card.label for card in rules.bonus_cards]
    return fields, tuple((card.label, pile.count(card.label)) for card in BONUS_CARDS)


@dataclass(frozen=True)
class Site:
    """What every page shows of the rule set: its name, fingerprint and the assumptions in force."""

    name: str
    fingerprint: str
    changed: str
    assumptions: tuple[tuple[str, str], ...]
    start_url: str
    settings: tuple[str, ...]  # the `set=` items of this rule set, over the rules the explorer started with
    rules_form: tuple[RulesField, ...]  # every rules key but the bonus pile, its value as `--set` writes it
    bonus: tuple[tuple[str, int], ...]  # each bonus card and its copies in the pile (0: none)
    started_url: str  # this position under the rules the explorer started with


def site(explorer: Explorer, answered: Answered | None = None, here: str | None = None) -> Site:
    rules = explorer.rules
    assumptions = [
        ("board", f"{rules.board} (an assumed layout: the sources give no track)"),
        ("bonus hands", "open: every card in hand is public (the printed rules hide drawn bonus cards)"),
        ("payoff", "P(P1 wins) + half P(unending), to P1; P2's is 1 minus it"),
        ("strategies", "hurried: of each side's optimal strategies, the one that ends the game soonest against a"
                       " stalling opponent; the win split and the length are theirs, the value is unique"),
    ]
    if answered is not None:
        result = answered.result
        status = table_certificate(result)
        assumptions.append(("certificate", f"largest exploitability over all {result.table_states:,} states of the"
                                           f" table {result.table_max_exploitability:.1e}: {status.mark}"))
    fields, bonus = rules_form(rules)
    return Site(rules.name or "(unnamed)", explorer.fingerprint, " ".join(differences_from_default(rules)) or "none",
                tuple(assumptions), link(explorer, "/", position="start"), explorer.settings,
                fields, bonus, url("/", position=here or "start"))


def _render(template: str, explorer: Explorer, *, box: str, here: str | None, answered: Answered | None = None,
            error: str | None = None, **context) -> str:
    return _environment().get_template(template).render(
        site=site(explorer, answered, here), box=box, error=error, here=here or "start", bonus_max=MAX_BONUS_CARDS,
        json_url=link(explorer, "/api/query", position=here or "start"), **context,
    )


def _draws(outcome: Branch) -> str:
    """'P1 draws ray', 'P1 draws ray, P2 draws trap', or ''."""
    return ", ".join(f"P{seat + 1} draws {' and '.join(cards)}" for seat, cards in enumerate(outcome.drawn) if cards)


def _length(expected: float) -> str:
    return "never ends under these strategies" if math.isnan(expected) else f"{expected:.2f} turns expected"


def cell_links(explorer: Explorer, position: Position, rows: tuple[str, ...], cols: tuple[str, ...]) -> dict:
    """Where clicking each cell goes: to the pair's likeliest next position,
    the turn named so its page lists every outcome; where the pair ends the
    game, to this position with the pair chosen."""
    text = explorer.text(position)
    links = {}
    for row in rows:
        for col in cols:
            step = explorer.step(position, Card.parse(row), Card.parse(col))
            going = [o for o in step.outcomes if o.position is not None]
            if going:
                target = max(going, key=lambda o: o.probability)  # the first of equals
                links[(row, col)] = link(explorer, "/", position=explorer.text(target.position), **{"from": text}, p1=row, p2=col)
            else:
                links[(row, col)] = link(explorer, "/", position=text, p1=row, p2=col)
    return links


def _step_view(explorer: Explorer, position: Position, step_from: Position | None, cards: tuple[Card, Card]) -> dict:
    origin = step_from or position
    step = explorer.step(origin, *cards)
    answer = explorer.answer(origin)
    value = answer.matrix[answer.rows.index(cards[0].label)][answer.cols.index(cards[1].label)]
    origin_text = explorer.text(origin)
    outcomes = []
    for o in step.outcomes:
        text = None if o.position is None else explorer.text(o.position)
        outcomes.append({
            "probability": float(o.probability), "chance": str(o.probability), "winner": o.label, "position": text,
            "here": step_from is not None and o.position == position, "draws": _draws(o),
            "url": None if text is None else link(explorer, "/", position=text, **{"from": origin_text}, p1=cards[0].label,
                                                 p2=cards[1].label),
        })
    return {"p1": cards[0].label, "p2": cards[1].label, "value": value, "outcomes": outcomes}


def position_page(explorer: Explorer, position: Position, *, step_from: Position | None = None,
                  cards: tuple[Card, Card] | None = None, box: str | None = None) -> str:
    """The page of `position`; with `cards`, the turn that pair makes from
    `step_from` (or from `position` itself) listed with its outcomes."""
    answered = explorer.answered(position)
    answer = answered.answer
    outcomes = answered.result.terminal_outcomes
    text = explorer.text(position)
    selected = (cards[0].label, cards[1].label) if cards and step_from is None else None
    view = {
        "text": text, "answer": answer, "certificate": table_certificate(answered.result),
        "p1_win": win_probability(answer.terminal_probability, outcomes, Seat.P1),
        "p2_win": win_probability(answer.terminal_probability, outcomes, Seat.P2),
        "length": _length(answer.expected_length),
        "source": ("read from the stored table" if answered.source is not None else
                   "solved now up to the positions the stored table holds (the table does not hold this one)"),
        "board": board_svg(explorer.rules, position), "win_split": win_split(answer, outcomes),
        "p1_bars": strategy_bars("P1's optimal strategy", answer.row_strategy, 0, "p1-strategy"),
        "p2_bars": strategy_bars("P2's optimal strategy", answer.col_strategy, 1, "p2-strategy"),
        "matrix": stage_heat_map(answer, cell_links(explorer, position, answer.rows, answer.cols), selected),
        "step": None if cards is None else _step_view(explorer, position, step_from, cards),
        "step_from": None if step_from is None else explorer.text(step_from),
        "step_from_url": None if step_from is None else link(explorer, "/", position=explorer.text(step_from)),
    }
    coach_urls = [link(explorer, "/coach", position=text, seat=seat) for seat in (1, 2)]
    return _render("position.html.j2", explorer, box=text if box is None else box, here=text, answered=answered,
                   view=view, coach_urls=coach_urls, compare_url=compare_url(explorer.rules),
                   compare_started_url=compare_url(explorer.started, explorer.rules) if explorer.settings else None)


def compare_url(a: RuleSet, b: RuleSet | None = None) -> str:
    """The comparison of rule set `a` with `b` (default: the printed rules), each named by its items over them."""
    items = [("a", item) for item in differences_from_default(a)]
    items += [("b", item) for item in differences_from_default(b)] if b is not None else []
    return f"/compare?{urlencode(items)}" if items else "/compare"


def coach_page(explorer: Explorer, game: CoachGame, moves: list[str]) -> str:
    """A coached game: the designer's hand to choose from, the turns so far
    with each card's cost, and at the end the total and where it was lost."""
    start = explorer.text(game.start)
    seat = game.seat + 1

    def game_url(cards: list[str], **changes) -> str:
        params = {"position": start, "seat": seat, "seed": game.seed, "moves": ",".join(cards) or None, **changes}
        return link(explorer, "/coach", **params)

    turns = []
    for t in game.turns:
        o = t.outcome
        then = o.label if o.winner is not None else explorer.text(o.position)
        if _draws(o):
            then += f"; {_draws(o)}"
        turns.append({"number": t.number, "position": explorer.text(t.position), "value": t.value,
                      "mine": t.mine.label, "theirs": t.theirs.label, "chosen": t.chosen, "best": t.best,
                      "best_cards": " or ".join(t.best_cards), "cost": t.cost, "then": then,
                      "chance": str(t.chance), "url": link(explorer, "/", position=explorer.text(t.position))})
    lost = [turns[t.number - 1] for t in game.lost_turns]
    now = None if game.position is None else explorer.text(game.position)
    view = {
        "seat": game.seat, "seed": game.seed, "start": start, "over": game.over, "winner": game.result,
        "designer_won": game.designer_won, "turns": turns, "lost": lost, "total_cost": game.total_cost,
        "start_value": to_seat(explorer.answer(game.start).value, game.seat),
        "position": now,
        "value_now": None if game.position is None else to_seat(explorer.answer(game.position).value, game.seat),
        "choices": [] if game.position is None else [
            (card.label, game_url([*moves, card.label])) for card in explorer.legal(game.position, game.seat)],
        "board": None if game.position is None else board_svg(explorer.rules, game.position),
        "analyse_url": None if now is None else link(explorer, "/", position=now),
        "undo_url": game_url(moves[:-1]) if moves else None,
        "new_url": link(explorer, "/coach", position=start, seat=seat),
        "switch_url": link(explorer, "/coach", position=start, seat=3 - seat, seed=game.seed),
    }
    return _render("coach.html.j2", explorer, box=now or start, here=now or start, game=view)


def error_page(explorer: Explorer, message: str, box: str) -> str:
    """The page of a request that cannot be answered: the message, and the box to try again."""
    return _render("position.html.j2", explorer, box=box, here=None, error=message, view=None,
                   coach_urls=[link(explorer, "/coach", seat=seat) for seat in (1, 2)],
                   compare_url=compare_url(explorer.rules), compare_started_url=None)


def _figure(x: float | None, unit: str, signed: bool = False) -> str:
    """A figure of the comparison: a share as a percentage, a difference of shares in points, turns as they
    are; a difference that rounds to nothing is "0.00" (never "-0.00 pt" or "+0.00")."""
    if x is None:
        return "n/a"
    shown = x if unit == "turns" else 100 * x
    if f"{abs(shown):.2f}" == "0.00":
        if signed:
            return "0.00"
        shown = 0.0  # a share of -1e-17 (round-off) is 0.00%
    if unit == "turns":
        return f"{shown:+.2f}" if signed else f"{shown:.2f}"
    return f"{shown:+.2f} pt" if signed else f"{shown:.2f}%"


def compare_page(sides: Sequence[tuple[str, Sequence[str]]], compared: tuple[Side, Side] | None,
                 error: str | None = None) -> str:
    """Two rule sets side by side (`compared`), the form to change either, or `error` above the form."""
    form = [{"name": name, "settings": [*items, "", ""]} for name, items in sides]
    view = None
    if compared is not None:
        a, b = compared
        sections: dict[str, list[dict]] = {}
        for row in compare_rows(a, b):
            sections.setdefault(row.section, []).append({
                "label": row.label, "highlighted": row.highlighted, "a_text": _figure(row.a, row.unit),
                "b_text": _figure(row.b, row.unit), "difference_text": _figure(row.difference, row.unit, signed=True)})
        missing = [name for name, side in zip("ab", compared) if side.usage is None]
        view = {
            "sides": [{"name": name, "fingerprint": side.explorer.fingerprint, "certificate": side.certificate,
                       "changed": " ".join(differences_from_default(side.explorer.rules)) or "none",
                       "url": link(side.explorer, "/", position="start")} for name, side in zip("ab", compared)],
            "sections": list(sections.items()),
            "note": (f"card usage is not computed for side {' and '.join(missing)}: its table has more than"
                     f" {USAGE_STATES:,} states") if missing else None,
            "json_url": "/api/compare?" + urlencode([(name, i) for name, items in sides for i in items]),
        }
    title = " / ".join(s["fingerprint"] for s in view["sides"]) if view else ""
    return _environment().get_template("compare.html.j2").render(sides=form, compare=view, error=error, title=title)


SOLVING_REFRESH = 2
"""Seconds between two looks of the progress page."""


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "not known yet"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


def solving_page(waiting: Sequence[tuple[str, SolveStatus, int]], started_url: str, action: str = "/",
                 token: str = "") -> str:
    """The page of tables being solved: each one's progress and a Cancel button (a form POSTing `do=cancel`
    and the token to `action`, the page's own address); it looks again by itself (a meta refresh)."""
    solves = []
    for label, status, ahead in waiting:
        p = status.progress
        total, solved = p.get("states_to_solve"), p.get("states_solved", 0)
        solves.append({
            "label": label, "fingerprint": status.fingerprint, "state": status.state,
            "changed": status.changed or "none", "estimated": round(status.estimated_states),
            "state_text": (f"waiting: {ahead} solve{'s' if ahead != 1 else ''} before it" if status.state == "queued"
                           else "solving"),
            "phase": p.get("phase", "starting"), "found": p.get("states_found", 0),
            "solved_text": (f"{solved:,} of {total:,} ({100 * solved / total:.1f}%)" if total else "not started"),
            "elapsed": _duration(p.get("elapsed_seconds")), "left": _duration(p.get("seconds_left")),
            "rank": (f"number {p.get('ranks_solved', 0) + 1} (ranks are solved from the most progress down)"
                     if p.get("phase") == "solving" else "-"),
        })
    title = " / ".join(s["fingerprint"] for s in solves)
    return _environment().get_template("solving.html.j2").render(
        solves=solves, started_url=started_url, refresh=SOLVING_REFRESH, title=title, error=None, action=action,
        token=token)


def asking_page(estimates: Sequence[SolveEstimate], started_url: str, action: str, token: str) -> str:
    """The page of tables not stored whose solve a GET does not start: each one's estimated states, time and
    memory, and one "Solve" button (a form POSTing `do=solve` and the token to `action`, the page's address)."""
    title = " / ".join(e.fingerprint for e in estimates)
    return _environment().get_template("asking.html.j2").render(
        estimates=estimates, started_url=started_url, title=title, error=None, action=action, token=token,
        threshold=ASK_FIRST_STATES)
