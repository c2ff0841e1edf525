"""The wild game's compiled expansion (`WildGame.expand`, `rules.charge_spark.wild_expansion`)
against the readable one state by state (`ReferenceWildGame`, through `WildGame.moves`):
the same actions, cells and outcomes in the same order, on the wild states reachable
from the roots a wild table is solved from (all of them, or a large sample)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.state import initial_position
from rules.charge_spark.wild import ReferenceWildGame, WildGame, wild_state_of
from solver.core.graph import reachable_states
from solver.core.solve import solve_from
from solver.hidden.wild_table import seen_splits, wild_roots

RULE_SETS = {
    # Two kinds, the small rule set of tests/test_wild_game.py.
    "ray+trap": ("board=S*M", "health=1", "battery_tiles=2", "disc_tiles=2", "bonus_cards=ray,trap"),
    # Three kinds: a pending draw's keep-out choice between three.
    "ray+trap+recovery": (
        "board=S*M", "health=1", "battery_tiles=1", "disc_tiles=1", "start_battery=1", "bonus_cards=ray,trap,recovery",
    ),
    # Two stars: H holds two unseen cards, keeps two out (a repeated kind too), and a Copy.
    "two stars, ray+ray+trap+copy": (
        "board=S**M", "health=1", "battery_tiles=1", "disc_tiles=1", "start_battery=1", "bonus_cards=ray,ray,trap,copy",
    ),
    # All four kinds, and a last card both players land on goes to nobody (not to a coin).
    "two stars, four kinds, contested draw to nobody": (
        "board=S**M", "health=1", "battery_tiles=1", "disc_tiles=1", "start_battery=1", "contested_draw=nobody",
        "bonus_cards=ray,recovery,trap,copy",
    ),
}
SAMPLE = 4000
"""States compared on a rule set that reaches more than twice this: a random sample, up to half of it pending."""
FIELDS = ("row_count", "row_actions", "col_count", "col_actions", "out_count", "out_next")


@functools.cache
def reachable(name: str) -> tuple[WildGame, np.ndarray, np.ndarray]:
    """The wild game of a rule set, its roots (as `solved_wild_table` takes them) and every state they reach."""
    rules = apply_overrides(RuleSet(), list(RULE_SETS[name]))
    open_game = ChargeSparkGame(rules)
    open_states = reachable_states(open_game, np.array([open_game.encode(initial_position(rules))], dtype=np.int64))
    game = WildGame(rules)
    roots = wild_roots(game, open_game, open_states)
    return game, roots, reachable_states(game, roots)


def assert_same_expansion(compiled, reference) -> None:
    for field in FIELDS:
        assert np.array_equal(getattr(compiled, field), getattr(reference, field)), field
    assert compiled.out_prob.shape == reference.out_prob.shape
    np.testing.assert_allclose(compiled.out_prob, reference.out_prob, rtol=0, atol=1e-15)


def by_state(e) -> list[tuple]:
    """Each state's (rows, cols, cells), a cell being its (next codes, chances)."""
    row_at = np.concatenate(([0], np.cumsum(e.row_count)))
    col_at = np.concatenate(([0], np.cumsum(e.col_count)))
    cell_at = np.concatenate(([0], np.cumsum(e.row_count * e.col_count)))
    out_at = np.concatenate(([0], np.cumsum(e.out_count)))
    states = []
    for i in range(e.row_count.size):
        cells = tuple(
            (tuple(e.out_next[out_at[c] : out_at[c + 1]].tolist()), tuple(e.out_prob[out_at[c] : out_at[c + 1]].tolist()))
            for c in range(cell_at[i], cell_at[i + 1])
        )
        states.append((tuple(e.row_actions[row_at[i] : row_at[i + 1]].tolist()),
                       tuple(e.col_actions[col_at[i] : col_at[i + 1]].tolist()), cells))
    return states


@pytest.mark.parametrize("name", list(RULE_SETS))
def test_the_compiled_expansion_is_the_readable_one_at_every_reachable_state(name):
    game, _, states = reachable(name)
    pending = states % 2 == 1
    assert pending.any() and (~pending).any()
    if states.size > 2 * SAMPLE:
        rng = np.random.default_rng(3)
        states = np.sort(np.concatenate([
            rng.choice(part, min(part.size, SAMPLE // 2), replace=False) for part in (states[pending], states[~pending])
        ]))
    assert_same_expansion(game.expand(states), ReferenceWildGame(game.rules).expand(states))


def test_the_rule_sets_reach_what_the_compiled_expansion_must_get_right():
    # Two unseen cards, pending draws where H keeps two out (two alike among them), a Copy
    # played and resting, P2's draws dealt at once and pending.
    game, _, states = reachable("two stars, ray+ray+trap+copy")
    rest, pending = np.divmod(states, 2)
    unseen = rest % (game.max_unseen + 1)
    assert np.any((pending == 1) & (unseen == 2)) and np.any((pending == 0) & (unseen == 2))
    e = game.expand(states[pending == 1])
    kept = {game.action_labels[a] for a in e.row_actions}
    assert {"keeps ray+ray", "keeps ray+trap", "keeps trap+copy", "keeps copy"} <= kept
    assert e.out_count.min() >= 1 and e.out_count.max() >= 2


def test_each_state_expands_alike_alone_and_in_any_batch():
    # The batch shares the concrete positions' turns between its states: no state's
    # expansion may depend on its neighbours.
    game, _, states = reachable("ray+trap")
    rng = np.random.default_rng(7)
    sample = rng.choice(states, 300, replace=False)
    whole = by_state(game.expand(sample))
    assert [by_state(game.expand(sample[i : i + 1]))[0] for i in range(0, 300, 10)] == whole[::10]
    order = rng.permutation(300)
    assert by_state(game.expand(sample[order])) == [whole[i] for i in order]
    e = game.expand(np.zeros(0, dtype=np.int64))
    assert all(getattr(e, field).size == 0 for field in (*FIELDS, "out_prob"))


def test_a_wild_solve_by_the_compiled_expansion_has_the_readable_ones_values():
    game, roots, _ = reachable("ray+trap+recovery")
    compiled = solve_from(game, roots, show_progress=False)
    reference = solve_from(ReferenceWildGame(game.rules), roots, show_progress=False)
    assert np.array_equal(compiled.states, reference.states)
    np.testing.assert_allclose(compiled.values, reference.values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(compiled.p2_guarantee, reference.p2_guarantee, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", sorted(RULE_SETS))
def test_the_roots_by_digits_are_each_positions_seen_and_unseen_splits(name):
    """`wild_roots` works on the codes' digits (the printed rules have 49 million
    positions); decoded one position at a time, each split of P1's hand into the
    cards P2 has seen and those it has not gives the same wild states."""
    rules = apply_overrides(RuleSet(), list(RULE_SETS[name]))
    open_game = ChargeSparkGame(rules)
    open_states = reachable_states(open_game, np.array([open_game.encode(initial_position(rules))], dtype=np.int64))
    game = WildGame(rules)
    by_position = {
        game.encode(wild_state_of(position, seen))
        for position in map(open_game.decode, open_states.tolist())
        for seen in seen_splits(position.p1.bonus)
    }
    assert wild_roots(game, open_game, open_states).tolist() == sorted(by_position)
    assert wild_roots(game, open_game, open_states, chunk=7).tolist() == sorted(by_position)
