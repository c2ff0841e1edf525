"""Whether following play builds a graph of play: its chain is built straight
from the edges kept while following, and a graph beside the chain would be a
second copy of every edge of play at the propagation's peak."""

from __future__ import annotations

from types import ModuleType


def watch_play_graphs(monkeypatch, module: ModuleType, propagation: str) -> tuple[list[int], list[int]]:
    """Count the graphs `core.play` builds and the times `module.<propagation>`
    runs: (graphs built, propagations run), each a list that grows by one a time."""
    import solver.core.play as play

    built: list[int] = []
    ran: list[int] = []
    original_graph, original_propagation = play.GameGraph, getattr(module, propagation)

    def game_graph(*args, **kwargs):
        built.append(1)
        return original_graph(*args, **kwargs)

    def propagate(*args, **kwargs):
        ran.append(1)
        return original_propagation(*args, **kwargs)

    monkeypatch.setattr(play, "GameGraph", game_graph)
    monkeypatch.setattr(module, propagation, propagate)
    return built, ran
