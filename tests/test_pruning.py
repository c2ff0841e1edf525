"""Actions taken away from a game graph, and hurried play's use of it: only
actions some optimal stage strategy plays order its states.

Interactions covered: a strictly worse card (never playable), two cards
equally good (both kept), a mixed equilibrium (its support kept), and, on a
Charge & Spark board, the cycles that only unplayable moves closed."""

from __future__ import annotations

import numpy as np
import pytest

import solver.core.hurry as hurry_module
from dict_game import LOSS, WIN, DictGame
from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position
from solver.core.components import scc_from_csr, successor_csr
from solver.core.graph import build_graph, segment_positions
from solver.core.hurry import stage_optima
from solver.core.pruning import kept_actions
from solver.core.solve import solve_from

# State 0: P1's row 0 wins against both columns, row 1 loses to column 1, row 2 goes to state 1.
# State 1: P1 wins matching the first cards, loses on a mismatch, and a match of the second goes back to 0.
GAME = DictGame(
    {
        0: {(0, 0): [(1.0, WIN)], (0, 1): [(1.0, WIN)], (1, 0): [(1.0, WIN)], (1, 1): [(1.0, LOSS)],
            (2, 0): [(0.5, 1), (0.5, WIN)], (2, 1): [(1.0, 1)]},
        1: {(0, 0): [(1.0, WIN)], (0, 1): [(1.0, LOSS)], (1, 0): [(1.0, LOSS)], (1, 1): [(1.0, 0)]},
    },
    ["a", "b", "c"],
)


def test_a_pruned_graph_keeps_the_stage_games_of_the_actions_kept():
    graph = build_graph(GAME, np.array([0, 1], np.int64))
    keep_row = np.array([True, False, True, True, True])  # state 0 loses row 1
    keep_col = np.array([True, True, False, True])  # state 1 loses column 0
    pruned, rows, cols = kept_actions(graph, keep_row, keep_col)
    np.testing.assert_array_equal(rows, [0, 2, 3, 4])
    np.testing.assert_array_equal(cols, [0, 1, 3])
    np.testing.assert_array_equal(pruned.row_actions, graph.row_actions[rows])
    np.testing.assert_array_equal(pruned.col_actions, graph.col_actions[cols])
    np.testing.assert_array_equal(pruned.states, graph.states)
    values = np.array([0.3, 0.7])
    np.testing.assert_array_equal(pruned.stage_matrix(0, values), graph.stage_matrix(0, values)[[0, 2]])
    np.testing.assert_array_equal(pruned.stage_matrix(1, values), graph.stage_matrix(1, values)[:, [1]])


def test_a_state_left_without_an_action_is_refused():
    graph = build_graph(GAME, np.array([0, 1], np.int64))
    keep_col = np.ones(graph.col_actions.shape[0], np.bool_)
    keep_row = np.array([False, False, False, True, True])
    with pytest.raises(ValueError, match="at least one action"):
        kept_actions(graph, keep_row, keep_col)
    with pytest.raises(ValueError, match="each of the graph's actions"):
        kept_actions(graph, keep_row[:2], keep_col)


def test_the_playable_actions_are_those_some_optimal_strategy_plays():
    """At state 0 (values: state 1 worth 1/2) row 0 wins whatever P2 does and
    row 2 wins at best 3/4 (against column 0): row 2 is never played. Row 1
    wins against column 0, which is as good as any for P2: against the
    opponent's optimal strategy found, it ties, so it is kept (a superset of
    what optimal strategies play is safe; a subset would not be). At state 1
    (P1 wins on a match of the first cards, a match of the second goes back
    to state 0, worth 0.3) both rows are played, 3:10. P2 at state 0 loses whatever it does: both its columns are kept."""
    graph = build_graph(GAME, np.array([0, 1], np.int64))
    values = np.array([0.3, 0.5])
    p1 = stage_optima(graph, values, 0)
    assert p1.keep[0] and not p1.keep[2]
    np.testing.assert_array_equal(p1.keep[3:], [True, True])
    assert p1.value[0] == pytest.approx(1.0)
    np.testing.assert_allclose(p1.row[3:], [0.3 / 1.3, 1.0 / 1.3], atol=1e-12)
    p2 = stage_optima(graph, values, 1)
    np.testing.assert_array_equal(p2.keep, [True, True, True, True])


def test_hurried_play_never_plays_an_action_no_optimal_strategy_plays():
    result = solve_from(GAME, [0], show_progress=False)
    i = result.index_of(0)
    row = np.asarray(result.row_strategy[result.row_ptr[i] : result.row_ptr[i + 1]])
    np.testing.assert_array_equal(row, [1.0, 0.0, 0.0])  # row 0 wins at once; row 2 would too, later
    assert result.max_exploitability <= 1e-9


def _on_cycles(succ_ptr: np.ndarray, succ: np.ndarray) -> int:
    comp_ptr, comp_states = scc_from_csr(succ_ptr, succ)
    sizes = np.diff(comp_ptr)
    lone = comp_states[comp_ptr[:-1][sizes == 1]]
    looped = sum(int(np.any(succ[succ_ptr[s] : succ_ptr[s + 1]] == s)) for s in lone)
    return int(sizes[sizes > 1].sum()) + looped


def test_on_a_board_fewer_states_lie_on_cycles_of_the_moves_hurried_play_can_make(monkeypatch):
    """`board=S*M`, health 1: hurried play orders each side's states by the
    moves its optimal stage strategies can make (every move of the stalling
    opponent counted); cycles closed only by moves no optimal strategy makes
    are not iterated. Fewer of the states lie on cycles than with every move."""
    seen = []
    original = hurry_module.hurried_side

    def recorded(graph, guarantee, strategy, buzzer, side, eta):
        seen.append((graph, guarantee, buzzer, side))
        return original(graph, guarantee, strategy, buzzer, side, eta)

    monkeypatch.setattr(hurry_module, "hurried_side", recorded)
    rules = apply_overrides(RuleSet(), ["board=S*M", "health=1"])
    game = ChargeSparkGame(rules)
    result = solve_from(game, [game.encode(initial_position(rules))], show_progress=False)
    every = fewer = 0
    for graph, guarantee, buzzer, side in seen:
        keep = stage_optima(graph, guarantee, side).keep
        others = np.ones((graph.col_actions if side == 0 else graph.row_actions).shape[0], np.bool_)
        every += _on_cycles(*successor_csr(buzzer))
        pruned = kept_actions(buzzer, *((keep, others) if side == 0 else (others, keep)))[0]
        fewer += _on_cycles(*successor_csr(pruned))
    assert 0 < fewer < 0.9 * every
    # The hurried strategies play only playable actions, and keep every guarantee.
    for graph, guarantee, _, side in seen[:1]:
        keep = stage_optima(graph, guarantee, side).keep
        strategy = result.row_strategy if side == 0 else result.col_strategy
        ptr = result.row_ptr if side == 0 else result.col_ptr
        at = segment_positions(np.asarray(ptr, np.int64), np.searchsorted(result.states, graph.states))
        assert np.all(np.asarray(strategy)[at][~keep] == 0.0)
    assert result.max_exploitability <= 1e-9
    assert result.strict_exploitability.max() <= 1e-9
