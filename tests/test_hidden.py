"""Hidden bonus cards: the information structure, the phase trees and the
bounds they give, checked against the open game and independent solvers."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from rules.charge_spark.cards import Card
from rules.charge_spark.config import RuleSet, apply_overrides
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.hidden import all_known, drawn_cards, known_after_turn, public_view, unseen_cards
from rules.charge_spark.notation import parse_position
from solver.cli import main
from solver.core.sequence_form import best_response, exploitability, solve_tree
from solver.hidden.analysis import EXACT, naive_behaviour, solve_start
from solver.hidden.phase_tree import OpenGame, Phase
from solver.hidden.run import hidden_analysis
from solver.hidden.starts import PhaseStart, phase_starts
from solver.tables import solved_table

SMALL = ("board=S*M", "health=1", "battery_tiles=2", "disc_tiles=2", "bonus_cards=ray,trap")
TINY = ("board=S*M", "health=1", "battery_tiles=1", "disc_tiles=1", "start_battery=1", "bonus_cards=ray,trap")


def rules_of(*overrides: str) -> RuleSet:
    return apply_overrides(RuleSet(), list(overrides))


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> tuple[OpenGame, list[PhaseStart]]:
    rules = rules_of(*SMALL)
    table = solved_table(rules, tmp_path_factory.mktemp("tables"))
    open_game = OpenGame(ChargeSparkGame(rules), table.result)
    return open_game, phase_starts(open_game)


def sample(starts: list[PhaseStart], every: int = 9) -> list[PhaseStart]:
    return starts[::every]


# --- the information structure (rules) ------------------------------------------------------------


def test_a_drawn_card_is_unseen_and_a_played_one_is_seen_from_then_on():
    rules = rules_of(*SMALL)
    before = parse_position("h1 b1 p0 rest=charge / h1 b1 rest=charge", rules)
    after = parse_position("h1 b1 p1 rest=move bonus=ray / h1 b1 rest=barrier", rules)
    cards = (Card.MOVE, Card.BARRIER)
    assert drawn_cards(before, cards, after) == (Card.RAY, None)
    known = known_after_turn(before, all_known(before), cards, after)
    assert known == ((), ())
    assert unseen_cards(after.p1, known[0]) == (Card.RAY,)
    # Playing the card shows it: back in hand after resting, it stays seen.
    rest = parse_position("h1 b0 p1 rest=ray / h1 b1 rest=charge", rules)
    assert known_after_turn(after, known, (Card.RAY, Card.CHARGE), rest) == ((), ())
    back = parse_position("h1 b1 p1 rest=charge bonus=ray / h1 b1 rest=barrier", rules)
    assert known_after_turn(rest, ((), ()), (Card.CHARGE, Card.BARRIER), back) == ((Card.RAY,), ())


def test_the_public_view_hides_which_card_but_not_how_many():
    rules = rules_of(*SMALL)
    ray = parse_position("h1 p1 rest=move bonus=ray / h1", rules)
    trap = parse_position("h1 p1 rest=move bonus=trap / h1", rules)
    assert public_view(ray, ((), ())) == public_view(trap, ((), ()))
    assert public_view(ray, all_known(ray)) != public_view(trap, all_known(trap))


def test_nothing_to_hide_means_no_phase(tmp_path):
    """Cards all alike (trap, trap) or a single card: every draw can be told, so hidden = open everywhere."""
    for bonus in ("bonus_cards=trap,trap", "bonus_cards=ray"):
        rules = rules_of("board=S*M", "health=1", "battery_tiles=2", "disc_tiles=2", bonus)
        table = solved_table(rules, tmp_path)
        assert phase_starts(OpenGame(ChargeSparkGame(rules), table.result)) == []
        analysis = hidden_analysis(rules, table.result)
        assert analysis.summary.starts == 0 and analysis.summary.max_gain == 0.0


# --- the phase trees ------------------------------------------------------------------------------


def test_the_small_rule_set_has_mirrored_one_sided_starts(small):
    _, starts = small
    holders = [s.holder for s in starts]
    assert holders.count("P1") == holders.count("P2") > 0 and "both" not in holders


def test_phase_trees_are_well_formed_with_perfect_recall(small):
    open_game, starts = small
    for start in sample(starts, 17):
        phase_tree = Phase(open_game, list(start.worlds)).tree(3)
        assert phase_tree.tree.problem() is None
        assert np.all(phase_tree.lower <= phase_tree.upper)


def test_showing_the_card_gives_the_open_value(small):
    """With every draw shown and the tree grown to the horizon anyway, the LP must
    give the open solver's average: a check of the tree's turns, chances and values."""
    open_game, starts = small
    for start, horizon in [(s, 1) for s in starts] + [(s, 2) for s in sample(starts)]:  # every start, some deeper
        average = sum(w.chance * open_game.value(w.code) for w in start.worlds)
        phase_tree = Phase(open_game, list(start.worlds), reveal=True, stop_when_known=False).tree(horizon)
        assert phase_tree.horizon_leaves == 0 or np.allclose(
            phase_tree.lower[phase_tree.tree.leaves()], phase_tree.upper[phase_tree.tree.leaves()])
        assert solve_tree(phase_tree.tree, phase_tree.lower).value == pytest.approx(average, abs=1e-9)


def test_ending_a_phase_where_all_is_told_changes_nothing(small):
    """Valuing a public node where both players can tell the position at its open
    values gives what growing the tree through it gives."""
    open_game, starts = small
    for start in sample(starts, 13):
        cut = Phase(open_game, list(start.worlds)).tree(2)
        grown = Phase(open_game, list(start.worlds), stop_when_known=False).tree(2)
        for valuation in ("lower", "upper"):
            assert solve_tree(cut.tree, getattr(cut, valuation)).value == pytest.approx(
                solve_tree(grown.tree, getattr(grown, valuation)).value, abs=1e-9)


def test_lp_strategies_are_unexploitable_by_an_independent_best_response(small):
    open_game, starts = small
    for start in sample(starts):
        phase_tree = Phase(open_game, list(start.worlds)).tree(3)
        for payoffs in (phase_tree.lower, phase_tree.upper):
            solution = solve_tree(phase_tree.tree, payoffs)
            p1_loss, p2_loss = exploitability(phase_tree.tree, solution, payoffs)
            assert -1e-12 <= p1_loss <= 1e-9 and -1e-12 <= p2_loss <= 1e-9


def test_bounds_are_monotone_in_the_horizon(small):
    """open average <= lo(H) <= lo(H+1) <= hi(H+1) <= hi(H), from the holder's side."""
    open_game, starts = small
    for start in sample(starts, 19):
        average = sum(w.chance * open_game.value(w.code) for w in start.worlds)
        sign = 1.0 if start.holder == "P1" else -1.0
        phase = Phase(open_game, list(start.worlds))
        bounds = []
        for h in range(1, 5):
            t = phase.tree(h)
            bounds.append((solve_tree(t.tree, t.lower).value, solve_tree(t.tree, t.upper).value))
        holder_side = [(lo, hi) if sign > 0 else (-hi, -lo) for lo, hi in bounds]
        assert holder_side[0][0] >= sign * average - 1e-9
        for (lo, hi), (lo_next, hi_next) in zip(holder_side, holder_side[1:]):
            assert lo - 1e-9 <= lo_next <= hi_next + 1e-9 <= hi + 2e-9


def test_seat_mirror(small):
    """A start where P2 drew is worth 1 minus the same start with the seats swapped."""
    open_game, starts = small
    by_outcomes = {s.outcomes: s for s in starts}
    swap = open_game.game.swap
    checked = 0
    for start in sample([s for s in starts if s.holder == "P2"], 4):
        twin_outcomes = tuple((int(swap(np.array([code]))[0]), p) for code, p in start.outcomes)
        twin = by_outcomes[twin_outcomes]
        assert twin.holder == "P1"
        mine, theirs = solve_start(open_game, start), solve_start(open_game, twin)
        assert mine.lower == pytest.approx(1 - theirs.upper, abs=1e-9)
        assert mine.upper == pytest.approx(1 - theirs.lower, abs=1e-9)
        assert mine.gain == pytest.approx(theirs.gain, abs=1e-9)
        assert mine.holder_open_loss == pytest.approx(theirs.holder_open_loss, abs=1e-9)
        assert mine.naive_exploitability == pytest.approx(theirs.naive_exploitability, abs=1e-9)
        checked += 1
    assert checked > 3


def test_every_start_of_the_small_rule_set_is_exact_and_hiding_never_hurts_the_holder(small):
    open_game, starts = small
    for start in sample(starts, 11):
        result = solve_start(open_game, start)
        assert result.exact and result.upper - result.lower <= EXACT
        assert result.gain >= -1e-9
        assert 0.0 <= result.holder_open_loss <= result.gain + 1e-9


def test_the_naive_strategy_is_the_open_strategy_where_the_player_can_tell(small):
    open_game, starts = small
    start = next(s for s in starts if s.holder == "P1")
    phase_tree = Phase(open_game, list(start.worlds)).tree(2)
    naive = naive_behaviour(phase_tree, open_game, 0)
    for i in phase_tree.tree.infosets_of(0):
        node = phase_tree.tree.infosets[i].nodes[0]
        strategy = open_game.strategy(int(phase_tree.node_code[node]), 0)
        labels = phase_tree.tree.infosets[i].actions
        assert np.allclose(naive[i], [strategy[int(Card.parse(label))] for label in labels])
    # The holder's open strategy is a guarantee of the open average, whatever P2 does.
    assert best_response(phase_tree.tree, 1, naive, phase_tree.lower).value >= sum(
        w.chance * open_game.value(w.code) for w in start.worlds) - 1e-9


def test_a_tight_node_cap_gives_honest_bounds_not_a_wrong_value(small):
    open_game, starts = small
    deep = max(sample(starts, 20), key=lambda s: solve_start(open_game, s).horizon)
    exact = solve_start(open_game, deep)
    capped = solve_start(open_game, deep, max_nodes=30)
    assert exact.horizon >= 2 and exact.exact
    assert not capped.exact and capped.horizon < exact.horizon
    assert capped.lower - 1e-9 <= exact.lower and exact.upper <= capped.upper + 1e-9


# --- the command ----------------------------------------------------------------------------------


def sets(*overrides: str) -> list[str]:
    return [arg for o in overrides for arg in ("--set", o)]


def test_cli_json_lists_every_start_with_its_figures():
    result = CliRunner().invoke(main, ["hidden", *sets(*TINY), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    fields = {"position", "cards", "open_average", "lower", "upper", "horizon", "gain", "holder_open_loss",
              "naive_exploitability"}
    assert data["starts"] and all(fields <= set(s) for s in data["starts"])
    summary = data["summary"]
    assert {"starts", "exact", "max_gain", "mean_gain", "max_gain_position"} <= set(summary)
    assert summary["starts"] == len(data["starts"]) == summary["exact"]
    assert summary["max_gain"] == pytest.approx(max(s["gain"] for s in data["starts"]))
    assert summary["max_width"] == 0.0  # every start exact


def test_the_summary_gives_the_widest_bracket():
    result = CliRunner().invoke(main, ["hidden", *sets(*TINY), "--max-nodes", "30", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    widths = [s["upper"] - s["lower"] for s in data["starts"]]
    assert max(widths) > 0 and data["summary"]["max_width"] == pytest.approx(max(widths))


def test_cli_text_and_bounds_under_a_tight_cap():
    result = CliRunner().invoke(main, ["hidden", *sets(*TINY), "--max-nodes", "30", "--all"])
    assert result.exit_code == 0, result.output
    assert "given as bounds" in result.output and "bounds [" in result.output
    exact = json.loads(CliRunner().invoke(main, ["hidden", *sets(*TINY), "--json"]).output)["starts"]
    capped = json.loads(CliRunner().invoke(main, ["hidden", *sets(*TINY), "--max-nodes", "30", "--json"]).output)["starts"]
    for e, c in zip(exact, capped):
        assert e["position"] == c["position"] and c["lower"] - 1e-9 <= e["lower"] and e["upper"] <= c["upper"] + 1e-9
        assert c["gain"] <= e["gain"] + 1e-9  # a lower bound where not exact


@pytest.mark.parametrize("args, complaint", [
    (["--horizon", "0"], "--horizon"),
    (["--max-nodes", "-5"], "--max-nodes"),
    (["--frequent", "0"], "--frequent"),
    (["--set", "bonus_cards=ray,sword"], "sword"),
])
def test_cli_bad_input_is_one_line_and_exit_2(args, complaint):
    result = CliRunner().invoke(main, ["hidden", *sets("board=S*M", "health=1"), *args])
    assert result.exit_code == 2
    assert complaint in result.output and "Traceback" not in result.output


def test_phase_trees_agree_with_gambit_and_openspiel(small):
    """Three phase trees exported as .efg: Gambit's exact rational LP and
    OpenSpiel's sequence-form LP agree with ours at both valuations."""
    from efg_crosscheck import crosscheck_values

    open_game, starts = small
    chosen = [s for s in starts if s.holder == "P1"][:1] + [s for s in starts if s.holder == "P2"][3:5]
    for start, horizon in zip(chosen, (1, 2, 1)):
        phase_tree = Phase(open_game, list(start.worlds)).tree(horizon)
        for payoffs in (phase_tree.lower, phase_tree.upper):
            ours = solve_tree(phase_tree.tree, payoffs).value
            for solver, value in crosscheck_values(phase_tree.tree, payoffs).items():
                assert value == pytest.approx(ours, abs=1e-9), solver


@pytest.mark.slow
def test_every_start_of_the_small_rule_set_is_solved_exactly(small):
    open_game, starts = small
    results = [solve_start(open_game, start) for start in starts]
    assert all(r.exact for r in results)
    assert min(r.gain for r in results) >= -1e-9


def test_the_most_frequent_phases_are_those_play_meets_most(small):
    from rules.charge_spark.state import initial_position
    from solver.hidden.frequency import play_and_visits, start_frequencies

    open_game, starts = small
    rules = open_game.game.rules
    play, visits = play_and_visits(open_game, open_game.game.encode(initial_position(rules)))
    by_outcomes = start_frequencies(open_game, play, visits)
    phases = {s.outcomes: s for s in starts}
    met = sorted(((times, outcomes) for outcomes, (times, _, _) in by_outcomes.items() if outcomes in phases), reverse=True)
    assert met and len(met) < len(starts)  # play from the start meets some phases only
    frequent = hidden_analysis(rules, open_game.table, frequent=1, play=(play, visits))
    assert frequent.selection == "the 1 most frequent in play from the start"
    assert len(frequent.results) == 1 and frequent.frequency == [pytest.approx(met[0][0])]
    assert frequent.results[0].lower == pytest.approx(solve_start(open_game, phases[met[0][1]]).lower, abs=1e-12)


def test_a_rule_set_with_more_phases_than_the_limit_gets_its_most_frequent_unless_every_phase_is_asked(monkeypatch):
    """S*M at health 1 has 17,373 phases (about a day): by default a rule set past `ALL_PHASES_AT_MOST`
    gets the `MOST_FREQUENT` phases play meets, as the printed rules do; `every_phase` still solves all."""
    import solver.hidden.run as run

    rules = rules_of(*TINY)
    table = solved_table(rules, None).result
    every = hidden_analysis(rules, table)
    assert every.selection == "all" and len(every.results) == 28
    monkeypatch.setattr(run, "ALL_PHASES_AT_MOST", 27)
    monkeypatch.setattr(run, "MOST_FREQUENT", 2)
    frequent = hidden_analysis(rules, table)
    assert frequent.selection == "the 2 most frequent in play from the start, of 28 phases"
    assert 1 <= len(frequent.results) <= 2 and all(times is not None and times > 0 for times in frequent.frequency)
    kept = {(r.position, r.played, r.holder): r.lower for r in every.results}
    assert all(kept[(r.position, r.played, r.holder)] == pytest.approx(r.lower, abs=1e-12) for r in frequent.results)
    assert hidden_analysis(rules, table, every_phase=True).selection == "all"


def test_progress_is_told_before_the_first_phase_and_after_each():
    """S*M at health 1's first phase takes half a minute: its time counts toward the first line."""
    rules = rules_of(*TINY)
    table = solved_table(rules, None).result
    told: list[tuple[int, int]] = []
    analysis = hidden_analysis(rules, table, progress=lambda done, total: told.append((done, total)))
    n = len(analysis.results)
    assert told == [(k, n) for k in range(n + 1)]


def test_cli_every_phase_and_frequent_are_one_or_the_other():
    result = CliRunner().invoke(main, ["hidden", *sets(*TINY), "--every-phase", "--frequent", "3"])
    assert result.exit_code == 2 and "give one" in result.output and "Traceback" not in result.output


TWO_SIDED = ("board=S*M", "health=1", "battery_tiles=1", "disc_tiles=1", "start_battery=1", "bonus_cards=ray,trap,recovery")


@pytest.fixture(scope="module")
def two_sided(tmp_path_factory) -> tuple[OpenGame, list[PhaseStart]]:
    """Three bonus cards: both players landing on their star together each hold a card the other cannot tell."""
    rules = rules_of(*TWO_SIDED)
    table = solved_table(rules, tmp_path_factory.mktemp("tables"))
    open_game = OpenGame(ChargeSparkGame(rules), table.result)
    return open_game, [s for s in phase_starts(open_game) if s.holder == "both"]


def test_two_sided_phases_are_solved_soundly(two_sided):
    open_game, starts = two_sided
    assert starts
    for start in starts[:3]:
        average = sum(w.chance * open_game.value(w.code) for w in start.worlds)
        shown = Phase(open_game, list(start.worlds), reveal=True, stop_when_known=False).tree(2)
        assert solve_tree(shown.tree, shown.lower).value == pytest.approx(average, abs=1e-9)
        phase_tree = Phase(open_game, list(start.worlds)).tree(2)
        assert phase_tree.tree.problem() is None
        for payoffs in (phase_tree.lower, phase_tree.upper):
            solution = solve_tree(phase_tree.tree, payoffs)
            assert max(exploitability(phase_tree.tree, solution, payoffs)) <= 1e-9


def test_reported_bounds_never_widen_as_the_horizon_grows(two_sided):
    open_game, starts = two_sided
    start = starts[0]
    brackets = [solve_start(open_game, start, max_horizon=h) for h in (1, 2, 3)]
    for wide, narrow in zip(brackets, brackets[1:]):
        assert wide.lower - 1e-12 <= narrow.lower <= narrow.upper <= wide.upper + 1e-12


def test_two_sided_seat_mirror(two_sided):
    open_game, starts = two_sided
    swap = open_game.game.swap
    by_outcomes = {frozenset(s.outcomes): s for s in starts}
    start = starts[0]
    twin = by_outcomes[frozenset((int(swap(np.array([code]))[0]), p) for code, p in start.outcomes)]
    mine, theirs = solve_start(open_game, start, max_horizon=2), solve_start(open_game, twin, max_horizon=2)
    assert mine.lower == pytest.approx(1 - theirs.upper, abs=1e-9)
    assert mine.upper == pytest.approx(1 - theirs.lower, abs=1e-9)


def test_cli_writes_each_phase_tree_for_gambit(tmp_path):
    gbt = pytest.importorskip("pygambit", reason="the crosscheck extra (pygambit) is not installed")
    folder = tmp_path / "trees"
    result = CliRunner().invoke(main, ["hidden", *sets(*TINY), "--json", "--efg", str(folder)])
    assert result.exit_code == 0, result.output
    starts = json.loads(result.output)["starts"]
    assert sorted(p.name for p in folder.iterdir())[:2] == ["start-0000.efg", "start-0001.efg"]
    assert len(list(folder.glob("start-*.efg"))) == len(starts) + sum(not s["exact"] for s in starts)
    k, start = next((k, s) for k, s in enumerate(starts) if s["exact"] and s["horizon"] >= 2)
    game = gbt.read_efg(str(folder / f"start-{k:04d}.efg"))
    value = gbt.nash.lp_solve(game, rational=False).equilibria[0].payoff(game.players["Player 1"])
    assert float(value) == pytest.approx(start["lower"], abs=1e-9)


def test_cli_refuses_an_efg_folder_it_cannot_write(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = CliRunner().invoke(main, ["hidden", *sets(*TINY), "--efg", str(blocker / "trees")])
    assert result.exit_code == 2 and "cannot write" in result.output and "Traceback" not in result.output


def test_seat_swapped_starts_read_off_their_twins_equal_those_solved(monkeypatch):
    """The figures of a start read off its seat-swapped twin are those a solve gives (TINY: all 28 solved both ways)."""
    import solver.hidden.run as run
    from solver.hidden.analysis import strategies_mirror

    rules = rules_of(*TINY)
    table = solved_table(rules, None).result
    assert strategies_mirror(OpenGame(ChargeSparkGame(rules), table))
    read_off = hidden_analysis(rules, table)
    assert sum(r.mirror_of is not None for r in read_off.results) == len(read_off.results) // 2
    monkeypatch.setattr(run, "strategies_mirror", lambda open_game: False)
    solved = hidden_analysis(rules, table)
    assert all(r.mirror_of is None for r in solved.results)
    for a, b in zip(read_off.results, solved.results):
        assert (a.position, a.played, a.holder, a.cards, a.horizon, a.exact) == (b.position, b.played, b.holder, b.cards, b.horizon, b.exact)
        for figure in ("open_average", "lower", "upper", "gain", "holder_open_loss", "naive_exploitability"):
            assert getattr(a, figure) == pytest.approx(getattr(b, figure), abs=1e-9), figure


def test_forgetting_kept_turns_between_phases_changes_no_figure(monkeypatch):
    """What `OpenGame` keeps of turns is let go between phases past a bound (the
    printed rules' eight phases kept 2.7 GB): every figure is the same with all
    of it forgotten after each phase, and the kept entries stay within the bound."""
    import solver.hidden.phase_tree as phase_tree
    import solver.hidden.run as run

    rules = rules_of(*TINY)
    table = solved_table(rules, None).result
    monkeypatch.setattr(run, "strategies_mirror", lambda open_game: False)  # every start solved
    kept = hidden_analysis(rules, table)
    sizes: list[int] = []
    trim = phase_tree.OpenGame.trim

    def forget_all(self, most=phase_tree.KEPT_TURNS):
        trim(self, 0)
        sizes.append(len(self._expansions) + len(self._seen) + len(self._values) + len(self._telling)
                     + self.decode.cache_info().currsize)

    monkeypatch.setattr(phase_tree.OpenGame, "trim", forget_all)
    forgotten = hidden_analysis(rules, table)
    assert sizes == [0] * (len(kept.results) + 1)  # before the first phase, and after each
    for a, b in zip(kept.results, forgotten.results):
        assert (a.position, a.horizon, a.exact) == (b.position, b.horizon, b.exact)
        for figure in ("open_average", "lower", "upper", "gain", "holder_open_loss", "naive_exploitability"):
            assert getattr(a, figure) == getattr(b, figure), figure


def test_how_often_phases_start_is_read_off_plays_chain_with_no_graph_of_play(monkeypatch, tmp_path):
    """`play_and_visits` follows play to its chain alone (the printed rules' graph
    of play passed 8 GB) and gives the visits the graph's chain gives."""
    import solver.hidden.frequency as frequency
    from graph_lifetime import watch_play_graphs
    from rules.charge_spark.state import initial_position
    from solver.core.chain import expected_visits, play_chain
    from solver.core.play import play_from

    rules = apply_overrides(RuleSet(), list(TINY))
    table = solved_table(rules, tmp_path).result
    game = ChargeSparkGame(rules)
    start = game.encode(initial_position(rules))
    by_graph = play_from(game, table, start)
    ones = np.ones(by_graph.states.size)
    expected = expected_visits(play_chain(by_graph.graph, ones, ones), by_graph.start, frequency.MAX_TURNS)
    built, ran = watch_play_graphs(monkeypatch, frequency, "expected_visits")
    play, visits = frequency.play_and_visits(OpenGame(game, table), start)
    assert built == [] and ran == [1]
    np.testing.assert_array_equal(play.states, by_graph.states)
    np.testing.assert_allclose(visits, expected, rtol=0, atol=1e-12)


def test_how_often_phases_start_leaves_none_of_a_stored_tables_pages_resident(monkeypatch, tmp_path):
    """Reading the strategies of every state play reaches left the printed rules'
    stored table 4.8 GB resident: they are let go as the pass goes, the counts the same."""
    import solver.hidden.frequency as frequency
    from resident import resident_bytes
    from rules.charge_spark.state import initial_position

    rules = apply_overrides(RuleSet(), list(SMALL))
    solved_table(rules, tmp_path)
    mapped = solved_table(rules, tmp_path, mapped=True).result
    game = ChargeSparkGame(rules)
    open_game = OpenGame(game, mapped)
    play, visits = frequency.play_and_visits(open_game, game.encode(initial_position(rules)))
    released: list[int] = []
    release = type(mapped).release_mapped_pages
    monkeypatch.setattr(type(mapped), "release_mapped_pages", lambda self: released.append(1) or release(self))
    monkeypatch.setattr(frequency, "RELEASE_EVERY", 2)
    chunk = 256
    found = frequency.start_frequencies(open_game, play, visits, chunk=chunk)
    assert len(released) == (-(-play.states.size // chunk)) // 2 + 1  # every second chunk, and at the end
    assert all(resident_bytes(getattr(mapped, name)) == 0 for name in ("row_strategy", "col_strategy", "row_ptr"))
    in_memory = frequency.start_frequencies(OpenGame(game, solved_table(rules, tmp_path).result), play, visits)
    assert found.keys() == in_memory.keys()
    for key, (times, _, _) in found.items():
        assert times == pytest.approx(in_memory[key][0], rel=1e-12)
