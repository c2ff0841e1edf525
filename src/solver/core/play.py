"""Play under a solved game's strategies from one start, followed over the
states it reaches and kept as a Markov chain (`Play`): the start's length
distribution, the chain's visits and the stalls are read from it. A table
can be far larger than what optimal play visits, and its graph larger than
memory, so play is followed chunk by chunk of the reached states.
`follow_play` expands each reached state once (on several processes where
asked) and hands each chunk's expansion on, so that the analyses of play
read it there rather than expanding the states again."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import numpy as np

from .chain import PlayChain
from .graph import (
    EXPANSION_FIELDS,
    GameGraph,
    distinct_sorted,
    expansion_of,
    index_type,
    offsets_of,
    positions_in_segments,
    segment_positions,
)
from .heap import trim_heap
from .protocol import StochasticGame
from .resources import processes_allowed
from .result import SolveResult


def reached_breadth_first(
    num_states: int, start: int, successors: Callable[[np.ndarray], np.ndarray], chunk: int = 1 << 16,
    done: Callable[[], bool] = lambda: False,
) -> np.ndarray:
    """Per state index of a table, whether it is reached from index `start`:
    breadth first, `successors(indices)` giving the indices a chunk of the
    frontier leads to, marking reached states by index (a sorted list of
    them would be re-sorted every turn); stops early once `done()`."""
    reached = np.zeros(num_states, bool)
    frontier = np.array([start], np.int64)
    reached[frontier] = True
    while frontier.size and not done():
        found = []
        for lo in range(0, frontier.size, chunk):
            nxt = successors(frontier[lo : lo + chunk])
            found.append(nxt[~reached[nxt]])
        frontier = distinct_sorted(np.concatenate(found))
        reached[frontier] = True
    return reached


def table_indices(result: SolveResult, codes: np.ndarray, reaches: str = "optimal play") -> np.ndarray:
    """The table indices of `codes` (sorted); KeyError naming what reaches them if one is missing."""
    at = np.searchsorted(result.states, codes)
    if at.size and (at.max() >= result.num_states or np.any(result.states[at] != codes)):
        raise KeyError(f"a state {reaches} reaches is missing from the table")
    return at


def _table_indices_compiled(result: SolveResult, codes: np.ndarray) -> np.ndarray:
    """`table_indices`, each search compiled and begun where the last ended (`absorption.sorted_positions`)."""
    from .absorption import sorted_positions  # loads the compiler

    at = sorted_positions(np.asarray(result.states), np.asarray(codes, np.int64))
    if at.size and at.min() < 0:
        raise KeyError("a state optimal play reaches is missing from the table")
    return at


def played_states(game: StochasticGame, result: SolveResult, start: int, chunk: int = 1 << 16) -> np.ndarray:
    """Sorted codes of the states `result`'s strategies reach from the state
    coded `start`, expanding the frontier in chunks."""

    def successors(index: np.ndarray) -> np.ndarray:
        codes = np.asarray(result.states[index])
        expansion = expansion_of(game, codes)
        return table_indices(result, distinct_sorted(expansion["out_next"][_played_outcomes(result, codes, expansion)]))

    reached = reached_breadth_first(result.num_states, result.index_of(start), successors, chunk)
    return np.asarray(result.states[np.flatnonzero(reached)])


def _played_outcomes(result, codes: np.ndarray, expansion: dict[str, np.ndarray]) -> np.ndarray:
    """Mask of the outcomes (in `expansion` of `codes`) that lead to a state
    through a pair of cards both strategies play."""
    return (_outcome_weights(result, codes, expansion) > 0) & (expansion["out_next"] >= 0)


def _outcome_weights(result, codes: np.ndarray, expansion: dict[str, np.ndarray]) -> np.ndarray:
    """The probability of each outcome (in `expansion` of `codes`) under the
    strategies of `result`: P1's weight on its card, times P2's on its card,
    times the outcome's own probability; 0 where either card is never played."""
    index = np.searchsorted(result.states, codes)
    row_w = result.row_strategy[segment_positions(result.row_ptr, index)]
    col_w = result.col_strategy[segment_positions(result.col_ptr, index)]
    return _weights(row_w, col_w, expansion)


def _weights(row_w: np.ndarray, col_w: np.ndarray, expansion: dict[str, np.ndarray]) -> np.ndarray:
    """`_outcome_weights`, given both strategies at the expanded states (numpy:
    following play over a small stored table does without the compiler)."""
    m, n = expansion["row_count"], expansion["col_count"]
    row_start = np.concatenate([[0], np.cumsum(m)[:-1]])
    col_start = np.concatenate([[0], np.cumsum(n)[:-1]])
    state = np.repeat(np.arange(m.size), m * n)
    within = np.arange(state.size) - np.repeat(np.concatenate([[0], np.cumsum(m * n)[:-1]]), m * n)
    r, c = within // n[state], within % n[state]
    wr, wc = row_w[row_start[state] + r], col_w[col_start[state] + c]
    cell = np.where((wr > 0) & (wc > 0), wr * wc, 0.0)
    prob = np.asarray(expansion["out_prob"], np.float64)
    return np.where(prob > 0, np.repeat(cell, expansion["out_count"]) * prob, 0.0)


@dataclass(frozen=True, eq=False)
class Play:
    """Play under a solved table's strategies from one start, as a Markov
    chain over the states it reaches: `graph` gives each state one 1 x 1
    stage game whose outcomes are where a turn leads (a state's index in
    `states`, or a terminal outcome) with their probabilities. Far smaller
    than those states' game graph (every pair of cards, every outcome).
    `follow_play`'s has no graph (None): its chain of play holds the edges,
    and the graph beside it would be a second copy of them."""

    states: np.ndarray  # codes, sorted
    index: np.ndarray  # each state's index in the table
    graph: GameGraph | None
    start: int  # index of the start in `states`

    @property
    def strategy(self) -> np.ndarray:
        """The one action's weight at every state (for either seat)."""
        return np.ones(self.states.size)


def play_from(game: StochasticGame, result: SolveResult, start: int, chunk: int = 1 << 16) -> Play:
    """`Play` of the solved `result` of `game` from the state coded `start`,
    built chunk by chunk of the states it reaches."""
    states = played_states(game, result, start)
    terminals = len(game.terminal_payoff)
    counts, targets, probs = [], [], []
    for lo in range(0, states.size, chunk):
        codes = states[lo : lo + chunk]
        expansion = expansion_of(game, codes)
        weight = _outcome_weights(result, codes, expansion)
        nxt = np.asarray(expansion["out_next"], np.int64)
        source = np.repeat(np.repeat(np.arange(codes.size), expansion["row_count"] * expansion["col_count"]),
                           expansion["out_count"])
        keep = weight > 0
        source, nxt, weight = source[keep], nxt[keep], weight[keep]
        live = nxt >= 0
        nxt[live] = np.searchsorted(states, nxt[live])
        # One entry per (state, where it leads): terminals sort first (-1 - t < 0).
        key = source * (states.size + terminals) + (nxt + terminals)
        merged, slot = np.unique(key, return_inverse=True)
        counts.append(np.bincount(merged // (states.size + terminals), minlength=codes.size))
        targets.append(merged % (states.size + terminals) - terminals)
        probs.append(np.bincount(slot, weights=weight, minlength=merged.size))
    single = np.arange(states.size + 1, dtype=np.int64)
    out_ptr = np.zeros(states.size + 1, np.int64)
    np.cumsum(np.concatenate(counts), out=out_ptr[1:])
    graph = GameGraph(
        states=states, row_ptr=single, row_actions=np.zeros(states.size, np.int16), col_ptr=single,
        col_actions=np.zeros(states.size, np.int16), cell_ptr=single, out_ptr=out_ptr,
        out_next=np.concatenate(targets), out_prob=np.concatenate(probs),
        terminal_payoff=np.asarray(game.terminal_payoff, np.float64), terminal_labels=tuple(game.terminal_labels),
        unending_payoff=float(game.unending_payoff), action_labels=tuple(game.action_labels),
    )
    return Play(states, np.searchsorted(result.states, states), graph, int(np.searchsorted(states, start)))



# ---- play followed once, with what the analyses of play need gathered on the way


FOLLOWED_CHUNK = 1 << 14
"""States of the frontier `follow_play` expands at once. Late in play they lie
far apart in the table, each on pages of its own in every figure read: at
1 << 16 a chunk held 2.8 GB of the printed rules' mapped table until let go."""


@dataclass(frozen=True, eq=False)
class PlayedChunk:
    """A chunk of the states play reaches, expanded once, as `follow_play`
    hands it to its `per_chunk`: what a figure of play needs from the game
    and the table at those states."""

    codes: np.ndarray
    index: np.ndarray  # each state's index in the table
    expansion: dict[str, np.ndarray]  # `expansion_of` the states; where the game can, only the cells both play have outcomes
    row_weights: np.ndarray  # P1's strategy, at each of the expansion's row actions
    col_weights: np.ndarray  # P2's, at each column action
    weight: np.ndarray  # per outcome: its probability under both strategies, 0 where a card is never played
    successors: np.ndarray  # sorted table indices of the states the played outcomes lead to
    slot: np.ndarray  # per outcome: its successor's position in `successors`; -1 where terminal or not played


@dataclass(frozen=True, eq=False)
class SeatChoices:
    """One seat's strategy at each state of a `Play`, its support only: state
    i plays `actions[ptr[i]:ptr[i + 1]]` with the positive `weights` there."""

    ptr: np.ndarray
    actions: np.ndarray
    weights: np.ndarray


@dataclass(frozen=True, eq=False)
class FollowedPlay:
    """`Play` and what was gathered while following it (`follow_play`), per
    state of `play.states`: the chain of play (`chain.chain_of_play` of
    `play_from`'s graph, built straight from the kept edges)."""

    play: Play
    chain: PlayChain
    choices: tuple[SeatChoices, SeatChoices] | None  # P1's, P2's; None where not kept
    gathered_at: np.ndarray | None  # the states (indices into `play.states`) whose `per_chunk` row is not all zeros
    gathered: np.ndarray | None  # their rows, in that order; both None without `per_chunk`


def follow_play(
    game: StochasticGame, result: SolveResult, start: int,
    per_chunk: Callable[[PlayedChunk], np.ndarray] | None = None, chunk: int = FOLLOWED_CHUNK,
    keep_choices: bool = True, workers: int = 1, progress: Callable[[int], None] | None = None,
) -> FollowedPlay:
    """`play_from`, each reached state expanded once (breadth first, chunk by
    chunk of the frontier): the chain of play, both seats' strategies there
    (unless not `keep_choices`: a third of what play keeps), and
    `per_chunk`'s rows (one a state of the chunk, those not all zeros kept)
    for any further figure read from the expansion. `play_from` expands each
    state twice, and an analysis reading the expansion would expand it again.

    With `workers` > 1, chunks of the states found are expanded on that many
    forked processes (`_reached_on_workers`), each sending back only what play
    keeps of its chunk (`KeptChunk`): the answer is the same to the last bit.
    A daemonic process, which may start none, follows play itself.
    On two cores, following play from the start at health 2 (2.45 million
    states reached) took 9.1-9.3 s instead of 13.7-15.7 s. `progress(count)`
    is called as each chunk's `count` states have been followed."""
    kept = _Kept(result.num_states, len(game.terminal_payoff), per_chunk, keep_choices, progress)
    following = _Following(game, result, kept.terminals, kept.at, per_chunk, keep_choices)

    def successors(index: np.ndarray) -> np.ndarray:
        piece, nxt = _followed_chunk(following, index)
        kept.append(piece)
        return nxt

    if processes_allowed(workers) > 1:
        reached = _reached_on_workers(following, kept, successors, result.index_of(start), chunk, workers)
    else:
        reached = reached_breadth_first(result.num_states, result.index_of(start), successors, chunk)
    followed = kept.in_table_order(game, result, reached, start)
    del reached  # what kept held was let go as it was placed
    result.release_mapped_pages()
    trim_heap()
    return followed


def _played_chunk(game: StochasticGame, result: SolveResult, index: np.ndarray) -> PlayedChunk:
    from .absorption import cell_weights, weights_of_outcomes  # loads the compiler

    codes = np.asarray(result.states[index])
    row_w, row_count = _strategy_at(result.row_ptr, result.row_strategy, index)
    col_w, col_count = _strategy_at(result.col_ptr, result.col_strategy, index)
    # Each cell's weight once: it says which cells to resolve, then weighs their outcomes
    # (as `_weights` does in numpy, to the last bit).
    cell = cell_weights(row_count, col_count, np.asarray(row_w, np.float64), np.asarray(col_w, np.float64))
    expansion = _played_expansion(game, codes, cell > 0)
    weight = weights_of_outcomes(cell, np.asarray(expansion["out_count"], np.int64),
                                 np.asarray(expansion["out_prob"], np.float64))
    nxt = expansion["out_next"]
    played = (weight > 0) & (nxt >= 0)
    codes_next, where = np.unique(nxt[played], return_inverse=True)
    successors = _table_indices_compiled(result, codes_next)
    slot = np.full(nxt.size, -1, np.int32)  # a chunk's outcomes and successors are far fewer than 2**31
    slot[played] = where
    return PlayedChunk(codes, index, expansion, row_w, col_w, weight, successors, slot)


def _strategy_at(ptr: np.ndarray, weights: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A side's weights at the states `index` (joined) and its count of actions at each."""
    first = np.asarray(ptr[index], np.int64)  # each offset read once: a mapped table's are read at random
    count = np.asarray(ptr[index + 1], np.int64) - first
    return np.asarray(weights[positions_in_segments(first, count)]), count


def _played_expansion(game: StochasticGame, codes: np.ndarray, played: np.ndarray) -> dict[str, np.ndarray]:
    """`expansion_of` the states coded `codes`, where the game can
    (`expand_cells`) only the cells `played` (a flag per pair of actions both
    strategies play) resolved: the others, which no figure of play reads,
    have no outcomes. About a fifth of the cells at the printed rules, where
    this expands 2.5 times faster."""
    expand_cells = getattr(game, "expand_cells", None)
    if expand_cells is None:
        return expansion_of(game, codes)
    part = expand_cells(codes, played)
    return {name: np.asarray(getattr(part, name)) for name in EXPANSION_FIELDS}


@dataclass(frozen=True, eq=False)
class KeptChunk:
    """What `follow_play` keeps of one chunk of the states play reaches (`kept_of`)."""

    index: np.ndarray  # the chunk's table indices
    ending: np.ndarray  # per state: its probability of ending this turn
    edges: tuple[np.ndarray, np.ndarray, np.ndarray]  # per state its count of edges; their targets (table indices), probabilities
    seats: tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]] | None  # each seat's `_support`, where kept
    gathered_at: np.ndarray | None  # the table indices whose `per_chunk` row is not all zeros ...
    gathered: np.ndarray | None  # ... and those rows


def kept_of(
    part: PlayedChunk, terminals: int, at: np.dtype, per_chunk: Callable[[PlayedChunk], np.ndarray] | None,
    keep_choices: bool,
) -> KeptChunk:
    """What play keeps of an expanded chunk: each state's moves to a state merged
    by where they lead, its probability of ending this turn (its `terminals`
    terminal outcomes' probabilities added in their order, as
    `chain.chain_of_play` adds a graph's, to the last bit), both seats'
    support (with `keep_choices`), `per_chunk`'s rows that are not all zeros.
    `at`: the type of table indices."""
    from .absorption import merged_moves  # loads the compiler

    e, size = part.expansion, part.codes.size
    target = np.asarray(e["out_next"], np.int64).copy()
    live = part.slot >= 0
    target[live] = part.successors[part.slot[live]]
    del live
    # One move per (state, where it leads), as `play_from` merges them.
    ending, count, to, prob = merged_moves(
        np.asarray(e["row_count"], np.int64), np.asarray(e["col_count"], np.int64), np.asarray(e["out_count"], np.int64),
        np.asarray(part.weight, np.float64), target, terminals,
    )
    del target
    edges = (count, to.astype(at), prob)
    seats = None
    if keep_choices:
        row, col = (_support(np.asarray(e[f"{side}_count"], np.int64), e[f"{side}_actions"], weights)
                    for side, weights in (("row", part.row_weights), ("col", part.col_weights)))
        seats = (row, col)
    if per_chunk is None:
        return KeptChunk(part.index.astype(at), ending, edges, seats, None, None)
    rows = np.asarray(per_chunk(part))
    some = rows.reshape(size, -1).any(axis=1)  # most states draw nothing, say: only the others kept
    return KeptChunk(part.index.astype(at), ending, edges, seats, part.index[some].astype(at), rows[some])


LET_GO_EVERY = 4
"""Chunks a process of `follow_play` follows between letting go of the pages
of a memory-mapped table they read and of the heap's free pages. A chunk's
states lie all over the table: at the printed rules it reads some 50 MB of
its pages, which the next chunks largely read again. Let go after every
chunk, they were faulted in again each time: following play from the
printed rules' stored table on two workers took 89-91 CPU-s (50-51 s wall),
against 73 CPU-s (43 s) let go every 4 chunks and 71-78 every 8 or 16. A
worker's peak grew from 4.8 to 5.1 GB, the table's clean pages, which the
system takes back when it needs them (docs/performance.md)."""


@dataclass(eq=False)
class _Following:
    """What expanding a chunk of play needs: the arguments of `_played_chunk`
    and `kept_of`; and how many chunks this process has followed."""

    game: Any
    result: SolveResult
    terminals: int
    at: np.dtype
    per_chunk: Callable[[PlayedChunk], np.ndarray] | None
    keep_choices: bool
    chunks_followed: int = 0  # a forked worker counts its own


def _followed_chunk(following: _Following, index: np.ndarray) -> tuple[KeptChunk, np.ndarray]:
    """(what play keeps of the chunk of table indices `index`, the sorted indices it leads to)."""
    f = following
    part = _played_chunk(f.game, f.result, index)
    piece = kept_of(part, f.terminals, f.at, f.per_chunk, f.keep_choices)
    successors = part.successors
    del part
    f.chunks_followed += 1
    if f.chunks_followed % LET_GO_EVERY == 0:
        f.result.release_mapped_pages()  # a stored table's pages these chunks read: kept is what play needs
        trim_heap()  # the chunks' temporaries, freed among what is kept: holes that would stay resident
    return piece, successors


_FOLLOWING: _Following | None = None  # what the forked workers of `follow_play` inherit (a closure does not pickle)


def _followed_chunk_forked(index: np.ndarray) -> tuple[KeptChunk, np.ndarray]:
    assert _FOLLOWING is not None  # set before the workers were forked
    return _followed_chunk(_FOLLOWING, index)


def _reached_on_workers(
    following: _Following, kept: _Kept, successors: Callable[[np.ndarray], np.ndarray], start: int, chunk: int,
    workers: int,
) -> np.ndarray:
    """`reached_breadth_first` for `follow_play`, its chunks expanded on `workers`
    forked processes, what each keeps appended to `kept` (here, `successors`
    follows a chunk and keeps what it keeps, until a chunk holds every state
    found). Not turn by turn: a
    chunk goes out as soon as a worker is free, of the states found longest
    ago and not yet sent (sorted, for the table's pages they share), so that
    no worker waits for a turn's last chunk. Play keeps the same either way:
    each state is expanded once, whatever chunk it is in, and
    `_Kept.in_table_order` places every state's figures by its index."""
    global _FOLLOWING
    reached = np.zeros(following.result.num_states, bool)
    reached[start] = True
    waiting = [np.array([start], np.int64)]  # found, not yet sent
    # Here while a chunk holds every state found: the workers are forked with the kernels loaded,
    # and small games' play never starts them.
    while waiting and sum(found.size for found in waiting) <= chunk:
        nxt = successors(np.sort(np.concatenate(waiting)))
        waiting = [nxt[~reached[nxt]]]
        reached[waiting[0]] = True
        waiting = [found for found in waiting if found.size]
    if not waiting:
        return reached
    _FOLLOWING = following  # before the fork: the workers inherit it
    try:
        with futures.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
            running: set[futures.Future] = set()
            while waiting or running:
                while waiting and len(running) < 2 * workers:  # one chunk queued behind each worker's
                    running.add(pool.submit(_followed_chunk_forked, _next_chunk(waiting, chunk)))
                done, running = futures.wait(running, return_when=futures.FIRST_COMPLETED)
                for future in done:
                    piece, nxt = future.result()
                    kept.append(piece)
                    nxt = nxt[~reached[nxt]]
                    reached[nxt] = True
                    if nxt.size:
                        waiting.append(nxt)
    finally:
        _FOLLOWING = None
    return reached


def _next_chunk(waiting: list[np.ndarray], chunk: int) -> np.ndarray:
    """Up to `chunk` states taken from the front of `waiting` (arrays of states
    found, oldest first; emptied as taken), sorted. The sort is of one chunk,
    not of everything waiting: at the printed rules a million states can wait."""
    taken, size = [], 0
    while waiting and size < chunk:
        found = waiting.pop(0)
        if size + found.size > chunk:
            waiting.insert(0, found[chunk - size :])
            found = found[: chunk - size]
        taken.append(found)
        size += found.size
    return np.sort(np.concatenate(taken))


class _Kept:
    """What `follow_play` keeps of each chunk (`KeptChunk`, from `kept_of`), its
    states in the order followed: each state's moves to a state merged by where they lead
    (successors as table indices), its probability of ending this turn, both
    seats' support, the `per_chunk` rows. Only the chain's edges are kept, not
    the terminal ones (a sixth of the outcomes at the printed rules): the
    ending probability holds what is read of them. Indices and counts are
    int32 where they fit (a table of fewer than 2**31 states)."""

    def __init__(
        self, table_states: int, terminals: int, per_chunk, keep_choices: bool,
        followed: Callable[[int], None] | None = None,
    ) -> None:
        self.span, self.terminals, self.per_chunk = table_states + terminals, terminals, per_chunk
        self.followed = followed  # told how many states each chunk kept held
        self.at = index_type(self.span)  # of table indices (a state's count of edges or actions: int32, a few)
        self.index: list[np.ndarray] = []
        self.edges: list[list[np.ndarray]] = [[], [], []]  # count per state, targets, probabilities
        self.ending: list[np.ndarray] = []
        self.seats: list[list[list[np.ndarray]]] | None = [[[], [], []], [[], [], []]] if keep_choices else None
        self.gathered_at: list[np.ndarray] = []  # table indices
        self.gathered: list[np.ndarray] = []

    def append(self, piece: KeptChunk) -> None:
        """Keep what play needs of one chunk (`kept_of`)."""
        self.index.append(piece.index)
        self.ending.append(piece.ending)
        for field, value in zip(self.edges, piece.edges):
            field.append(value)
        for fields, values in zip(self.seats or (), piece.seats or ()):
            for field, value in zip(fields, values):
                field.append(value)
        if piece.gathered_at is not None and piece.gathered is not None:
            self.gathered_at.append(piece.gathered_at)
            self.gathered.append(piece.gathered)
        if self.followed is not None:
            self.followed(int(piece.index.size))

    def _gathered_in_order(self, position: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The `per_chunk` rows kept, in the order of their states among the
        `n` reached (`position`: a table index's place among them), placed
        chunk by chunk as the other fields: a joined copy and its sorted copy
        were two more of the report's draw sums at the peak."""
        places = [position[at] for at in self.gathered_at]
        self.gathered_at.clear()
        some = np.zeros(n, bool)
        for place in places:
            some[place] = True
        rank = np.cumsum(some, dtype=self.at) - 1  # a state's row among the rows kept
        rows = _placed_per_state([rank[place] for place in places], self.gathered)
        return np.flatnonzero(some), rows

    def in_table_order(self, game: StochasticGame, result: SolveResult, reached: np.ndarray, start: int) -> FollowedPlay:
        """The chunks' states put in the table's order (that of their codes),
        successors renumbered as indices of the reached states. Each field is
        placed chunk by chunk into its new array, each chunk let go once
        placed: no joined copy of the chunks, only one field's new array at once."""
        import scipy.sparse as sp

        position = np.cumsum(reached, dtype=self.at) - 1  # a reached state's index among the reached
        ranks = [position[index] for index in self.index]
        self.index.clear()
        for targets in self.edges[1]:  # successors, chunk by chunk: as indices among the reached states
            targets[...] = position[targets]
        gathered_at = gathered = None
        if self.per_chunk is not None:
            gathered_at, gathered = self._gathered_in_order(position, int(reached.sum()))
        del position
        indptr, (indices, data) = _placed(ranks, *self.edges)
        ending = _placed_per_state(ranks, self.ending)
        n = ending.size
        chain = PlayChain(sp.csr_matrix((data, indices, indptr), shape=(n, n)), ending)
        del indptr, indices, data, ending
        choices = None
        if self.seats is not None:
            row, col = (SeatChoices(ptr, actions, weights) for ptr, (actions, weights) in
                        (_placed(ranks, *fields) for fields in self.seats))
            choices = (row, col)
        del ranks
        index = np.flatnonzero(reached)
        states = np.asarray(result.states[index])
        play = Play(states, index, None, int(np.searchsorted(states, start)))
        return FollowedPlay(play, chain, choices, gathered_at, gathered)


def cells_and_states_of(expansion: dict[str, np.ndarray], outcomes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cell and the state (their places in `expansion`) of each of
    `outcomes` (sorted positions in its outcome arrays), found from where
    each cell's and each state's outcomes begin: no array over every
    outcome, of which play keeps a few."""
    cells = np.asarray(expansion["row_count"], np.int64) * expansion["col_count"]
    out_start = np.zeros(int(cells.sum()) + 1, index_type(expansion["out_next"].size + 1))
    np.cumsum(expansion["out_count"], out=out_start[1:])
    cell = np.searchsorted(out_start, outcomes, side="right") - 1  # a cell without outcomes shares its start
    return cell, np.searchsorted(offsets_of(cells), cell, side="right") - 1


def _support(count: np.ndarray, actions: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, ...]:
    """(per state: how many of its actions have positive weight, those actions, their weights)."""
    positive = weights > 0
    state = np.repeat(np.arange(count.size), count)
    chosen = np.bincount(state[positive], minlength=count.size).astype(np.int32)  # a state's actions: a few
    return chosen, np.asarray(actions[positive], np.int16), weights[positive]


def _trim_now_and_then(k: int) -> None:
    """After every 16th chunk placed: the chunks let go are small, so they
    free holes in the heap, not memory, until trimmed; the placed arrays
    would otherwise grow beside all of them (twice what play keeps)."""
    if k % 16 == 15:
        trim_heap()


def _placed_per_state(ranks: list[np.ndarray], chunks: list[np.ndarray]) -> np.ndarray:
    """A per-state figure (one value a state, chunk by chunk) put in the
    states' new order, `ranks` giving each chunk's states their new places;
    the list is emptied as its chunks are placed."""
    field = np.empty((sum(rank.size for rank in ranks), *chunks[0].shape[1:]), chunks[0].dtype)
    for k, rank in enumerate(ranks):
        field[rank] = chunks.pop(0)
        _trim_now_and_then(k)
    return field


def _placed(ranks: list[np.ndarray], counts: list[np.ndarray], *fields: list[np.ndarray]) -> tuple:
    """Per-state segments (of `counts` per state, chunk by chunk) put in the
    states' new order, `ranks` giving each chunk's states their new places:
    (the new offsets, [each field so placed]). Each field's chunks are let go
    as they are placed (the lists are emptied)."""
    count = np.empty(sum(rank.size for rank in ranks), np.int32)
    for rank, part in zip(ranks, counts):
        count[rank] = part
    counts.clear()
    ptr = offsets_of(count).astype(index_type(int(count.sum()) + 1))
    del count
    placed = []
    for chunks in fields:
        field = np.empty(int(ptr[-1]), chunks[0].dtype)
        for k, rank in enumerate(ranks):
            field[segment_positions(ptr, rank)] = chunks.pop(0)  # each chunk let go once placed
            _trim_now_and_then(k)
        placed.append(field)
    return ptr, placed
