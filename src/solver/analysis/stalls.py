"""Where the game stalls, and how long it lasts, from one position under a
solved table's strategies.

A stall is a loop of the chain of play (a strongly connected component of
more than one state, or of one state that can follow itself) in which games
spend at least a given share of their expected length. Expected visits are
exact: the chain (up to ~16 million states from the printed rules' start) is
split into components by scipy, and the visits are solved component by
component in topological order, all components whose predecessors are done
at once (Kahn's algorithm over the components, compiled in
`component_visits`), the loops among them in one sparse solve.

`length_and_stalls_at` answers a query. From a stored table the walk through
play can take minutes, so what it finds there is kept in the results cache,
as are the start's figures when its table is solved (`keep_length_and_stalls`)
or reported.
"""

from __future__ import annotations

import math
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rules.charge_spark.config import RuleSet, fingerprint
from rules.charge_spark.game import ChargeSparkGame

from ..core.chain import PlayChain, chain_of_play, play_chain
from ..core.graph import GameGraph, index_type
from ..core.play import FollowedPlay, Play, PlayedChunk, follow_play
from ..core.resources import processes_allowed, usable_cores
from ..core.result import STANDOFF_DEPENDENCE, SolveResult
from ..core.table_file import DamagedTableError
from ..core.table_reader import TableReader
from ..progress_lines import PhaseProgress
from ..storage import TABLE_FORMAT
from ..summary import LENGTH_TURNS, UNENDING, StartSummary, length_beyond
from ..tables import cached_table

# scipy is loaded by the functions that use it: a query that reads a kept entry never pays for it.
if TYPE_CHECKING:
    import scipy.sparse as sp
from .results_cache import ResultsCache

MIN_SHARE = 0.01
"""A loop is a stall when games spend at least this share of their expected length in it."""
EPSILON_PROBABILITY = 1e-3
"""A loop where some strategy plays a card with a probability below this may be an artefact
of which (near-)optimal strategies were picked rather than a reason to keep playing."""
ROUNDING_WEIGHT = 1e-12
"""Strategy weights at or below this are the stage LPs' rounding (seen from 1e-39 up to a few
1e-14), not play; the epsilon-optimal mixing that closes a hide-or-run loop is of the order of
the value solve's nudge, 5e-12 and up."""
UNENDING_TOLERANCE = 1e-12
"""P(the game never ends) at or below this is rounding: the mean length is finite."""

STANDOFF = "standoff"
"""Play may never leave: the loop is closed, or the value there depends on how endless play is scored."""
EPSILON_OPTIMAL = "epsilon-optimal"
"""Some strategy in the loop plays a card with a probability below `EPSILON_PROBABILITY`."""
LOOP = "loop"
"""An ordinary loop of optimal play."""

KEPT_STATES = 1_000_000
"""Play from a position of a stored table that reaches at least this many states
(the printed rules' start: ~15 million, minutes) is followed once: what it gives
is kept in the results cache, and later queries read it there."""


@dataclass(frozen=True)
class Stall:
    """A loop of play that holds a sizeable share of the expected game length."""

    position: int
    """Code of the loop's state with the most expected visits (of a closed loop: where play enters it most)."""
    share: float
    """Expected turns spent in the loop / expected turns in all (of the turns outside closed loops, where
    play enters one). 1.0 for a closed loop that play enters: it never ends."""
    exit_probability: float
    """Per turn in the loop: expected entries into it / expected turns in it. 0 for a closed loop."""
    min_probability: float
    """The smallest positive probability either side's strategy plays at any of the loop's states."""
    kind: str
    """`STANDOFF`, `EPSILON_OPTIMAL` or `LOOP`."""
    states: int

    @property
    def never_ends(self) -> bool:
        """A closed loop: play that enters it never leaves."""
        return self.exit_probability == 0.0


@dataclass(frozen=True)
class LengthFigures:
    """How long a game lasts from a position, in turns (this one included)."""

    mean: float | None
    """None when the game may never end (P(unending) > 0)."""
    median: int | None
    """The first turn by which half of all games have ended; None if not within the distribution's turns."""
    p_beyond_200: float | None
    """P(the game lasts longer than the distribution's turns, `LENGTH_TURNS`), unending play included;
    None where the distribution is not known."""


@dataclass(frozen=True)
class LengthAndStalls:
    length: LengthFigures
    stalls: tuple[Stall, ...]
    states: int
    """States play reaches from the position."""


@dataclass(frozen=True, eq=False)
class StallChain:
    """A chain of play as `stalls` reads it, over any graph."""

    transition: sp.csr_matrix
    """transition[s, s']: the probability of moving from s to s' in one turn."""
    ending: np.ndarray
    """Per state: the probability that the game ends this turn."""
    start: int
    codes: np.ndarray
    """Each state's code."""
    min_probability: np.ndarray
    """Per state: the smallest positive probability either side's strategy plays there."""
    unending_dependence: np.ndarray
    """Per state: at least how far the value moves when endless play is scored as a loss for one side."""


def stall_chain(play: Play, result: SolveResult, chain: PlayChain | None = None) -> StallChain:
    """The chain of `play` (from `play_from` of `result`); `chain`: its `chain_of_play`, if built."""
    chain = chain if chain is not None else chain_of_play(play.graph)
    return StallChain(chain.transition, chain.ending, int(play.start), np.asarray(play.states),
                      smallest_probabilities(result, play.index), unending_dependence(result, play.index))


def stall_chain_of_play(followed: FollowedPlay, result: SolveResult, smallest: np.ndarray | None = None) -> StallChain:
    """`stall_chain` of `followed.play`, each state's smallest probability read
    from the strategies gathered while following play rather than from the
    table again: `smallest` (`smallest_in_chunk`'s, gathered), or of the seats' choices."""
    play, chain = followed.play, followed.chain
    smallest = smallest_chosen(followed.choices) if smallest is None else smallest
    return StallChain(chain.transition, chain.ending, int(play.start), np.asarray(play.states),
                      smallest, unending_dependence(result, play.index))


def smallest_chosen(choices) -> np.ndarray:
    """`smallest_probabilities` from both seats' `SeatChoices` (every positive weight of each state)."""
    return _smallest_of_seats([(np.diff(seat.ptr), seat.weights) for seat in choices])


def smallest_in_chunk(part: PlayedChunk) -> np.ndarray:
    """`smallest_chosen` at a chunk of the states play reaches, from its
    expansion and strategies (`follow_play`'s `per_chunk`): a state's one
    figure, where both seats' choices would take eight times the bytes."""
    return _smallest_of_seats([(part.expansion["row_count"], part.row_weights),
                               (part.expansion["col_count"], part.col_weights)])


def _smallest_of_seats(seats) -> np.ndarray:
    """Per state: the smallest weight above rounding that either seat plays
    there, 1.0 where none; `seats`: each seat's (actions per state, their weights)."""
    smallest = np.full(np.asarray(seats[0][0]).size, np.inf)
    for counts, weights in seats:
        counts, weights = np.asarray(counts, np.int64), np.asarray(weights, np.float64)
        w = np.where(weights > ROUNDING_WEIGHT, weights, np.inf)
        some = counts > 0
        if w.size:
            smallest[some] = np.minimum(smallest[some], np.minimum.reduceat(w, (np.cumsum(counts) - counts)[some]))
    return np.where(np.isfinite(smallest), smallest, 1.0)


def table_stall_chain(graph: GameGraph, result: SolveResult, start: int) -> StallChain:
    """The chain of play over every state of `graph` (the whole graph of `result`'s
    states) under `result`'s strategies, from the state coded `start`."""
    chain = play_chain(graph, np.asarray(result.row_strategy), np.asarray(result.col_strategy))
    index = np.arange(result.num_states)
    return StallChain(chain.transition, chain.ending, result.index_of(start), np.asarray(result.states),
                      smallest_probabilities(result, index), unending_dependence(result, index))


def smallest_probabilities(result: SolveResult, index: np.ndarray, chunk: int = 1 << 20) -> np.ndarray:
    """Per state at `index` (into the table): the smallest positive probability
    either side's strategy plays there (1.0 where neither has a strategy). In
    chunks: the table may be memory-mapped and larger than memory."""
    index = np.asarray(index, np.int64)
    out = np.empty(index.size)
    for lo in range(0, index.size, chunk):
        part = index[lo : lo + chunk]
        out[lo : lo + chunk] = np.minimum(_smallest_positive(result.row_ptr, result.row_strategy, part),
                                          _smallest_positive(result.col_ptr, result.col_strategy, part))
    return out


def _smallest_positive(ptr: np.ndarray, weights: np.ndarray, index: np.ndarray) -> np.ndarray:
    lo, hi = np.asarray(ptr[index], np.int64), np.asarray(ptr[index + 1], np.int64)
    return _smallest_of_seats([(hi - lo, weights[_ranges(lo, hi - lo)])])


def unending_dependence(result: SolveResult, index: np.ndarray, chunk: int = 1 << 20) -> np.ndarray:
    """`result.unending_dependence` at `index`; zeros for a table that does not
    hold it. In chunks, a stored table's pages let go after each: three of its
    figures at every state play reaches are 1.2 GB of the printed rules' table."""
    index = np.asarray(index)
    dependence = np.zeros(index.size)
    if not hasattr(result, "unending_dependence_at"):
        return dependence
    for lo in range(0, index.size, chunk):
        dependence[lo : lo + chunk] = result.unending_dependence_at(index[lo : lo + chunk])
        result.release_mapped_pages()
    return dependence


def stalls(chain: StallChain, min_share: float = MIN_SHARE) -> list[Stall]:
    """Every loop of `chain` that play from its start enters and that holds at
    least `min_share` of the expected length (every closed loop play enters),
    largest share first."""
    from scipy.sparse.csgraph import connected_components

    from .component_visits import ComponentVisits  # loads the compiler

    q = _positive(chain.transition)
    count, labels = connected_components(q, directed=True, connection="strong")
    labels = labels.astype(index_type(count))  # scipy's int32 kept: int64 would double every per-edge lookup
    visits = ComponentVisits(q, np.asarray(chain.ending, np.float64), int(chain.start), labels, count)
    v, entered = visits.states, visits.entries
    size = np.bincount(labels, minlength=count)
    loops = (size > 1) | visits.looped
    per_loop = np.bincount(labels, weights=v, minlength=count)
    closed = visits.closed & (entered > 0)
    total = float(v.sum())
    share = np.where(closed, 1.0, per_loop / total if total > 0 else 0.0)
    listed = np.flatnonzero(loops & (entered > 0) & (closed | (share >= min_share)))
    if listed.size == 0:
        return []
    members = np.flatnonzero(np.isin(labels, listed))
    # Within each loop, the most visited state first (for a closed loop, where play enters it most).
    score = np.where(visits.closed[labels[members]], visits.inflow[members], v[members])
    members = members[np.lexsort((-score, labels[members]))]
    first = np.flatnonzero(np.r_[True, labels[members][1:] != labels[members][:-1]])
    loop = labels[members[first]]
    smallest = np.minimum.reduceat(np.asarray(chain.min_probability, np.float64)[members], first)
    dependence = np.maximum.reduceat(np.asarray(chain.unending_dependence, np.float64)[members], first)
    found = []
    for k, c in enumerate(loop):
        standoff = bool(closed[c]) or dependence[k] > STANDOFF_DEPENDENCE
        kind = STANDOFF if standoff else EPSILON_OPTIMAL if smallest[k] < EPSILON_PROBABILITY else LOOP
        exit_probability = 0.0 if closed[c] else float(entered[c] / per_loop[c])
        found.append(Stall(int(chain.codes[members[first[k]]]), float(share[c]), exit_probability,
                           float(smallest[k]), kind, int(size[c])))
    return sorted(found, key=lambda s: (-s.share, s.position))


def _positive(transition: sp.spmatrix) -> sp.csr_matrix:
    """`transition` as CSR with its zero entries dropped (a copy only if it holds any)."""
    import scipy.sparse as sp

    q = sp.csr_matrix(transition)
    if np.any(q.data <= 0):
        q = q.copy()
        q.data[q.data < 0] = 0.0
        q.eliminate_zeros()
    return q


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The indices starts[k] .. starts[k] + counts[k] - 1 for every k, joined."""
    starts, counts = np.asarray(starts, np.int64), np.asarray(counts, np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    offsets = np.cumsum(counts) - counts
    return np.repeat(starts - offsets, counts) + np.arange(total, dtype=np.int64)


def length_pmf(
    chain: StallChain, turns: int = LENGTH_TURNS, workers: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """pmf[t - 1] = P(the game ends at turn t), t = 1..`turns`, exact (as
    `absorption.length_distribution`): each state's chance of ending exactly t
    turns on, carried back one turn at a time from the chance of ending this
    turn (pmf[t - 1] = (P^(t-1) ending)[start]), read at the start.

    A turn is one product of the chain's rows with the last turn's chances,
    its rows cut into `workers` blocks (default: every usable core) computed
    side by side: scipy lets go of the interpreter's lock while it multiplies,
    and each row is summed alone, so the figures are the same whatever the
    number of blocks. (Pushing the start's probabilities forward instead
    scatters into the whole next vector, which no cut by rows shares out: on
    the printed rules' chain, 16.2 million states, that took 47-50 s on one
    core, this 33-35 s on two and 52-57 s on one.) `progress(1)` after each turn."""
    import scipy.sparse as sp

    transition = sp.csr_matrix(chain.transition)  # the chain's own arrays where it is CSR already: no copy
    blocks = _row_blocks(transition, workers or usable_cores())
    chances = np.ascontiguousarray(chain.ending, np.float64)
    pmf = np.zeros(turns)
    with ThreadPoolExecutor(len(blocks)) as pool:  # ended (its threads joined) before anything forks again
        for t in range(turns):
            pmf[t] = chances[chain.start]
            if t + 1 < turns:
                chances = np.concatenate(list(pool.map(lambda block: block @ chances, blocks)))  # noqa: B023
            if progress is not None:
                progress(1)
    return pmf


def _row_blocks(transition: sp.csr_matrix, count: int) -> list[sp.csr_matrix]:
    """`transition` as `count` blocks of consecutive rows with about as many
    entries each, sharing its arrays (only each block's row offsets are new)."""
    import scipy.sparse as sp

    n = transition.shape[0]
    ptr = transition.indptr
    cuts = np.searchsorted(ptr, np.linspace(0, ptr[-1], max(1, count) + 1)[1:-1]) if n else np.zeros(0, np.int64)
    bounds = np.unique(np.concatenate([[0], np.clip(cuts, 0, n), [n]])).astype(np.int64)
    blocks = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        first, last = int(ptr[lo]), int(ptr[hi])
        blocks.append(sp.csr_matrix(
            (transition.data[first:last], transition.indices[first:last], ptr[lo : hi + 1] - first),
            shape=(int(hi - lo), n), copy=False))
    return blocks or [transition]


def median_length(pmf: np.ndarray) -> int | None:
    """The first turn by which half of all games have ended; None if not within `pmf`'s turns."""
    reached = np.flatnonzero(np.cumsum(pmf) >= 0.5)
    return int(reached[0]) + 1 if reached.size else None


def mean_length(expected_length: float, unending: float) -> float | None:
    """The mean length: `expected_length` (given that the game ends) where the
    game surely ends; None where it may never end."""
    return expected_length if unending <= UNENDING_TOLERANCE and math.isfinite(expected_length) else None


def length_figures(pmf: np.ndarray, expected_length: float, unending: float) -> LengthFigures:
    """Mean, median and tail of the length, from its distribution `pmf` (see `mean_length`)."""
    return LengthFigures(mean_length(expected_length, unending), median_length(pmf), length_beyond(pmf))


def summary_length_figures(summary: StartSummary) -> LengthFigures:
    """`length_figures` of a start summary (with its distribution)."""
    return length_figures(summary.length_pmf, summary.expected_length, summary.outcomes[UNENDING])


def length_and_stalls(
    play: Play, result: SolveResult, chain: PlayChain | None = None, turns: int = LENGTH_TURNS,
    min_share: float = MIN_SHARE,
) -> LengthAndStalls:
    """The length figures and the stalls of `play` (`play_from` of `result`) from its start."""
    stall = stall_chain(play, result, chain)
    i = int(play.index[play.start])
    figures = length_figures(length_pmf(stall, turns), result.expected_length(i),
                             float(result.unending_probability[i]))
    return LengthAndStalls(figures, tuple(stalls(stall, min_share)), int(play.states.size))


def followed_length_and_stalls(
    game: ChargeSparkGame, result: SolveResult, code: int, workers: int | None = None, shown: bool = False,
) -> LengthAndStalls:
    """`length_and_stalls` from the state coded `code`, play followed once
    (`follow_play`): each reached state expanded once and its strategies read
    once, where `play_from` expands it twice and builds a labelled graph.
    Measured at the printed rules (20.7 million states reached): 5.4 GB at
    the peak, from 10.5 (docs/performance.md). `workers`: how many processes
    play is followed on, and threads its length distribution is computed on
    beside the stalls (`length_pmf_and_stalls`; default: every core this
    process may use). `shown`: a progress bar for each of the two (a line
    every 30 s off a terminal): at the printed rules about a minute and half a minute."""
    with PhaseProgress("following play from the start", None, unit=" states", shown=shown) as bar:
        followed = follow_play(game, result, code, smallest_in_chunk, keep_choices=False,
                               workers=usable_cores() if workers is None else workers, progress=bar.advance)
    # Every state's smallest probability is positive: gathered for all of them, in play's order.
    stall = stall_chain_of_play(followed, result, followed.gathered)
    play = followed.play
    i = int(play.index[play.start])
    with PhaseProgress("the length distribution", LENGTH_TURNS, unit=" turns", shown=shown) as bar:
        pmf, found = length_pmf_and_stalls(stall, LENGTH_TURNS, usable_cores() if workers is None else workers,
                                           progress=bar.advance)
    figures = length_figures(pmf, result.expected_length(i), float(result.unending_probability[i]))
    return LengthAndStalls(figures, tuple(found), int(play.states.size))


_STALL_CHAIN: StallChain | None = None  # what the forked process of `length_pmf_and_stalls` inherits
STALLS_APART_STATES = 1 << 20
"""A chain of play this large has its stalls found on a process of their own,
beside its length distribution: on the printed rules' chain (16.2 million
states) both took 45.8-50.4 s so, 53.5-61.0 s one after the other (the
distribution, bound by memory, is slowed by the stalls beside it)."""


def length_pmf_and_stalls(
    chain: StallChain, turns: int = LENGTH_TURNS, workers: int = 1, min_share: float = MIN_SHARE,
    progress: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, list[Stall]]:
    """`length_pmf` and `stalls` of `chain`. With `workers` > 1 the stalls
    are found on a forked process (which inherits the chain: nothing large is
    pickled) while the distribution is computed here on `workers` threads,
    where the chain has `STALLS_APART_STATES` or more: the stalls run on one
    core. The same figures either way."""
    global _STALL_CHAIN
    if processes_allowed(workers) < 2 or chain.transition.shape[0] < STALLS_APART_STATES:
        return length_pmf(chain, turns, workers, progress), stalls(chain, min_share)
    _STALL_CHAIN = chain
    try:
        # Forked here, before the distribution's threads start: a fork copies no running thread.
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork")) as pool:
            found = pool.submit(_stalls_of_inherited_chain, min_share)
            pmf = length_pmf(chain, turns, workers, progress)
            return pmf, found.result()
    finally:
        _STALL_CHAIN = None


def _stalls_of_inherited_chain(min_share: float) -> list[Stall]:
    assert _STALL_CHAIN is not None  # set before the fork
    return stalls(_STALL_CHAIN, min_share)


def length_and_stalls_at(
    rules: RuleSet, code: int, result: SolveResult, cache_dir: Path, table: Path | None, edge: bool,
    warn: Callable[[str], None] | None = None, log: Callable[[str], None] = lambda message: None,
    follow_play: bool = True, shown: bool = False,
) -> LengthAndStalls | None:
    """The length figures and stalls from the state coded `code`, where `result`
    answered it: a whole solve of play from there (`table` None, `edge` False);
    the stored table at `table` (`result` then holds only a part of it): what
    the results cache under `cache_dir` keeps for the position, else play
    followed through the whole table, read memory-mapped; None for a solve
    that stopped at a stored table's edge (play goes on in that table, under
    strategies this result does not hold). A damaged table is reported through
    `warn`; `log` hears when a long walk begins. Without `follow_play`, None
    for a stored table of `KEPT_STATES` or more that does not keep the
    position's figures: opening it whole verifies every block (11-15 s at
    the printed rules on two cores), where the rest of a query reads a few.
    `shown`: progress bars while play is followed (`followed_length_and_stalls`)."""
    if edge:
        return None
    if table is None:
        return followed_length_and_stalls(ChargeSparkGame(rules), result, code, shown=shown)
    key = fingerprint(rules)
    results = ResultsCache(cache_dir, key)
    entry = results.get(play_key(code))
    if entry is not None:
        try:
            return length_and_stalls_from(entry)
        except (KeyError, TypeError, ValueError):
            pass  # kept before a field was added: followed again
    if not follow_play and stored_states(table, key) >= KEPT_STATES:
        return None
    whole = cached_table(table, key, warn, mapped=True)
    if whole is None:
        return None
    if whole.num_states >= KEPT_STATES:
        log(f"following play from this position through the stored table ({whole.num_states:,} states);"
            " what it gives is kept in the results cache if play reaches many of them")
    found = followed_length_and_stalls(ChargeSparkGame(rules), whole, code, shown=shown)
    if found.states >= KEPT_STATES:
        results.put_all({play_key(code): length_and_stalls_entry(found)})
    return found


def stored_states(table: Path, key: str) -> int:
    """How many states the stored table holds (its header alone is read); 0 if it cannot be opened."""
    try:
        return TableReader(table, key, TABLE_FORMAT).num_states
    except (OSError, DamagedTableError):
        return 0


def keep_length_and_stalls(
    rules: RuleSet, code: int, result: SolveResult, cache_dir: Path, shown: bool = False,
) -> LengthAndStalls:
    """`length_and_stalls` from the state coded `code` of a table just solved
    (whole), kept in the results cache: a query of that position on the stored
    table then reads it, rather than following play through the table again
    (and loading the compiler to do so). `shown`: progress bars
    (`followed_length_and_stalls`)."""
    found = followed_length_and_stalls(ChargeSparkGame(rules), result, code, shown=shown)
    ResultsCache(cache_dir, fingerprint(rules)).put_all({play_key(code): length_and_stalls_entry(found)})
    return found


def play_key(code: int) -> str:
    """The results cache's key of the length and stalls from the state coded `code`."""
    return f"play from: {int(code)}"


def length_and_stalls_entry(found: LengthAndStalls) -> dict:
    return {"length": asdict(found.length), "stalls": [asdict(s) for s in found.stalls], "states": found.states}


def length_and_stalls_from(entry: dict) -> LengthAndStalls:
    return LengthAndStalls(LengthFigures(**entry["length"]), tuple(Stall(**s) for s in entry["stalls"]),
                           int(entry["states"]))
