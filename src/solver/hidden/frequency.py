"""How often each hidden phase starts in a game played under the reported
(open-hands) strategies from the start: the expected number of drawing
turns with those outcomes per game, over its first `MAX_TURNS` turns (as the
report's draw figures count them)."""

from __future__ import annotations

import numpy as np

from ..core.chain import expected_visits
from ..core.graph import segment_positions
from ..core.play import Play, follow_play
from .phase_tree import OpenGame
from .starts import PhaseStart, drawing_turns, start_of_turn

MAX_TURNS = 200


def play_and_visits(open_game: OpenGame, start: int) -> tuple[Play, np.ndarray]:
    """Play under the table's strategies from the position coded `start`, and each state's expected visits per game.

    Followed to its chain alone (`follow_play`), as the report follows it: with
    play's graph built, the printed rules' passed 8 GB here."""
    followed = follow_play(open_game.game, open_game.table, start, keep_choices=False)
    return followed.play, expected_visits(followed.chain, followed.play.start, MAX_TURNS)


def start_frequencies(
    open_game: OpenGame, play: Play, visits: np.ndarray, chunk: int = 1 << 14
) -> dict[tuple, tuple[float, int, tuple]]:
    """Per drawing turn's outcomes (a `PhaseStart.outcomes`): (expected times per
    game, a position it is played from, the cards played), for the turns
    `play` makes with positive chance, `visits` being its states' expected visits."""
    table = open_game.table
    found: dict[tuple, tuple[float, int, tuple]] = {}
    for at in range(0, play.states.size, chunk):
        codes = np.asarray(play.states[at : at + chunk], dtype=np.int64)
        index = play.index[at : at + chunk]
        row_w = table.row_strategy[segment_positions(table.row_ptr, index)]
        col_w = table.col_strategy[segment_positions(table.col_ptr, index)]
        # Each chunk's own row lengths: np.diff over the whole table's pointers was 49 million
        # subtractions a chunk at the printed rules, the most of this pass.
        row_at = np.concatenate(([0], np.cumsum(table.row_ptr[index + 1] - table.row_ptr[index])))
        col_at = np.concatenate(([0], np.cumsum(table.col_ptr[index + 1] - table.col_ptr[index])))
        if at // chunk % RELEASE_EVERY == RELEASE_EVERY - 1:
            table.release_mapped_pages()  # the strategies read so far: 4.8 GB of a stored table's pages by the end
        for state, (row, col), cards, outcomes in drawing_turns(open_game, codes):
            # The table lists each seat's legal cards in the order the expansion does.
            weight = visits[at + state] * row_w[row_at[state] + row] * col_w[col_at[state] + col]
            if weight <= 0:
                continue
            times, code, played = found.get(outcomes, (0.0, int(codes[state]), cards))
            found[outcomes] = (times + float(weight), code, played)
    table.release_mapped_pages()
    return found


RELEASE_EVERY = 16
"""Chunks of play read between two lettings-go of the stored table's pages in `start_frequencies`."""


def frequent_starts(
    open_game: OpenGame, frequencies: dict[tuple, tuple[float, int, tuple]], count: int
) -> list[tuple[PhaseStart, float]]:
    """The `count` phase starts met most often (`start_frequencies`), with how often (per game), most frequent first."""
    chosen = []
    for outcomes, (times, code, cards) in sorted(frequencies.items(), key=lambda item: -item[1][0]):
        phase_start = start_of_turn(open_game, code, cards, outcomes)
        if phase_start is not None:
            chosen.append((phase_start, times))
            if len(chosen) == count:
                break
    return chosen
