"""Whether play's graph is still alive when a propagation over its chain starts:
the chain holds all a propagation reads, so the graph beside it is a second copy
of every edge of play at the propagation's peak."""

from __future__ import annotations

import gc
import weakref
from types import ModuleType


def watch_graph_at(monkeypatch, module: ModuleType, propagation: str) -> list[bool]:
    """Wrap `module.chain_of_play` and `module.<propagation>`: each time the propagation
    starts, the returned list gets, per graph a chain was built from, whether it is alive."""
    graphs: list[weakref.ref] = []
    alive: list[bool] = []
    original_chain, original_propagation = module.chain_of_play, getattr(module, propagation)

    def chain_of_play(graph):
        graphs.append(weakref.ref(graph.out_prob))
        return original_chain(graph)

    def propagate(*args, **kwargs):
        gc.collect()
        alive.extend(ref() is not None for ref in graphs)
        return original_propagation(*args, **kwargs)

    monkeypatch.setattr(module, "chain_of_play", chain_of_play)
    monkeypatch.setattr(module, propagation, propagate)
    return alive
