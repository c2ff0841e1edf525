"""The explicit game graph: every reachable state, its stage game, its transitions.

All arrays, no Python object per state. For state i:

- P1's legal actions are `row_actions[row_ptr[i]:row_ptr[i+1]]` (m_i of them),
  P2's are `col_actions[col_ptr[i]:col_ptr[i+1]]` (n_i of them);
- its stage-game cells are `cell_ptr[i] .. cell_ptr[i+1]` (m_i * n_i of them),
  row-major: cell `cell_ptr[i] + r * n_i + c` is P1's r-th action against
  P2's c-th;
- cell k leads to outcomes `out_ptr[k] .. out_ptr[k+1]`: with probability
  `out_prob[j]` to state index `out_next[j]` when that is >= 0, or to terminal
  outcome `t = -1 - out_next[j]` (payoff `terminal_payoff[t]` to P1) when it is
  negative.

Play that never ends pays `unending_payoff` to P1. P1 maximises, P2 minimises.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .protocol import StochasticGame


@dataclass(frozen=True, eq=False)
class GameGraph:
    states: np.ndarray  # int64 state codes, sorted ascending
    row_ptr: np.ndarray  # int64, n + 1
    row_actions: np.ndarray  # int16 action ids
    col_ptr: np.ndarray  # int64, n + 1
    col_actions: np.ndarray  # int16 action ids
    cell_ptr: np.ndarray  # int64, n + 1
    out_ptr: np.ndarray  # int64, cells + 1
    out_next: np.ndarray  # int64
    out_prob: np.ndarray  # float64
    terminal_payoff: np.ndarray  # float64, one per terminal outcome
    terminal_labels: tuple[str, ...]
    unending_payoff: float
    action_labels: tuple[str, ...]

    @property
    def num_states(self) -> int:
        return int(self.states.shape[0])

    @property
    def num_cells(self) -> int:
        return int(self.cell_ptr[-1])

    def kernel_arrays(self) -> tuple:
        """(row_ptr, col_ptr, cell_ptr, out_ptr, out_next, out_prob, terminal_payoff),
        contiguous and typed as the compiled kernels expect."""
        return (
            np.ascontiguousarray(self.row_ptr, np.int64),
            np.ascontiguousarray(self.col_ptr, np.int64),
            np.ascontiguousarray(self.cell_ptr, np.int64),
            np.ascontiguousarray(self.out_ptr, np.int64),
            np.ascontiguousarray(self.out_next, np.int64),
            np.ascontiguousarray(self.out_prob, np.float64),
            np.ascontiguousarray(self.terminal_payoff, np.float64),
        )

    def index_of(self, code: int) -> int:
        """Index of the state with encoding `code`; KeyError if it is not in the graph."""
        i = int(np.searchsorted(self.states, code))
        if i >= self.num_states or self.states[i] != code:
            raise KeyError(code)
        return i

    def shape(self, i: int) -> tuple[int, int]:
        """(P1's legal actions, P2's legal actions) at state i."""
        return (
            int(self.row_ptr[i + 1] - self.row_ptr[i]),
            int(self.col_ptr[i + 1] - self.col_ptr[i]),
        )

    def stage_matrix(self, i: int, values: np.ndarray) -> np.ndarray:
        """Stage game at state i: expected continuation payoff of each action pair."""
        m, n = self.shape(i)
        first = int(self.cell_ptr[i])
        matrix = np.empty(m * n)
        for k in range(m * n):
            lo, hi = self.out_ptr[first + k], self.out_ptr[first + k + 1]
            nxt = self.out_next[lo:hi]
            prob = self.out_prob[lo:hi]
            cont = np.where(nxt >= 0, values[np.maximum(nxt, 0)], self.terminal_payoff[-1 - np.minimum(nxt, -1)])
            matrix[k] = float(prob @ cont)
        return matrix.reshape(m, n)


def offsets_of(counts: np.ndarray) -> np.ndarray:
    """Start offsets of consecutive segments of these lengths, and the total at the end."""
    ptr = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr


def index_type(size: int) -> np.dtype[np.signedinteger]:
    """The integer type of indices below `size`: int32 where it fits, half the bytes of int64."""
    return np.dtype(np.int32 if size < 2**31 else np.int64)


def segment_positions(ptr: np.ndarray, states: np.ndarray) -> np.ndarray:
    """The indices ptr[s]:ptr[s + 1] of each s in `states`, joined in order."""
    first = np.asarray(ptr[states])  # read once: `ptr` may be a mapped table's, read at random
    return positions_in_segments(first, np.asarray(ptr[states + 1]) - first)


def positions_in_segments(first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The indices first[k]:first[k] + counts[k] for each k, joined in order."""
    return np.repeat(first - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))


def reachable_states(
    game: StochasticGame, roots: np.ndarray, progress: Callable[[int], None] | None = None, max_states: int | None = None, chunk: int = 1 << 16
) -> np.ndarray:
    """Sorted codes of every state reachable from `roots` (breadth first, batched).

    `progress(count)` is called after each layer with the number found so far.
    Raises `GraphTooLargeError` past `max_states`.
    """
    seen = distinct_sorted(np.asarray(roots, dtype=np.int64))
    frontier = seen
    while frontier.size:
        # In chunks: a whole layer's expansion (cells x outcomes) would dwarf the states.
        successors = merged_distinct([
            _successor_codes(game, frontier[lo : lo + chunk]) for lo in range(0, frontier.size, chunk)
        ])
        frontier = successors[~sorted_contains(seen, successors)]
        if frontier.size:
            seen = merged_distinct([seen, frontier])
        if progress is not None:
            progress(seen.size)
        if max_states is not None and seen.size > max_states:
            raise GraphTooLargeError(
                f"more than {max_states:,} reachable states (limit; see --max-states)"
            )
    return seen


def _successor_codes(game, codes: np.ndarray) -> np.ndarray:
    nxt = game.expand(codes).out_next
    return distinct_sorted(nxt[nxt >= 0])


class GraphTooLargeError(RuntimeError):
    """The reachable state space exceeds the allowed size."""


def distinct_sorted(codes: np.ndarray) -> np.ndarray:
    """The distinct values of `codes`, in order: `np.unique` by sorting.

    numpy 2.3+ finds unique integers with a hash table, which on arrays of
    mostly distinct codes (ours) is far slower than sorting (docs/performance.md)."""
    return _without_repeats(np.sort(np.asarray(codes).ravel()))


def merged_distinct(parts: list[np.ndarray]) -> np.ndarray:
    """The distinct values of `parts`, each already sorted and distinct, in
    order. A stable sort finds the sorted runs and merges them (linear for
    two), where `np.union1d` would sort everything again."""
    if not parts:
        return np.zeros(0, np.int64)
    return _without_repeats(np.sort(np.concatenate(parts), kind="stable") if len(parts) > 1 else parts[0])


def _without_repeats(ordered: np.ndarray) -> np.ndarray:
    if ordered.size < 2:
        return ordered
    keep = np.empty(ordered.size, np.bool_)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def sorted_contains(haystack: np.ndarray, needles: np.ndarray) -> np.ndarray:
    at = np.searchsorted(haystack, needles)
    at = np.minimum(at, haystack.size - 1)
    return haystack[at] == needles


EXPANSION_FIELDS = ("row_count", "row_actions", "col_count", "col_actions", "out_count", "out_next", "out_prob")
"""The arrays of a game's `Expansion`."""


def expansion_of(game: StochasticGame, states: np.ndarray, chunk: int = 1 << 16) -> dict[str, np.ndarray]:
    """`game.expand` of `states`, in chunks, joined: one array per field."""
    parts = [game.expand(states[lo : lo + chunk]) for lo in range(0, states.size, chunk)]
    return {name: np.concatenate([np.asarray(getattr(p, name)) for p in parts]) for name in EXPANSION_FIELDS}



def graph_of(game: StochasticGame, states: np.ndarray, expansion: dict[str, np.ndarray], out_next: np.ndarray) -> GameGraph:
    """The `GameGraph` of `states` from their expansion, successors already renumbered in `out_next`."""
    row_count, col_count = expansion["row_count"], expansion["col_count"]
    return GameGraph(
        states=states,
        row_ptr=offsets_of(row_count),
        row_actions=expansion["row_actions"].astype(np.int16),
        col_ptr=offsets_of(col_count),
        col_actions=expansion["col_actions"].astype(np.int16),
        cell_ptr=offsets_of(row_count * col_count),
        out_ptr=offsets_of(expansion["out_count"]),
        out_next=out_next,
        out_prob=expansion["out_prob"].astype(np.float64),
        terminal_payoff=np.asarray(game.terminal_payoff, dtype=np.float64),
        terminal_labels=tuple(game.terminal_labels),
        unending_payoff=float(game.unending_payoff),
        action_labels=tuple(game.action_labels),
    )


def build_graph(game: StochasticGame, states: np.ndarray, chunk: int = 1 << 16) -> GameGraph:
    """The `GameGraph` over `states` (sorted, closed under transitions)."""
    expansion = expansion_of(game, states, chunk)
    out_next = expansion["out_next"].astype(np.int64)
    live = out_next >= 0
    index = np.searchsorted(states, out_next[live])
    if index.size and (index.max() >= states.size or np.any(states[index] != out_next[live])):
        raise ValueError("states are not closed under transitions")
    out_next[live] = index
    return graph_of(game, states, expansion, out_next)
