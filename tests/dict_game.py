"""A hand-written game for exact tests: the solver protocol over a dict."""

from __future__ import annotations

import numpy as np

WIN, LOSS = -1, -2  # terminal outcome codes: P1 wins, P2 wins


class DictGame:
    """A hand-written game: {state: {(row, col): [(prob, next state or WIN/LOSS)]}}."""

    terminal_labels = ("P1 wins", "P2 wins")
    terminal_winners = (0, 1)
    terminal_kinds = ("win", "win")
    terminal_payoff = np.array([1.0, 0.0])
    unending_payoff = 0.5

    def __init__(self, table, actions):
        self.table = table
        self.action_labels = tuple(actions)

    def expand(self, codes):
        out = {k: [] for k in ("row_count", "row_actions", "col_count", "col_actions", "out_count", "out_next", "out_prob")}
        for code in codes:
            cells = self.table[int(code)]
            rows = sorted({r for r, _ in cells})
            cols = sorted({c for _, c in cells})
            out["row_count"].append(len(rows))
            out["col_count"].append(len(cols))
            out["row_actions"] += rows
            out["col_actions"] += cols
            for r in rows:
                for c in cols:
                    outcomes = cells[(r, c)]
                    out["out_count"].append(len(outcomes))
                    out["out_prob"] += [p for p, _ in outcomes]
                    out["out_next"] += [nxt for _, nxt in outcomes]
        return type("Expansion", (), {k: np.array(v, dtype=float if k == "out_prob" else np.int64) for k, v in out.items()})

    def swap(self, codes):
        return None
