"""The generic engine: two-player zero-sum stochastic games with simultaneous moves and chance.

Nothing here imports the game, the CLI, the report or the analyses (`tests/test_layers.py`).
"""

from .ast_parsing import parse_in_turns

parse_in_turns()  # before any thread reads a .npy header (see `ast_parsing`)
