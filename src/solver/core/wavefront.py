"""When a rank-by-rank solve's layers may start, and how long they take on N workers.

`layered` solves a game's layers from the highest rank down: a layer needs
every rank it exits to finished (a twin layer: only the layer it mirrors),
so the layers of one rank can run side by side while the ranks form chains.
How far more workers help is then a property of the layer list and of each
layer's cost alone. This module holds the scheduler's rule and order
(`Wavefront`, which `layered._run_layers` itself runs on) and replays them on
a simulated clock (`simulate`), so that a speed-up on 16 or 64 cores can be
predicted on a machine that has 2, without solving anything; the longest
chain of waiting (`critical_path`) bounds it on any number of cores.
"""

from __future__ import annotations

import collections
import heapq
import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

Costs = Sequence[float] | np.ndarray
"""Seconds per layer, by layer number (a given or finished layer's is never read)."""


class LayerShape(Protocol):
    """What scheduling reads of a layer (`layered.Layer` has it; so has `LayerSpec`)."""

    @property
    def rank(self) -> int: ...

    @property
    def exit_ranks(self) -> Collection[int]: ...

    @property
    def twin_of(self) -> int | None: ...

    @property
    def given(self) -> bool: ...


@dataclass(frozen=True)
class LayerSpec:
    """A layer without its states: enough to schedule it, and cheap to keep for millions of states."""

    rank: int
    exit_ranks: frozenset[int] = frozenset()
    twin_of: int | None = None
    given: bool = False


def spec_of(layer: LayerShape) -> LayerSpec:
    """`layer`'s scheduling fields alone (its states may then be dropped)."""
    return LayerSpec(layer.rank, frozenset(layer.exit_ranks), layer.twin_of, layer.given)


@dataclass(frozen=True)
class Prerequisites:
    """What a layer waits for: these layers finished, and every layer of these ranks."""

    layers: frozenset[int]
    ranks: frozenset[int]


def prerequisites(layer: LayerShape) -> Prerequisites:
    """The one dependency rule. A twin layer is copied from the layer it
    mirrors, so it waits for that layer alone; any other layer reads the
    finished figures of the states it exits to, so it waits for every rank
    those are in (all of a rank's layers: its exits are known by rank only)."""
    if layer.twin_of is not None:
        return Prerequisites(frozenset((layer.twin_of,)), frozenset())
    return Prerequisites(frozenset(), frozenset(layer.exit_ranks))


class Wavefront:
    """The layers still to run and which of them may start, in the order a
    solve starts them: highest rank first, and within a rank in list order
    (so a twin layer after the layer it mirrors). `finished` layers (a
    resumed solve's) and `given` ones (a boundary's) are done already."""

    def __init__(self, layers: Sequence[LayerShape], finished: Collection[int] = ()) -> None:
        self.layers = layers
        todo = [i for i, layer in enumerate(layers) if not layer.given and i not in finished]
        self.waiting: list[int] = sorted(todo, key=lambda i: -layers[i].rank)
        self._unfinished = collections.Counter(layers[i].rank for i in todo)
        self._finished_layers: set[int] = set(finished)
        self._finished_ranks: set[int] = {layer.rank for layer in layers if not self._unfinished[layer.rank]}

    def ready(self, i: int) -> bool:
        """Whether layer `i` may start: everything it waits for (`prerequisites`) is finished."""
        needs = prerequisites(self.layers[i])
        return needs.layers <= self._finished_layers and needs.ranks <= self._finished_ranks

    def start(self, free: int) -> list[int]:
        """The first `free` ready layers in waiting order, taken off `waiting`:
        what a solve with `free` idle workers starts now."""
        chosen = list(itertools.islice((i for i in self.waiting if self.ready(i)), max(free, 0)))
        for i in chosen:
            self.waiting.remove(i)
        return chosen

    def finish(self, i: int) -> None:
        """Layer `i` is done; its rank is once its last layer is."""
        self._finished_layers.add(i)
        rank = self.layers[i].rank
        self._unfinished[rank] -= 1
        if not self._unfinished[rank]:
            self._finished_ranks.add(rank)


@dataclass(frozen=True)
class Schedule:
    """A simulated solve: when it ends, and each layer's start, in the order started."""

    makespan: float
    starts: tuple[tuple[int, float], ...]  # (layer, time it started)


def simulate(
    layers: Sequence[LayerShape], cost: Costs, workers: int | None, finished: Collection[int] = (),
) -> Schedule:
    """`_run_layers`' policy on `workers` workers (None: as many as there are
    layers) with layer i lasting `cost[i]` seconds: at each moment layers
    finish, every layer finished then is marked so, then the first ready
    layers in waiting order fill the idle workers. Overheads (forking,
    handing figures back) are not simulated: a lower bound on the wall time
    of a solve whose layers cost that much."""
    front = Wavefront(layers, finished)
    seconds = [float(c) for c in cost]
    slots = len(layers) if workers is None else workers
    if slots < 1:
        raise ValueError("at least one worker is needed")
    running: list[tuple[float, int]] = []  # heap of (end, layer)
    starts: list[tuple[int, float]] = []
    now = 0.0
    while front.waiting or running:
        for i in front.start(slots - len(running)):
            heapq.heappush(running, (now + seconds[i], i))
            starts.append((i, now))
        if not running:
            raise ValueError(f"layer of rank {layers[front.waiting[0]].rank} exits to a rank that is never solved")
        now = running[0][0]
        while running and running[0][0] == now:  # all that end together, as `futures.wait` hands them back
            front.finish(heapq.heappop(running)[1])
    return Schedule(now, tuple(starts))


def makespan(
    layers: Sequence[LayerShape], cost: Costs, workers: int | None, finished: Collection[int] = (),
) -> float:
    """The simulated solve's length in seconds (see `simulate`)."""
    return simulate(layers, cost, workers, finished).makespan


@dataclass(frozen=True)
class CriticalPath:
    """The longest chain of layers each waiting for the one before: no number of workers finishes sooner."""

    seconds: float
    layers: tuple[int, ...]  # first to run first


def critical_path(layers: Sequence[LayerShape], cost: Costs, finished: Collection[int] = ()) -> CriticalPath:
    """The latest finish time with unlimited workers, and the chain that sets it:
    each layer ends at its cost after the latest of its prerequisites."""
    todo = [i for i, layer in enumerate(layers) if not layer.given and i not in finished]
    by_rank: dict[int, list[int]] = collections.defaultdict(list)
    for i in todo:
        by_rank[layers[i].rank].append(i)
    known_ranks = {layer.rank for layer in layers}
    pending = set(todo)

    def waits_for(i: int) -> list[int]:
        needs = prerequisites(layers[i])
        missing = needs.ranks - known_ranks
        if missing:
            raise ValueError(f"layer of rank {layers[i].rank} exits to a rank that is never solved")
        if any(j not in pending and j not in finished for j in needs.layers):
            raise ValueError(f"layer of rank {layers[i].rank} mirrors a layer that is never solved")
        out = [j for j in needs.layers if j in pending]
        for rank in needs.ranks:
            out.extend(by_rank.get(rank, ()))
        return out

    end: dict[int, float] = {}
    after: dict[int, int | None] = {}
    on_stack: set[int] = set()
    for top in todo:
        stack = [top]
        while stack:  # depth first without recursion: chains of ranks can be long
            i = stack[-1]
            if i in end:
                stack.pop()
                continue
            before = waits_for(i)
            undone = [j for j in before if j not in end]
            if undone:
                if i in on_stack:
                    raise ValueError(f"layers of rank {layers[i].rank} wait for each other")
                on_stack.add(i)
                stack.extend(undone)
                continue
            on_stack.discard(i)
            latest = max(before, key=lambda j: end[j], default=None)
            end[i] = float(cost[i]) + (end[latest] if latest is not None else 0.0)
            after[i] = latest
            stack.pop()
    if not end:
        return CriticalPath(0.0, ())
    last: int | None = max(end, key=lambda i: end[i])
    chain = []
    while last is not None:
        chain.append(last)
        last = after[last]
    return CriticalPath(end[chain[0]], tuple(reversed(chain)))
