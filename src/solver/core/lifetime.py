"""Worker processes die with the process that started them.

A solve killed with `kill -9` runs no cleanup, and its workers (forked pools
waiting on their queues) would otherwise run on, holding memory and files. Once
this module is imported, every child forked by this process asks Linux for
SIGKILL when its parent dies; a spawned worker calls `die_with_parent` itself.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PARENT_POLL_SECONDS = 1.0


def die_with_parent(parent: int, by_signal: bool = True) -> None:
    """End this process when process `parent` (the one that started it) ends.

    `by_signal`: ask Linux for SIGKILL at the parent's death (prctl
    PR_SET_PDEATHSIG). The kernel sends it when the *thread* that started this
    process ends, so a process started from any other thread than the main one
    watches its parent from a thread of its own instead, as it does where prctl
    is missing."""
    if not (by_signal and _parent_death_signal_set()):
        threading.Thread(target=_watch_parent, args=(parent,), name="watch-parent", daemon=True).start()
    if os.getppid() != parent:  # the parent died before any of this was in place
        os._exit(1)


def _parent_death_signal_set() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    os.kill(os.getpid(), signal.SIGKILL)  # nothing of this process is worth more than its parent's cleanup


_forking: dict[str, object] = {}


def _before_fork() -> None:
    _forking.update(parent=os.getpid(), by_main_thread=threading.current_thread() is threading.main_thread())


def _after_fork_in_child() -> None:
    parent = _forking.get("parent")
    if isinstance(parent, int):
        die_with_parent(parent, by_signal=bool(_forking.get("by_main_thread")))


# Every child forked from here on (the layered solve's and the play analysis's worker pools) dies with its parent.
os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
