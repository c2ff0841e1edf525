"""What hiding drawn bonus cards changes, phase by phase.

Each hidden phase is solved as a game tree of growing horizon H (see
`phase_tree`): its sequence-form LP at the leaves' lower and at their upper
bounds brackets the phase's value, lower <= hidden value <= upper, for the
unlimited game. H grows until the bracket is closed to `EXACT` or the tree
would pass the node cap. The bounds kept are the best of every horizon tried
(each is honest), so they never widen as H grows.

Values are P1's (the chance of winning, a draw counting half). The holder is
the player who drew; where both drew, P1 is taken as the holder. Every figure
a holder gains or loses is from the holder's side and, where the phase is not
solved exactly, a lower bound that still holds:
- `gain`: the hidden value minus the open-hands average (the open values
  averaged over the cards the draw may have given);
- `holder_open_loss`: what the holder gives up by playing its open-hands
  strategy anyway, against the best answer to it;
- `naive_exploitability`: what the holder can take from an opponent playing
  its naive strategy (the open strategies mixed by the prior, with no
  inference from play).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

import numpy as np

from rules.charge_spark.cards import Card
from rules.charge_spark.notation import format_position

from ..core.graph import segment_positions
from ..core.sequence_form import Behaviour, SequenceFormError, best_response, solve_tree
from .phase_tree import OpenGame, Phase, PhaseTree, WildBounds
from .starts import PhaseStart

EXACT = 1e-9
"""Bracket width under which a phase's value counts as exact."""
DEFAULT_MAX_NODES = 200_000
DEFAULT_MAX_HORIZON = 40

Warn = Callable[[str], None]


def warn_on_stderr(message: str) -> None:
    """One warning line on stderr, as the command line writes them (the default `Warn`)."""
    print(f"charge-spark: warning: {message}", file=sys.stderr)


@dataclass(frozen=True)
class StartResult:
    position: str
    """The position the drawing turn was played from, in the notation."""
    played: str
    """The cards played in that turn, "P1's / P2's"."""
    holder: str
    cards: dict[str, float]
    """The card the holder may have drawn, with its chance."""
    open_average: float
    lower: float
    upper: float
    horizon: int
    nodes: int
    """Size of the largest tree solved."""
    exact: bool
    gain: float
    holder_open_loss: float
    naive_exploitability: float
    seconds: float
    mirror_of: int | None = None
    """Where these figures were read off the seat-swapped start (its index in the
    list), rather than solved: the game is symmetric, and so are the open strategies."""
    relaxed_lower: float | None = None
    """P2's wild-game bound on P1's value at the start (None: no wild table given)."""
    relaxed_upper: float | None = None
    """P1's wild-game bound on P1's value at the start (None: no wild table given)."""
    certified: bool = True
    """False where the bounds crossed by more than round-off (lower > upper): one of them
    is then not a bound, both are kept as found, and the start is not exact."""

    def gain_bracket(self) -> tuple[float, float]:
        """What hiding is worth to the holder here, (at least, at most): `holder_gain` of this phase."""
        return holder_gain(self.holder, self.open_average, self.lower, self.upper)

    def as_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Summary:
    starts: int
    exact: int
    exact_horizon: int | None
    """The longest horizon an exact start needed."""
    max_gain: float
    mean_gain: float
    max_gain_position: str | None
    seconds: float
    max_width: float = 0.0
    """The widest bracket (upper - lower) over the starts; 0 where every one is exact."""
    uncertified: int = 0
    """Starts whose bounds crossed (`StartResult.certified`)."""

    def as_json(self) -> dict:
        return asdict(self)


def holder_gain(holder: str, open_average: float, lower: float, upper: float) -> tuple[float, float]:
    """The gain of hiding to the holder ("P1", "P2" or "both": P1 holds), (at least, at most): the hidden
    value's bracket [lower, upper] against the open-hands value, from the holder's side (values are P1's)."""
    if holder == "P2":
        return open_average - upper + 0.0, open_average - lower + 0.0  # + 0.0: no -0.0 printed
    return lower - open_average + 0.0, upper - open_average + 0.0


def naive_behaviour(phase_tree: PhaseTree, open_game: OpenGame, seat: int) -> Behaviour:
    """`seat`'s open strategies, at each of its information sets mixed by the chance
    of the worlds it cannot tell apart (no inference from play). Where it can
    tell the position, this is its open strategy there."""
    tree = phase_tree.tree
    reach = tree.chance_reach()
    behaviour: Behaviour = {}
    for i in tree.infosets_of(seat):
        infoset = tree.infosets[i]
        mix = np.zeros(len(infoset.actions))
        index = {label: a for a, label in enumerate(infoset.actions)}
        # P2 decides once per P1 card in each world: its world counts once, by its P1 node.
        worlds = {node if seat == 0 else tree.parent[node]: node for node in infoset.nodes}
        for node in worlds.values():
            for card, p in open_game.strategy(int(phase_tree.node_code[node]), seat).items():
                mix[index[Card(card).label]] += reach[node] * p
        behaviour[i] = mix / mix.sum()
    return behaviour


def solve_start(
    open_game: OpenGame, start: PhaseStart, *, max_horizon: int = DEFAULT_MAX_HORIZON, max_nodes: int = DEFAULT_MAX_NODES,
    wild: WildBounds | None = None, warn: Warn = warn_on_stderr,
) -> StartResult:
    """Bracket one phase's value, growing the horizon while the tree fits the cap;
    `wild`: the wild games' bounds, for the horizon's leaves and the start's own;
    `warn`: told of an LP that ended without an optimum, or of bounds that crossed."""
    return bracket_start(open_game, start, max_horizon=max_horizon, max_nodes=max_nodes, wild=wild, warn=warn)[0]


def bracket_start(
    open_game: OpenGame, start: PhaseStart, *, max_horizon: int = DEFAULT_MAX_HORIZON, max_nodes: int = DEFAULT_MAX_NODES,
    wild: WildBounds | None = None, warn: Warn = warn_on_stderr,
) -> tuple[StartResult, PhaseTree]:
    """`solve_start`, with the last tree solved (the one its figures come from)."""
    began = time.perf_counter()
    where = _where(open_game, start)
    named = f"the hidden phase from {where['position']} | {where['played']}"
    phase = Phase(open_game, list(start.worlds), wild=wild)
    total = sum(world.chance for world in start.worlds)
    open_average = sum(world.chance * open_game.value(world.code) for world in start.worlds) / total
    relaxed: tuple[float | None, float | None] = (None, None)
    if wild is not None:
        bounds = np.array([[world.chance, *wild(world.code, world.known)] for world in start.worlds])
        relaxed = (float(bounds[:, 0] @ bounds[:, 1]) / total, float(bounds[:, 0] @ bounds[:, 2]) / total)
    best = phase.tree(0)
    lower, upper = _root_bounds(best)
    horizon = 0
    for h in range(1, max_horizon + 1):
        if upper - lower <= EXACT:
            break
        candidate = phase.tree(h)
        if len(candidate.tree) > max_nodes:
            break
        try:
            low = solve_tree(candidate.tree, candidate.lower).value
            high = solve_tree(candidate.tree, candidate.upper).value
        except SequenceFormError as error:  # every horizon's bracket is honest: the last one solved stands
            said = " ".join(str(error).split())  # one line, whatever HiGHS's message holds
            warn(f"{named}: the LP of horizon {h} ended without an optimum ({said}); bounds of horizon {horizon} kept")
            break
        best, horizon = candidate, h
        lower, upper = max(lower, low), min(upper, high)
        if candidate.horizon_leaves == 0:
            break  # the whole phase fits: nothing is left to bound
    certified = lower - upper <= EXACT
    if not certified:
        warn(f"{named}: bounds not certified, lower {lower!r} > upper {upper!r} at horizon {horizon}")
    elif lower > upper:  # the two LPs' round-off where the bracket has closed
        lower = upper = (lower + upper) / 2
    holder = 1 if start.holder == "P2" else 0
    gain = holder_gain(start.holder, open_average, lower, upper)[0]
    loss, exploit = _strategy_figures(best, open_game, holder, lower, upper) if len(best.tree) > 1 else (0.0, 0.0)
    result = StartResult(
        **where,
        open_average=open_average,
        lower=lower,
        upper=upper,
        horizon=horizon,
        nodes=len(best.tree),
        exact=certified and upper - lower <= EXACT,
        gain=gain,
        holder_open_loss=loss,
        naive_exploitability=exploit,
        seconds=time.perf_counter() - began,
        relaxed_lower=relaxed[0],
        relaxed_upper=relaxed[1],
        certified=certified,
    )
    return result, best


def mirrored(twin: StartResult, twin_index: int, open_game: OpenGame, start: PhaseStart) -> StartResult:
    """A one-sided start's figures read off its seat-swapped twin's: P1's values are 1 minus
    the twin's, and the holder's figures are the twin holder's. Sound where the open
    table's strategies mirror between the seats (`strategies_mirror`)."""
    return replace(
        twin,
        **_where(open_game, start),
        open_average=1.0 - twin.open_average,
        lower=1.0 - twin.upper,
        upper=1.0 - twin.lower,
        relaxed_lower=None if twin.relaxed_upper is None else 1.0 - twin.relaxed_upper,
        relaxed_upper=None if twin.relaxed_lower is None else 1.0 - twin.relaxed_lower,
        seconds=0.0,
        mirror_of=twin_index,
    )


def _where(open_game: OpenGame, start: PhaseStart) -> dict:
    """The fields of a `StartResult` that say which start it is."""
    return {
        "position": format_position(open_game.decode(start.before), open_game.game.rules),
        "played": f"{start.cards[0].label} / {start.cards[1].label}",
        "holder": start.holder,
        "cards": start.drawn(1 if start.holder == "P2" else 0),
    }


def strategies_mirror(open_game: OpenGame) -> bool:
    """Whether every position's seat-swapped twin is in the table with each seat's
    strategy the other's there (a seat-folded solve makes them so)."""
    t = open_game.table
    states = np.asarray(t.states)
    swapped = open_game.game.swap(states)
    if swapped is None:  # rules with one-seat keys: the seats are not alike
        return False
    twins = np.searchsorted(states, swapped)
    if np.any(twins >= states.size) or np.any(states[np.minimum(twins, states.size - 1)] != swapped):
        return False
    if not np.array_equal(np.diff(t.row_ptr), np.diff(t.col_ptr)[twins]):
        return False
    at = segment_positions(t.col_ptr, twins)
    return bool(np.array_equal(t.row_actions, t.col_actions[at]) and np.allclose(t.row_strategy, t.col_strategy[at], rtol=0, atol=1e-12))


def _root_bounds(phase_tree: PhaseTree) -> tuple[float, float]:
    """The bracket of the horizon-0 tree: the leaves' bounds averaged over the draw."""
    tree = phase_tree.tree
    reach = tree.chance_reach()
    leaves = tree.leaves()
    return float(reach[leaves] @ phase_tree.lower[leaves]), float(reach[leaves] @ phase_tree.upper[leaves])


def _strategy_figures(phase_tree: PhaseTree, open_game: OpenGame, holder: int, lower: float, upper: float) -> tuple[float, float]:
    """(holder_open_loss, naive_exploitability), each a lower bound from the holder's side, at least 0."""
    tree = phase_tree.tree
    other = 1 - holder
    holder_naive = naive_behaviour(phase_tree, open_game, holder)
    other_naive = naive_behaviour(phase_tree, open_game, other)
    if holder == 0:
        # P1's open strategy against P2's best answer is worth at most this (leaves at their highest)...
        holder_payoff = best_response(tree, 1, holder_naive, phase_tree.upper).value
        # ... and P1's best answer to P2's naive strategy at least this (leaves at their lowest).
        exploit_payoff = best_response(tree, 0, other_naive, phase_tree.lower).value
        return max(0.0, lower - holder_payoff), max(0.0, exploit_payoff - upper)
    holder_payoff = best_response(tree, 0, holder_naive, phase_tree.lower).value
    exploit_payoff = best_response(tree, 1, other_naive, phase_tree.upper).value
    return max(0.0, holder_payoff - upper), max(0.0, lower - exploit_payoff)


def summarise(results: list[StartResult], seconds: float) -> Summary:
    gains = [r.gain for r in results]
    top = int(np.argmax(gains)) if gains else None
    exact_horizons = [r.horizon for r in results if r.exact]
    return Summary(
        starts=len(results),
        exact=len(exact_horizons),
        exact_horizon=max(exact_horizons) if exact_horizons else None,
        max_gain=max(gains) if gains else 0.0,
        mean_gain=float(np.mean(gains)) if gains else 0.0,
        max_gain_position=(f"{results[top].position} (played {results[top].played})" if top is not None else None),
        seconds=seconds,
        max_width=max((r.upper - r.lower for r in results), default=0.0),
        uncertified=sum(not r.certified for r in results),
    )
