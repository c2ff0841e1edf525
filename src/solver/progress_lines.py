"""The application's progress lines: the engine's (`core.progress`), named "charge-spark"."""

from __future__ import annotations

from .core import progress
from .core.progress import PhaseProgress, rounded_duration

progress.PROGRAM = "charge-spark"

__all__ = ["PhaseProgress", "rounded_duration"]
