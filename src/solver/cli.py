"""The `charge-spark` command line: parse, call, print. No game logic here."""

from __future__ import annotations

import json
import sys
import time
import traceback

import click

from rules.charge_spark.cards import UnknownCardError
from rules.charge_spark.config import (
    RuleSet,
    RulesError,
    apply_overrides,
    canonical_mapping,
    fingerprint,
    load_rules,
    rules_to_toml,
)
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.notation import PositionError, format_position, parse_position

from .graph import GraphTooLargeError
from .result import SolveResult, StateAnswer
from .solve import solve_from

USER_ERRORS = (RulesError, PositionError, UnknownCardError, GraphTooLargeError)
CERTIFICATE_BOUND = 1e-9


class ChargeSparkCLI(click.Group):
    """Turns the documented user errors into one line on stderr and exit status 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except USER_ERRORS as error:
            if ctx.obj and ctx.obj.get("debug"):
                traceback.print_exc()
            click.echo(f"charge-spark: error: {error}", err=True)
            ctx.exit(2)


@click.group(cls=ChargeSparkCLI)
@click.option("--debug", is_flag=True, help="Show a traceback on errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Game-theory solver for the card duel Charge & Spark."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def rules_options(command):
    command = click.option(
        "--set", "overrides", multiple=True, metavar="KEY=VALUE",
        help="Override one rules key (TOML dotted key), e.g. cost.lightning.battery=3. Repeatable.",
    )(command)
    command = click.option(
        "--rules", "rules_file", type=click.Path(dir_okay=False), default=None,
        help="A rules file (TOML). Default: the spec's default rules.",
    )(command)
    return command


def rules_in_force(rules_file: str | None, overrides: tuple[str, ...]) -> RuleSet:
    rules = load_rules(rules_file) if rules_file else RuleSet()
    return apply_overrides(rules, list(overrides))


@main.command()
@rules_options
def rules(rules_file: str | None, overrides: tuple[str, ...]) -> None:
    """Print the rule set in force as TOML (a starting point for your own file)."""
    click.echo(rules_to_toml(rules_in_force(rules_file, overrides)), nl=False)


@main.command()
@click.argument("position")
@rules_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--max-states", type=click.IntRange(min=1), default=None, help="Refuse to enumerate more states than this.")
def query(position: str, rules_file: str | None, overrides: tuple[str, ...], as_json: bool, max_states: int | None) -> None:
    """Optimal play at POSITION (`start`, or the spec's notation in quotes)."""
    rule_set = rules_in_force(rules_file, overrides)
    parsed = parse_position(position, rule_set)
    game = ChargeSparkGame(rule_set)
    code = game.encode(parsed)
    started = time.perf_counter()
    result = solve_from(game, [code], show_progress=not as_json and sys.stderr.isatty(), max_states=max_states)
    elapsed = time.perf_counter() - started
    answer = result.answer(code)
    if as_json:
        click.echo(json.dumps(query_json(rule_set, format_position(parsed, rule_set), answer, result)))
    else:
        click.echo(query_text(rule_set, format_position(parsed, rule_set), answer, result, elapsed))


def query_json(rule_set: RuleSet, position: str, answer: StateAnswer, result: SolveResult) -> dict:
    return {
        "rules": canonical_mapping(rule_set),
        "fingerprint": fingerprint(rule_set),
        "position": position,
        "value": answer.value,
        "p1_win": answer.terminal_probability["P1 wins"],
        "p2_win": answer.terminal_probability["P2 wins"],
        "unending": answer.unending_probability,
        "p1_strategy": answer.row_strategy,
        "p2_strategy": answer.col_strategy,
        "matrix": {"rows": list(answer.rows), "cols": list(answer.cols), "values": [list(r) for r in answer.matrix]},
        "exploitability": answer.exploitability,
        "certificate": {
            "exploitability": answer.exploitability,
            "p1_guarantee": answer.p1_guarantee,
            "p2_guarantee": answer.p2_guarantee,
            "bellman_residual": result.bellman_residual,
            "max_exploitability_all_states": result.max_exploitability,
            "states": result.graph.num_states,
            "method": result.method,
            "seconds": {phase: round(seconds, 3) for phase, seconds in result.timings.items()},
        },
    }


def _flat(mapping: dict, prefix: str = "") -> dict[str, object]:
    flat: dict[str, object] = {}
    for key, value in mapping.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def rules_difference(rule_set: RuleSet) -> str:
    """The keys that differ from the printed rules, as KEY=VALUE."""
    default = _flat(canonical_mapping(RuleSet()))
    changed = [
        f"{key}={','.join(map(str, value)) if isinstance(value, list) else value}"
        for key, value in _flat(canonical_mapping(rule_set)).items()
        if key != "name" and default.get(key) != value
    ]
    return " ".join(changed) or "none"


def _strategy_line(strategy: dict[str, float]) -> str:
    return "  ".join(f"{card} {p:.4f}" for card, p in strategy.items())


def timing_line(result: SolveResult, elapsed: float) -> str:
    n = result.graph.num_states
    t = result.timings
    parts = [f"{elapsed:.1f} s in all"]
    for phase in ("enumerate", "solve", "certify"):
        if phase in t:
            rate = f", {n / t[phase]:,.0f} states/s" if t[phase] > 0 and phase != "certify" else ""
            parts.append(f"{phase} {t[phase]:.1f} s{rate}")
    return "; ".join(parts)


def query_text(rule_set: RuleSet, position: str, answer: StateAnswer, result: SolveResult, elapsed: float) -> str:
    width = max(len(c) for c in answer.rows + answer.cols) + 1
    header = " " * width + "".join(f"{c:>{width + 2}}" for c in answer.cols)
    lines = [
        f"rules        {rule_set.name or '(unnamed)'}  [fingerprint {fingerprint(rule_set)}]",
        f"changed      {rules_difference(rule_set)}",
        f"board        {rule_set.board}  (assumed layout: the sources give no track)",
        "model        open bonus hands; payoff P(P1 wins) + 0.5 P(unending)",
        f"position     {position}",
        "",
        f"value        {answer.value:.12f}   (to P1)",
        f"P1 wins      {answer.terminal_probability['P1 wins']:.6f}",
        f"P2 wins      {answer.terminal_probability['P2 wins']:.6f}",
        f"unending     {answer.unending_probability:.6f}",
        "             (the split is that of the strategies shown; other optimal strategies may split differently)",
        "",
        f"P1 plays     {_strategy_line(answer.row_strategy)}",
        f"P2 plays     {_strategy_line(answer.col_strategy)}",
        "",
        "stage matrix: value to P1 after each pair of cards (rows P1, columns P2)",
        header,
    ]
    for card, row in zip(answer.rows, answer.matrix):
        lines.append(f"{card:<{width}}" + "".join(f"{v:>{width + 2}.4f}" for v in row))
    verdict = "ok" if answer.exploitability <= CERTIFICATE_BOUND else "FAILED"
    lines += [
        "",
        f"certificate  exploitability {answer.exploitability:.2e} ({verdict}, bound {CERTIFICATE_BOUND:.0e}):"
        f" P1's strategy guarantees {answer.p1_guarantee:.12f}, P2's {answer.p2_guarantee:.12f}",
        f"             largest Bellman residual {result.bellman_residual:.2e}; largest exploitability"
        f" over all {result.graph.num_states:,} states {result.max_exploitability:.2e}",
        f"             {timing_line(result, elapsed)}",
        f"             method: {result.method}",
    ]
    return "\n".join(lines)
