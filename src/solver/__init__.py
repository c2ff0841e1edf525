"""Two-player zero-sum stochastic games with simultaneous moves and chance."""

from rules import pin_numba_cache

pin_numba_cache()
