"""Terminal outcomes carry their winner and kind as data: no figure depends on
how an outcome is labelled."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rules.charge_spark.config import RuleSet, apply_overrides, fingerprint
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.notation import format_position
from rules.charge_spark.state import initial_position
from rules.charge_spark.turn import KNOCK_OUT, MOON
from solver.analysis.sensitivity import VariantSummary
from solver.cli import query_json, query_text
from solver.core.boundary import Boundary
from solver.core.outcome import Outcome, Seat, kind_probability, terminal_outcomes, win_probability, won_by
from solver.core.solve import solve_from
from solver.core.table_file import save_table, table_path
from solver.core.table_reader import TableReader
from solver.report.entries import summary_entry, summary_from_entry, variant_entry, variant_from
from solver.storage import TABLE_FORMAT
from solver.summary import summarise_from

SMALL = apply_overrides(RuleSet(), ["board=SM", "health=1", "bonus_cards="])


class Misnamed(ChargeSparkGame):
    """The game with labels naming the wrong winner (and no way of winning):
    display text only, so every figure must stay the game's own."""

    terminal_labels = ("P2 wins, somehow", "P2 wins, again", "P1 wins, somehow", "P1 wins, again")


def test_a_seat_is_an_int_shown_as_its_name():
    assert [int(s) for s in Seat] == [0, 1] and Seat(1) is Seat.P2
    assert Seat.P1.other is Seat.P2 and Seat.P2.other is Seat.P1
    assert str(Seat.P1) == "P1" and f"{Seat.P2} wins" == "P2 wins" and f"{Seat.P1:>3}" == " P1"
    assert ["row", "col"][Seat.P2] == "col" and Seat.P1 == 0


def test_an_outcome_round_trips_through_json_and_sums_by_winner_and_kind():
    outcomes = (Outcome(Seat.P1, "moon", "a"), Outcome(Seat.P2, "moon", "b"), Outcome(None, "draw", "c"))
    assert tuple(Outcome.from_json(json.loads(json.dumps(o.to_json()))) for o in outcomes) == outcomes
    probability = {"a": 0.5, "b": 0.25, "c": 0.125, "unending": 0.125}
    assert win_probability(probability, outcomes, Seat.P1) == 0.5
    assert win_probability(probability, outcomes, Seat.P2) == 0.25
    assert kind_probability(probability, outcomes, "moon") == 0.75
    assert won_by(outcomes, Seat.P2) == [1]


def test_the_games_outcomes_agree_with_its_payoffs_and_seat_swap():
    outcomes = terminal_outcomes(ChargeSparkGame)
    assert [o.label for o in outcomes] == list(ChargeSparkGame.terminal_labels)
    assert {o.kind for o in outcomes} == {KNOCK_OUT, MOON}
    for t, o in enumerate(outcomes):
        assert ChargeSparkGame.terminal_payoff[t] == (1.0 if o.winner is Seat.P1 else 0.0)
        twin = outcomes[ChargeSparkGame.terminal_swap[t]]
        assert twin.winner is o.winner.other and twin.kind == o.kind


def test_a_game_must_give_one_winner_and_kind_per_outcome():
    class Short(ChargeSparkGame):
        terminal_kinds = (KNOCK_OUT,)

    with pytest.raises(ValueError, match="one per terminal outcome"):
        terminal_outcomes(Short)


@pytest.fixture(scope="module")
def solved_both():
    plain, misnamed = ChargeSparkGame(SMALL), Misnamed(SMALL)
    root = plain.encode(initial_position(SMALL))
    return [(game, solve_from(game, [root], show_progress=False)) for game in (plain, misnamed)]


def test_renamed_labels_change_no_win_probability(solved_both):
    (plain, ours), (misnamed, theirs) = solved_both
    np.testing.assert_array_equal(ours.states, theirs.states)
    assert theirs.terminal_labels == Misnamed.terminal_labels
    # A state far from even, so that reading a winner from a label would show.
    i = int(np.argmax(np.abs(ours.values - 0.5) * (ours.unending_probability < 1)))
    code = int(ours.states[i])
    assert abs(ours.win_probability(i, Seat.P1) - ours.win_probability(i, Seat.P2)) > 0.1
    for seat in Seat:
        assert theirs.win_probability(i, seat) == pytest.approx(ours.win_probability(i, seat), abs=1e-12)

    # The start summary (the report's and the sweep's), as computed and as the results cache keeps it.
    mine, other = summarise_from(plain, ours, code, 0), summarise_from(misnamed, theirs, code, 0)
    kept = summary_from_entry(json.loads(json.dumps(summary_entry(other))))
    variant = variant_from(json.loads(json.dumps(variant_entry(VariantSummary.of(other, 1.0, False)))))
    assert mine.wins(Seat.P1) + 0.5 * mine.outcomes["unending"] == pytest.approx(mine.value, abs=1e-9)
    for summary in (other, kept, variant):
        for seat in Seat:
            assert summary.wins(seat) == pytest.approx(mine.wins(seat), abs=1e-12)
        for kind in (KNOCK_OUT, MOON):
            assert summary.by(kind) == pytest.approx(mine.by(kind), abs=1e-12)

    # The query's JSON and text.
    position = format_position(plain.decode(code), SMALL)
    a, b = ours.answer(code, plain), theirs.answer(code, misnamed)
    for key in ("p1_win", "p2_win"):
        assert query_json(SMALL, position, b, theirs)[key] == pytest.approx(query_json(SMALL, position, a, ours)[key])
    wins = [line for line in query_text(SMALL, position, a, ours, 0.0).splitlines() if " wins " in line]
    assert wins == [line for line in query_text(SMALL, position, b, theirs, 0.0).splitlines() if " wins " in line]
    assert wins[0].startswith("P1 wins ") and "(by knock-out " in wins[0] and ", at the moon " in wins[0]


def test_a_stored_table_keeps_its_outcomes(solved_both, tmp_path):
    (_, _), (misnamed, theirs) = solved_both
    key = fingerprint(SMALL)
    path = table_path(tmp_path, key)
    save_table(path, theirs, key, fmt=TABLE_FORMAT)
    reader = TableReader(path, key, TABLE_FORMAT)
    part = reader.part(np.asarray(theirs.states[:3]))
    assert part.terminal_outcomes == theirs.terminal_outcomes == terminal_outcomes(misnamed)
    assert Boundary.of_stored(reader).terminal_labels == Misnamed.terminal_labels


def test_an_openspiel_games_winner_is_the_player_with_the_larger_return():
    pytest.importorskip("pyspiel", reason="the crosscheck extra (open-spiel) is not installed")
    from solver.openspiel import OpenSpielGame, load_game

    game = OpenSpielGame(load_game("goofspiel(num_cards=3,imp_info=False,points_order=descending)"))
    result = solve_from(game, [game.root()], show_progress=False)
    by_payoff = {float(p): o for p, o in zip(result.terminal_payoff, result.terminal_outcomes)}
    assert by_payoff[0.0].winner is None and by_payoff[0.0].kind == "draw"
    assert all(o.winner is (Seat.P1 if p > 0 else Seat.P2) for p, o in by_payoff.items() if p != 0.0)
    root = result.index_of(game.root())
    # A symmetric game: each player wins as often.
    assert result.win_probability(root, Seat.P1) == pytest.approx(result.win_probability(root, Seat.P2), abs=1e-9)
