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


KERNEL = """
import numba

@numba.njit(cache=True)
def doubled_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * 2
    return s
"""

# Two processes compile the kernel for two signatures at once. numba's save reads the
# index, picks a free data-file number and writes both back; the waits below widen
# that window so that both read an empty index, and the float process's machine code
# lands in the file the int process's index entry names, unless saves are locked.
SAVE_RACE = """
import sys, time
import numpy as np
import rules  # noqa: F401 - the package's import is what locks numba's saves
import numba.core.caching as caching
kind = sys.argv[1]
load_index, save_data = caching.IndexDataCacheFile._load_index, caching.IndexDataCacheFile._save_data
def slow_load_index(self):
    index = load_index(self)
    time.sleep(0.5)
    return index
def slow_save_data(self, name, data):
    if kind == "float":
        time.sleep(1.0)
    return save_data(self, name, data)
caching.IndexDataCacheFile._load_index = slow_load_index
caching.IndexDataCacheFile._save_data = slow_save_data
import kernel
kernel.doubled_sum(np.arange(5, dtype=np.float64 if kind == "float" else np.int32))
"""

READ_BACK = """
import numpy as np
import rules  # noqa: F401
import kernel
print(kernel.doubled_sum(np.arange(5, dtype=np.float64) + 0.25), kernel.doubled_sum(np.arange(5, dtype=np.int32)),
      sum(kernel.doubled_sum.stats.cache_hits.values()))
"""


def test_two_processes_saving_one_kernel_at_once_both_keep_their_own_code(tmp_path):
    (tmp_path / "kernel.py").write_text(KERNEL)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    racers = [subprocess.Popen([sys.executable, "-c", SAVE_RACE, kind], env=env, cwd=tmp_path,
                               stderr=subprocess.PIPE, text=True) for kind in ("float", "int")]
    for racer in racers:
        _, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err
    done = subprocess.run([sys.executable, "-c", READ_BACK], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr  # unlocked: "can't unbox array" (the float code under the int key)
    assert done.stdout.split() == ["22.5", "20.0", "2"]  # both signatures read from the cache
