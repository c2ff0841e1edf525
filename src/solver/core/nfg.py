"""Gambit strategic-form (.nfg) files of two-player matrix games, written and read.

The payoff version of the format: a header naming the game, the players and
their strategies (as counts, or as labels), then one payoff per player for
every outcome, player 1's strategy changing fastest. OpenSpiel's reader takes
only the counts form, so labels are optional.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_nfg(
    matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str], title: str, labels: bool = False
) -> str:
    """The zero-sum game `matrix` (payoffs to player 1; player 2 gets their negatives)."""
    a = np.asarray(matrix, dtype=np.float64)
    m, n = a.shape
    if (m, n) != (len(rows), len(cols)):
        raise ValueError(f"matrix is {m}x{n} but there are {len(rows)} row and {len(cols)} column labels")
    players = '{ "Player 1" "Player 2" }'
    if labels:
        strategies = "{ { " + " ".join(map(_quoted, rows)) + " }\n{ " + " ".join(map(_quoted, cols)) + " }\n}\n" + '""'
    else:
        strategies = f"{{ {m} {n} }}"
    payoffs = " ".join(f"{float(a[i, j])!r} {float(-a[i, j]) + 0.0!r}" for j in range(n) for i in range(m))
    return f"NFG 1 R {_quoted(title)} {players} {strategies}\n\n{payoffs}\n"


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}]|[^\s{}"]+')


def read_nfg_payoffs(text: str) -> np.ndarray:
    """Player 1's payoff matrix of a two-player payoff-version .nfg (counts or labels form)."""
    tokens = _TOKEN.findall(text)
    if tokens[:3] != ["NFG", "1", "R"]:
        raise ValueError("not a payoff-version NFG file")
    at = 4  # past the title
    if tokens[at] != "{":
        raise ValueError("no player list")
    at = tokens.index("}", at) + 1  # past the players
    if tokens[at + 1] == "{":  # labels: { { "a" ... } { "b" ... } } ""
        m = tokens.index("}", at + 2) - (at + 2)
        start = tokens.index("}", at + 2) + 1
        n = tokens.index("}", start + 1) - (start + 1)
        at = tokens.index("}", start + 1) + 2  # past the closing brace
        if at < len(tokens) and tokens[at].startswith('"'):
            at += 1  # the comment string
    else:
        m, n = int(tokens[at + 1]), int(tokens[at + 2])
        at += 4
    values = np.array(tokens[at:], dtype=np.float64)
    if values.size != 2 * m * n:
        raise ValueError(f"expected {2 * m * n} payoffs, found {values.size}")
    return values[0::2].reshape(n, m).T.copy()
