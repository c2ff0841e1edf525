"""Game definitions. Charge & Spark lives in `rules.charge_spark`."""

from __future__ import annotations

from .kernel_cache import pin_numba_cache

pin_numba_cache()
