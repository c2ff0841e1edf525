"""The compiled-kernel cache: one directory per source version, stale ones removed."""

from __future__ import annotations

import os
import subprocess
import sys
import time


def _pinned_dir(cache_home) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(cache_home)
    done = subprocess.run(
        [sys.executable, "-c", "import os, rules; print(os.environ['NUMBA_CACHE_DIR'])"],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_other_versions_caches_unused_for_a_month_are_removed(tmp_path):
    root = tmp_path / "charge-spark" / "numba"
    old, recent, foreign = root / "0123456789abcdef", root / "fedcba9876543210", root / "notes"
    for d in (old, recent, foreign):
        d.mkdir(parents=True)
        (d / "index.nbi").write_bytes(b"x")
    month_ago = time.time() - 31 * 86400
    for d in (old, foreign):
        os.utime(d, (month_ago, month_ago))
    pinned = _pinned_dir(tmp_path)
    assert os.path.dirname(pinned) == str(root)
    assert os.path.isdir(pinned)
    assert not old.exists()  # another version's, a month unused
    assert recent.exists() and foreign.exists()  # used lately; not a cache this package made


def test_the_cache_in_use_is_marked_used_and_kept(tmp_path):
    pinned = _pinned_dir(tmp_path)
    month_ago = time.time() - 31 * 86400
    os.utime(pinned, (month_ago, month_ago))
    assert _pinned_dir(tmp_path) == pinned
    assert os.path.getmtime(pinned) > time.time() - 3600
