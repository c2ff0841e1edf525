"""Game definitions. Charge & Spark lives in `rules.charge_spark`."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import time
from pathlib import Path

STALE_CACHE_DAYS = 30
"""A compiled cache of another source version unused this long is removed."""


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
    _prune_stale_caches(Path(cache_dir))
    os.environ["NUMBA_CACHE_DIR"] = cache_dir
    if "numba" in sys.modules:  # imported first by someone else: its config is already read
        sys.modules["numba"].config.CACHE_DIR = cache_dir



def _prune_stale_caches(keep: Path) -> None:
    """Mark `keep` as used now and remove its siblings (other source versions'
    caches, tens of MB each) unused for `STALE_CACHE_DAYS`: each version leaves
    one behind, and nothing reads it once that source is gone."""
    cutoff = time.time() - STALE_CACHE_DAYS * 86400
    try:
        keep.mkdir(parents=True, exist_ok=True)
        os.utime(keep)
        for entry in keep.parent.iterdir():
            if entry != keep and re.fullmatch(r"[0-9a-f]{16}", entry.name) and entry.stat().st_mtime < cutoff:
                shutil.rmtree(entry, ignore_errors=True)
    except OSError:
        pass  # an unwritable cache is numba's to report when it compiles, not a reason to fail an import


pin_numba_cache()
