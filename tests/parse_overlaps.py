"""How many threads parse Python source at once: `ast_parsing`'s guarded parse, slowed and counted."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import solver.core.ast_parsing as ast_parsing


@dataclass
class Parses:
    """The threads that parsed, and the most that were inside the parser at once."""

    threads: set[int] = field(default_factory=set)
    most: int = 0
    inside: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def overlapping_parses(monkeypatch, pause: float = 0.002) -> Parses:
    """Slow every parse the guard lets through by `pause` seconds and count who
    is inside it: threads that did not take turns would then overlap."""
    parses, real = Parses(), ast_parsing._parse

    def slow_parse(*args, **kwargs):
        with parses.lock:
            parses.inside += 1
            parses.most = max(parses.most, parses.inside)
            parses.threads.add(threading.get_ident())
        time.sleep(pause)
        try:
            return real(*args, **kwargs)
        finally:
            with parses.lock:
                parses.inside -= 1

    monkeypatch.setattr(ast_parsing, "_parse", slow_parse)
    return parses
