"""A stop asked for by a signal, remembered until the run can act on it.

A signal handler that raises `KeyboardInterrupt` can lose it: Python drops an
exception raised inside a finalizer (a `__del__`, a weakref callback, which
garbage collection runs wherever the main thread happens to be) after
printing it. A solve interrupted just then would run on and store its table.
So the handler also records the request here, and the places that must not
go on once a stop was asked (the next layer, storing a table) ask again.
"""

from __future__ import annotations

_asked = False


def ask_to_stop() -> None:
    """Record that the run was asked to stop (a signal handler calls this)."""
    global _asked
    _asked = True


def stop_if_asked() -> None:
    """Raise `KeyboardInterrupt` if a stop was asked, even one whose own exception was lost."""
    if _asked:
        raise KeyboardInterrupt


def forget() -> None:
    """A new run: no stop asked yet."""
    global _asked
    _asked = False
