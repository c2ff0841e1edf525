"""The hidden-card analysis as text for the terminal."""

from __future__ import annotations

import textwrap

from .analysis import StartResult
from .run import MODEL, HiddenAnalysis


def hidden_value(result: StartResult) -> str:
    """The value, or the bracket (labelled) where the phase is not solved exactly, or
    both crossed bounds where they are not certified."""
    if not result.certified:
        return f"not certified [{result.lower:.4f}>{result.upper:.4f}]"
    if result.exact:
        return f"{result.lower:.6f}"
    return f"bounds [{result.lower:.4f},{result.upper:.4f}]"


def wild_text(result: StartResult) -> str:
    """Both wild bounds of the start ("-" without a wild table)."""
    if result.relaxed_lower is None or result.relaxed_upper is None:
        return "-"
    return f"[{result.relaxed_lower:.4f},{result.relaxed_upper:.4f}]"


def cards_text(cards: dict[str, float]) -> str:
    return " ".join(f"{card} {p:.2g}" for card, p in sorted(cards.items()))


def hidden_text(analysis: HiddenAnalysis, header: list[str], shown: int | None) -> str:
    """`header` lines first, then the summary, then the starts by gain (the first `shown`; None: all)."""
    s = analysis.summary
    results = analysis.results
    holders = {who: sum(r.holder == who for r in results) for who in ("P1", "P2", "both")}
    exact_line = f"{s.exact:,} of {s.starts:,}" + (f" (by horizon {s.exact_horizon})" if s.exact_horizon is not None else "")
    if s.exact < s.starts:
        exact_line += (f"; {s.starts - s.exact:,} given as bounds (tree over {analysis.max_nodes:,} nodes or horizon"
                       f" {analysis.max_horizon}), the widest {s.max_width:.4f} wide")
    lines = header + [
        "model        " + textwrap.fill(MODEL, width=110, subsequent_indent=" " * 13),
        f"starts       {s.starts:,} ({analysis.selection}; P1 drew {holders['P1']:,}, P2 drew {holders['P2']:,}, both {holders['both']:,})",
    ]
    if results:
        lines.append(f"exact        {exact_line}")
        lines.append(f"gain         largest {s.max_gain:+.6f} at {s.max_gain_position};"
                     f" mean {s.mean_gain:+.6f} (lower bounds where not exact)")
    if s.uncertified:
        lines.append(f"not certified {s.uncertified:,} of {s.starts:,}: their bounds crossed (lower > upper), so one of them"
                     " is not a bound; both are shown as found")
    if analysis.game_lower is not None and analysis.game_upper is not None:
        lines.append(f"whole game   P1's value at the start with every drawn card hidden: bounds"
                     f" [{analysis.game_lower:.4f},{analysis.game_upper:.4f}] (the wild games)")
    lines.append(f"time         {s.seconds:.1f} s solving the phases")
    if not results:
        lines.append("nothing to hide: every card drawn under these rules can be told by the opponent")
        return "\n".join(lines)
    order = sorted(range(len(results)), key=lambda k: (-round(results[k].gain, 9), k))  # twins' gains tie
    if shown is not None:
        order = order[:shown]
    if not order:
        return "\n".join(lines)
    lines += ["", f"starts by gain ({len(order)} of {len(results)}{'' if shown is None or len(order) == len(results) else '; --all for every one'}):"]
    wild = any(results[k].relaxed_upper is not None for k in order)
    lines.append(f"  {'holder':6}  {'may hold':18}  {'open avg':>8}  {'hidden':>20}  {'gain':>9}  {'open-play loss':>14}  {'naive exploit':>13}  {'H':>2}  {'per game':>8}"
                 + (f"  {'wild bounds':>15}" if wild else "") + "  position | played")
    for k in order:
        r = results[k]
        times = analysis.frequency[k]
        lines.append(
            f"  {r.holder:6}  {cards_text(r.cards):18}  {r.open_average:8.6f}  {hidden_value(r):>20}  {r.gain:+9.6f}"
            f"  {r.holder_open_loss:14.6f}  {r.naive_exploitability:13.6f}  {r.horizon:2d}  {'-' if times is None else f'{times:.4f}':>8}"
            + (f"  {wild_text(r):>15}" if wild else "") + f"  {r.position} | {r.played}"
        )
    return "\n".join(lines)
