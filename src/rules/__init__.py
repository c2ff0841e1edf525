"""Game definitions. Charge & Spark lives in `rules.charge_spark`."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path


def pin_numba_cache() -> None:
    """Key numba's on-disk cache by the source of both packages.

    numba invalidates a cached function only when its own file changes, not
    when a kernel it calls from another module does; a cache directory per
    source digest makes a stale compiled twin impossible. Set through the
    environment, read when numba is first imported (also by worker processes),
    so that importing the packages does not import numba: a query answered from
    a stored table never compiles anything and should not pay for it.
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    src = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(src.glob("*/**/*.py")):
        digest.update(path.relative_to(src).as_posix().encode())
        digest.update(path.read_bytes())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    cache_dir = str(base / "charge-spark" / "numba" / digest.hexdigest()[:16])
    os.environ["NUMBA_CACHE_DIR"] = cache_dir
    if "numba" in sys.modules:  # imported first by someone else: its config is already read
        sys.modules["numba"].config.CACHE_DIR = cache_dir


pin_numba_cache()
