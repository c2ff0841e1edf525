"""Where play stalls: loops found, their shares of the expected length (checked
against expected visits worked out by hand and by a dense inverse), their
classes, and the length figures at a start."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import solver.analysis.component_visits as component_visits
import solver.analysis.stalls as stalls_module
from dict_game import LOSS, WIN, DictGame
from solver.analysis.stalls import (
    EPSILON_OPTIMAL,
    LOOP,
    STANDOFF,
    LengthFigures,
    Stall,
    StallChain,
    length_and_stalls,
    length_figures,
    length_pmf,
    stall_chain,
    stalls,
    table_stall_chain,
)
from solver.core.graph import build_graph
from solver.core.play import play_from
from solver.core.solve import solve_from


def played(table, actions=("move",), roots=(0,)):
    """The solved game of `table` (from `roots`) and its play from the first root."""
    game = DictGame(table, list(actions))
    result = solve_from(game, list(roots), show_progress=False)
    return game, result, play_from(game, result, roots[0])


def test_a_standoff_no_card_can_end_never_ends():
    # Move against Move cancels, and so does every other pair: play stays at state 1 for ever.
    cancel = [(1.0, 1)]
    game, result, play = played({
        0: {(0, 0): [(1.0, 1)]},
        1: {(0, 0): cancel, (0, 1): cancel, (1, 0): cancel, (1, 1): cancel},
    }, ["move", "charge"])
    found = length_and_stalls(play, result)
    assert found.stalls == (Stall(1, 1.0, 0.0, found.stalls[0].min_probability, STANDOFF, 1),)
    assert found.stalls[0].never_ends
    assert result.unending_probability[result.index_of(0)] == pytest.approx(1.0)
    assert found.length.mean is None and found.length.median is None and found.length.p_beyond_200 == 1.0


def test_a_loop_left_half_the_time_holds_two_thirds_of_the_game():
    # 0 -> 1; 1 and 2 pass play to each other half the time and end it otherwise.
    game, result, play = played({
        0: {(0, 0): [(1.0, 1)]},
        1: {(0, 0): [(0.5, 2), (0.5, WIN)]},
        2: {(0, 0): [(0.5, 1), (0.5, LOSS)]},
    })
    # Visits by hand: 0 once; 1: v1 = 1 + v1 / 4, so 4/3; 2: v1 / 2 = 2/3. Three turns in all, 2 in the loop,
    # entered once.
    found = length_and_stalls(play, result)
    assert found.stalls == (Stall(1, pytest.approx(2 / 3), pytest.approx(0.5), 1.0, LOOP, 2),)
    assert found.length.mean == pytest.approx(3.0)
    assert found.length.median == 2  # half of all games end at turn 2
    assert found.length.p_beyond_200 == pytest.approx(0.0, abs=1e-12)


def test_a_loop_below_one_percent_of_the_length_is_not_a_stall():
    # 200 turns in a line (0 .. 199, then P1 wins); at 0, one game in a hundred
    # detours through a state that repeats itself half the time.
    line = {s: {(0, 0): [(1.0, s + 1)]} for s in range(1, 199)}
    game, result, play = played({
        0: {(0, 0): [(0.99, 1), (0.01, 500)]}, **line, 199: {(0, 0): [(1.0, WIN)]},
        500: {(0, 0): [(0.5, 500), (0.5, 1)]},
    })
    found = length_and_stalls(play, result)
    assert found.stalls == ()
    # The detour costs 0.01 x 2 turns of the 200.02 expected.
    assert found.length.mean == pytest.approx(200.02)
    assert found.length.median == 200 and found.length.p_beyond_200 == pytest.approx(0.01)
    (detour,) = stalls(stall_chain(play, result), min_share=0.0)
    assert detour == Stall(500, pytest.approx(0.02 / 200.02), pytest.approx(0.5), 1.0, LOOP, 1)


def test_the_chain_of_a_whole_graph_finds_the_same_stalls_as_play_from_the_start():
    game, result, play = played({
        0: {(0, 0): [(0.5, 1), (0.5, 3)]},
        1: {(0, 0): [(0.5, 2), (0.5, WIN)]},
        2: {(0, 0): [(0.5, 1), (0.5, LOSS)]},
        3: {(0, 0): [(0.9, 3), (0.1, WIN)]},
        7: {(0, 0): [(0.5, 7), (0.5, WIN)]},  # never reached from 0: in the whole graph only
    }, roots=(0, 7))
    whole = table_stall_chain(build_graph(game, result.states), result, 0)
    assert whole.codes.size == play.states.size + 1
    assert stalls(whole, 0.0) == stalls(stall_chain(play, result), 0.0)
    np.testing.assert_allclose(length_pmf(whole, 50), length_pmf(stall_chain(play, result), 50), atol=1e-15)


def test_the_length_distribution_is_the_same_on_any_number_of_row_blocks_and_the_exact_one():
    # Rows cut into blocks multiplied side by side: each row is summed alone, so the figures
    # match to the last bit whatever the cut, and the exact distribution (the state
    # probabilities pushed turn by turn) to rounding.
    rng = np.random.default_rng(7)
    n = 300
    q = sp.random(n, n, density=0.02, random_state=rng, format="csr")
    q = sp.csr_matrix(q.multiply(1.0 / np.maximum(np.asarray(q.sum(axis=1)).ravel(), 1e-300)[:, None]) * 0.9)
    ending = 1.0 - np.asarray(q.sum(axis=1)).ravel()
    chain = chain_of(q, ending)
    one = length_pmf(chain, 60, workers=1)
    for blocks in (2, 3, 7):
        assert np.array_equal(length_pmf(chain, 60, workers=blocks), one)
    mass, pushed = np.zeros(n), np.zeros(60)
    mass[0] = 1.0
    for t in range(60):
        pushed[t] = mass @ ending
        mass = q.T @ mass
    np.testing.assert_allclose(one, pushed, atol=1e-15)
    assert one.sum() + mass.sum() == pytest.approx(1.0)  # every game has ended or is still going


def chain_of(q, ending, start=0, min_probability=None, dependence=None):
    n = q.shape[0]
    return StallChain(sp.csr_matrix(q), np.asarray(ending, float), start, np.arange(100, 100 + n),
                      np.ones(n) if min_probability is None else np.asarray(min_probability, float),
                      np.zeros(n) if dependence is None else np.asarray(dependence, float))


def test_classes_standoff_epsilon_optimal_and_loop():
    # Three self-looping states, each entered from 0 with probability 1/3 and left half the time.
    q = np.zeros((4, 4))
    q[0, 1:] = 1 / 3
    q[[1, 2, 3], [1, 2, 3]] = 0.5
    ending = [0.0, 0.5, 0.5, 0.5]
    found = stalls(chain_of(q, ending, min_probability=[1.0, 1.0, 1e-4, 1e-4], dependence=[0, 0, 0, 1e-6]))
    assert {s.position: s.kind for s in found} == {101: LOOP, 102: EPSILON_OPTIMAL, 103: STANDOFF}
    assert all(s.share == pytest.approx(2 / 3 / 3) and s.exit_probability == pytest.approx(0.5) for s in found)


def test_a_closed_loop_play_may_enter_never_ends_and_the_others_share_the_rest():
    # From 0: a closed two-state loop with probability 1/4, else a loop of 2 left half the time.
    q = np.zeros((5, 5))
    q[0, 1], q[0, 3] = 0.25, 0.75
    q[1, 2] = q[2, 1] = 1.0
    q[3, 4] = q[4, 3] = 0.5
    found = stalls(chain_of(q, [0, 0, 0, 0.5, 0.5]))
    assert [(s.position, s.kind, s.share, s.exit_probability, s.states) for s in found] == [
        (101, STANDOFF, 1.0, 0.0, 2), (103, LOOP, pytest.approx(1.5 / 2.5), pytest.approx(0.5), 2)]
    assert found[0].never_ends and not found[1].never_ends


@pytest.mark.parametrize("direct", [10**9, 3], ids=["direct", "iterative"])
def test_shares_and_exits_agree_with_a_dense_inverse(monkeypatch, direct):
    monkeypatch.setattr(component_visits, "DIRECT_STATES", direct)
    rng = np.random.default_rng(21)
    # Blocks of 1 to 6 states in a row, each strongly connected (a cycle), edges forward between blocks.
    sizes = rng.integers(1, 7, size=20)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    n = int(bounds[-1])
    q = np.zeros((n, n))
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        for s in range(lo, hi):
            q[s, lo + (s - lo + 1) % (hi - lo)] = rng.uniform(0.2, 1.0) if hi - lo > 1 or rng.random() < 0.5 else 0
            ahead = rng.integers(hi, n + 3, size=2)  # past n: the game ends
            for t in ahead[ahead < n]:
                q[s, t] += rng.uniform(0.0, 1.0)
    q /= (q.sum(axis=1, keepdims=True) + rng.uniform(0.05, 0.5, size=(n, 1)))
    ending = 1.0 - q.sum(axis=1)
    visits = np.linalg.inv(np.eye(n) - q)[0]
    found = stalls(chain_of(q, ending), min_share=0.0)
    loops = [(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:]) if (hi - lo > 1 or q[lo, lo] > 0) and visits[lo] > 0]
    assert sorted(s.position - 100 for s in found) == sorted(lo + int(np.argmax(visits[lo:hi])) for lo, hi in loops)
    for s in found:
        lo, hi = next((lo, hi) for lo, hi in loops if lo <= s.position - 100 < hi)
        inside = np.zeros(n, bool)
        inside[lo:hi] = True
        entries = visits[~inside] @ q[np.ix_(~inside, inside)].sum(axis=1) + (lo == 0)
        assert s.share == pytest.approx(visits[lo:hi].sum() / visits.sum(), rel=1e-9)
        assert s.exit_probability == pytest.approx(entries / visits[lo:hi].sum(), rel=1e-9)
        assert s.states == hi - lo
    assert [s.share for s in found] == sorted((s.share for s in found), reverse=True)


def test_length_figures_give_no_mean_when_the_game_may_never_end():
    pmf = np.array([0.2, 0.2, 0.2])
    assert length_figures(pmf, 2.0, 0.0) == LengthFigures(2.0, 3, pytest.approx(0.4))
    assert length_figures(pmf, 2.0, 0.1).mean is None
    assert length_figures(np.array([0.2, 0.2]), float("nan"), 0.6) == LengthFigures(
        None, None, pytest.approx(0.6))



def _close(a, b) -> bool:
    return a is None and b is None or a is not None and b is not None and abs(a - b) <= 1e-9 * max(1.0, abs(b))


def test_play_followed_once_gives_the_same_length_and_stalls_as_play_from():
    """`followed_length_and_stalls` (each reached state expanded once) against
    `length_and_stalls` of `play_from`, from the start and from a later position."""
    from rules.charge_spark.config import RuleSet, apply_overrides
    from rules.charge_spark.game import ChargeSparkGame
    from rules.charge_spark.state import initial_position
    from solver.analysis.stalls import followed_length_and_stalls

    rules = apply_overrides(RuleSet(), ["board=S*M", "health=1", "battery_tiles=2", "disc_tiles=3"])
    game = ChargeSparkGame(rules)
    start = game.encode(initial_position(rules))
    result = solve_from(game, [start], show_progress=False)
    later = int(result.states[result.num_states // 2])
    for code in (start, later):
        old = length_and_stalls(play_from(game, result, code), result)
        new = followed_length_and_stalls(game, result, code)
        assert new.states == old.states > 0
        assert all(_close(getattr(new.length, f), getattr(old.length, f)) for f in ("mean", "median", "p_beyond_200"))
        assert [(s.position, s.kind) for s in new.stalls] == [(s.position, s.kind) for s in old.stalls]
        assert all(_close(a.share, b.share) and _close(a.min_probability, b.min_probability)
                   for a, b in zip(new.stalls, old.stalls))


def test_play_is_followed_to_its_chain_with_no_graph_built(monkeypatch):
    """`followed_length_and_stalls` builds play's chain straight from the
    edges it keeps: a graph beside the chain was a second copy of every edge of play."""
    from graph_lifetime import watch_play_graphs
    from rules.charge_spark.config import RuleSet, apply_overrides
    from rules.charge_spark.game import ChargeSparkGame
    from rules.charge_spark.state import initial_position

    built, propagated = watch_play_graphs(monkeypatch, stalls_module, "length_pmf")
    rules = apply_overrides(RuleSet(), ["board=S*M", "health=1", "battery_tiles=2", "disc_tiles=3"])
    game = ChargeSparkGame(rules)
    start = game.encode(initial_position(rules))
    found = stalls_module.followed_length_and_stalls(game, solve_from(game, [start], show_progress=False), start)
    assert found.states > 0 and propagated == [1] and built == []


def _small_followed_chain(workers: int, chunk: int):
    from rules.charge_spark.config import RuleSet, apply_overrides
    from rules.charge_spark.game import ChargeSparkGame
    from rules.charge_spark.state import initial_position
    from solver.core.play import follow_play

    rules = apply_overrides(RuleSet(), ["board=S*M", "health=1", "battery_tiles=2", "disc_tiles=3"])
    game = ChargeSparkGame(rules)
    start = game.encode(initial_position(rules))
    result = solve_from(game, [start], show_progress=False)
    followed = follow_play(game, result, start, stalls_module.smallest_in_chunk, keep_choices=False, chunk=chunk,
                           workers=workers)
    return stalls_module.stall_chain_of_play(followed, result, followed.gathered)


def test_the_stalls_found_beside_the_distribution_are_those_found_after_it(monkeypatch):
    monkeypatch.setattr(stalls_module, "STALLS_APART_STATES", 0)  # a small chain's stalls on a process of their own
    chain = _small_followed_chain(workers=1, chunk=1 << 14)
    pmf, found = stalls_module.length_pmf_and_stalls(chain, 200, workers=2, min_share=0.0)
    assert np.array_equal(pmf, stalls_module.length_pmf(chain, 200, 1))
    assert found == stalls_module.stalls(chain, 0.0) and found


def _followed_in_a_daemon(queue) -> None:
    chain = _small_followed_chain(workers=2, chunk=37)
    queue.put(stalls_module.length_pmf_and_stalls(chain, 200, workers=2, min_share=0.0))


def test_a_daemonic_process_follows_play_and_finds_stalls_without_starting_processes(monkeypatch):
    """The explorer solves in a daemonic process, which may start none: play is
    followed and the stalls found there, on two workers asked for or not."""
    import multiprocessing

    monkeypatch.setattr(stalls_module, "STALLS_APART_STATES", 0)  # inherited by the fork
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    process = context.Process(target=_followed_in_a_daemon, args=(queue,), daemon=True)
    process.start()
    pmf, found = queue.get(timeout=300)
    process.join(60)
    assert process.exitcode == 0
    chain = _small_followed_chain(workers=1, chunk=1 << 14)
    assert np.array_equal(pmf, stalls_module.length_pmf(chain, 200, 1))
    assert found == stalls_module.stalls(chain, 0.0) and found
