"""Our .efg export of game trees: read back by Gambit node for node, and
solved by Gambit and OpenSpiel to values known by hand (and to our own
sequence-form solve, where there is one)."""

from __future__ import annotations

import importlib.util
import io
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import pytest

from efg_crosscheck import crosscheck_values
from solver.core.efg import PLAYERS, save_efg, simplest_fraction, write_efg
from solver.core.files import OutputError
from solver.core.game_tree import CHANCE, LEAF, GameTree


def matrix_tree(matrix: Sequence[Sequence[float]]) -> GameTree:
    """The matrix game: player 1 picks a row, player 2 a column without seeing it."""
    tree = GameTree()
    rows = [f"r{i + 1}" for i in range(len(matrix))]
    cols = [f"c{j + 1}" for j in range(len(matrix[0]))]
    root = tree.add_decision(0, "rows", rows)
    for i, row in enumerate(matrix):
        node = tree.add_decision(1, "cols", cols, root, i)
        for j, x in enumerate(row):
            tree.add_leaf(x, node, j)
    return tree


def kuhn_poker() -> GameTree:
    """Kuhn poker with antes and bets of 1: worth -1/18 to player 1."""
    tree = GameTree()
    cards = "JQK"
    root = tree.add_chance(label="deal")
    deals = [(a, b) for a in range(3) for b in range(3) if a != b]
    for e, (a, b) in enumerate(deals):
        win = 1 if a > b else -1
        first = tree.add_decision(0, (cards[a], ""), ["check", "bet"], root, e, 1 / 6, label=cards[a] + cards[b])
        checked = tree.add_decision(1, (cards[b], "c"), ["check", "bet"], first, 0)
        tree.add_leaf(win, checked, 0)
        raised = tree.add_decision(0, (cards[a], "cb"), ["fold", "call"], checked, 1)
        tree.add_leaf(-1, raised, 0)
        tree.add_leaf(2 * win, raised, 1)
        bet = tree.add_decision(1, (cards[b], "b"), ["fold", "call"], first, 1)
        tree.add_leaf(1, bet, 0)
        tree.add_leaf(2 * win, bet, 1)
    return tree


CALM = [[3, -1], [-2, 1]]
STORM = [[-4, 2], [6, -3]]


def weather_game() -> GameTree:
    """Simultaneous moves with chance in between: player 1 picks a row; then the
    weather, calm (2/3) or stormy (1/3), which only player 2 sees; then player 2
    picks a column without seeing the row. Player 1 playing the first row with
    probability x gets f(x) = 2/3 min(5x - 2, 1 - 2x) + 1/3 min(6 - 10x, 5x - 3),
    concave with slopes 5, 1/3 and -4 between the kinks 3/7 and 3/5: the value
    is f(3/5) = -2/15."""
    tree = GameTree()
    root = tree.add_decision(0, "start", ["up", "down"])
    for i in range(2):
        weather = tree.add_chance(root, i, label=f"after {'up' if i == 0 else 'down'}")
        for w, (name, probability, matrix) in enumerate([("calm", 2 / 3, CALM), ("storm", 1 / 3, STORM)]):
            node = tree.add_decision(1, name, ["left", "right"], weather, w, probability, label=name)
            for j in range(2):
                tree.add_leaf(matrix[i][j], node, j)
    return tree


def awkward_tree() -> GameTree:
    """Names to quote and to tell apart, and floats with no short fraction."""
    tree = GameTree()
    root = tree.add_chance(label='the "deal"')
    tenths = tree.add_chance(root, 0, 0.5, label="x")  # floats summing to 0.9999999999999999
    for k in range(10):
        node = tree.add_decision(0, ("p1", k % 2), ['say "yes"', "say 'no'", "same", "same", ""], tenths, k, 0.1)
        for a in range(5):
            reply = tree.add_decision(1, "blind", ["a", "b"], node, a)
            tree.add_leaf(0.1 * (k - a) + 1e-3 * np.pi, reply, 0)
            tree.add_leaf(-0.3 + a / 7, reply, 1)
    near = tree.add_chance(root, 1, 0.5, label="x")  # rationals that need the largest made up to one
    for k, p in enumerate([1 / 3 + 2e-13, 1 / 3, 1 / 3 - 1e-13]):
        tree.add_leaf(k - 1.25, near, k, p)
    return tree


TREES = {
    "matrix": (lambda: matrix_tree(CALM), Fraction(1, 7)),
    "kuhn": (kuhn_poker, Fraction(-1, 18)),
    "weather": (weather_game, Fraction(-2, 15)),
}


def preorder(tree: GameTree) -> list[int]:
    order, stack = [], [0]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(reversed(tree.children[node]))
    return order


def gambit_preorder(root) -> list:
    order, stack = [], [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(reversed(list(node.children)))
    return order


@pytest.mark.parametrize("name", [*TREES, "awkward"])
def test_gambit_reads_back_the_tree_node_for_node(name):
    gbt = pytest.importorskip("pygambit", reason="the crosscheck extra (pygambit) is not installed")
    tree = awkward_tree() if name == "awkward" else TREES[name][0]()
    game = gbt.read_efg(io.StringIO(write_efg(tree, title=f'the "{name}" tree')))
    assert game.title == f'the "{name}" tree'
    assert [p.label for p in game.players] == list(PLAYERS)
    for seat, player in enumerate(game.players):
        ours = tree.infosets_of(seat)
        assert len(player.infosets) == len(ours)
        for i, infoset in zip(ours, player.infosets):
            labels = [a.label for a in infoset.actions]
            assert len(set(labels)) == len(labels) == len(tree.infosets[i].actions)
            if name != "awkward":
                assert labels == list(tree.infosets[i].actions)
    theirs = gambit_preorder(game.root)
    assert len(theirs) == len(tree)
    labelled = [node.label for node in theirs if node.label]
    assert len(set(labelled)) == len(labelled)  # Gambit wants them unique: repeats are numbered
    members: dict[tuple[int, int], set] = {}
    node_labels: list[str] = []
    for node, other in zip(preorder(tree), theirs):
        node_labels.append(tree.label[node])
        assert other.label in (tree.label[node], f"{tree.label[node]} #{node_labels.count(tree.label[node])}")
        if tree.player[node] == LEAF:
            assert other.is_terminal
            payoff = [Fraction(other.outcome[p]) for p in game.players]
            assert payoff[0] == -payoff[1] and float(payoff[0]) == tree.payoff[node]
        elif tree.player[node] == CHANCE:
            assert other.infoset.is_chance
            probabilities = [Fraction(a.prob) for a in other.infoset.actions]
            assert sum(probabilities) == 1
            for child, p in zip(tree.children[node], probabilities):
                assert abs(float(p) - tree.probability[child]) <= 1e-12
        else:
            assert other.player.label == PLAYERS[tree.player[node]]
            members.setdefault((tree.player[node], tree.infoset[node]), set()).add(other.infoset)
    assert all(len(sets) == 1 for sets in members.values())  # each of our sets is one of theirs


def test_names_and_numbers_as_written():
    text = write_efg(awkward_tree())
    assert '"the \\"deal\\""' in text
    assert '{ "say \\"yes\\"" "say \'no\'" "same" "same #2" "5" }' in text
    assert '{ "1" 1/10 "2" 1/10 ' in text  # children named alike: outcomes numbered
    third = simplest_fraction(1 / 3 + 2e-13)
    assert third.denominator > 10**9 and float(third) == 1 / 3 + 2e-13
    assert f"{1 - Fraction(1, 3) - simplest_fraction(1 / 3 - 1e-13)}" in text  # the largest made up to one
    plain = write_efg(awkward_tree(), labels=False, decimal=True)
    assert "deal" not in plain and "say" not in plain and '{ "1" 0.1 "2" 0.1 ' in plain and "e-" not in plain
    assert simplest_fraction(-1 / 18) == Fraction(-1, 18) and simplest_fraction(0.1) == Fraction(1, 10)
    for x in np.random.default_rng(3).normal(scale=50, size=1000):
        assert float(simplest_fraction(float(x))) == x


def test_refuses_what_is_not_a_finished_tree():
    tree = GameTree()
    root = tree.add_decision(0, "i", ["a", "b"])
    tree.add_leaf(1.0, root, 0)
    with pytest.raises(ValueError, match="has 1 children for 2 actions"):
        write_efg(tree)
    tree.add_leaf(float("nan"), root, 1)
    with pytest.raises(ValueError, match="not a finite number"):
        write_efg(tree)
    with pytest.raises(ValueError, match="one per node"):
        write_efg(tree, np.zeros(2))


def test_save_writes_whole_files(tmp_path):
    tree = kuhn_poker()
    save_efg(tree, tmp_path / "kuhn.efg", payoffs=2 * tree.payoffs(), title="Kuhn")
    assert (tmp_path / "kuhn.efg").read_text() == write_efg(tree, 2 * tree.payoffs(), "Kuhn")
    assert [p.name for p in tmp_path.iterdir()] == ["kuhn.efg"]
    with pytest.raises(OutputError, match="cannot write"):
        save_efg(tree, tmp_path / "no" / "kuhn.efg")


def our_value(tree: GameTree, payoffs: np.ndarray | None = None) -> float | None:
    """`solver.core.sequence_form`'s value, where that module exists yet."""
    if importlib.util.find_spec("solver.core.sequence_form") is None:
        return None
    from solver.core.sequence_form import solve_tree

    return float(solve_tree(tree, payoffs).value)


@pytest.mark.parametrize("name", TREES)
def test_gambit_and_openspiel_values_agree_with_the_known_value(name):
    build, known = TREES[name]
    tree = build()
    values = crosscheck_values(tree)
    assert values == pytest.approx({"gambit": float(known), "openspiel": float(known)}, abs=1e-9)
    ours = our_value(tree)
    if ours is not None:
        assert ours == pytest.approx(float(known), abs=1e-9)


def test_payoffs_override_the_leaves():
    tree = kuhn_poker()
    payoffs = 2 * tree.payoffs()
    payoffs[tree.leaves()] += 0.5
    values = crosscheck_values(tree, payoffs)  # the same game, scaled and shifted: 2 (-1/18) + 1/2
    assert values == pytest.approx({"gambit": 7 / 18, "openspiel": 7 / 18}, abs=1e-9)
    noisy = tree.payoffs()
    noisy[tree.leaves()] += np.random.default_rng(5).normal(scale=0.1, size=len(tree.leaves()))
    # Milliseconds in floating point; Gambit's rational pivots on these fractions
    # (denominators near 1e8) take half a minute, on payoffs in thousandths 0.05 s.
    values = crosscheck_values(tree, noisy, rational=False)
    assert values["gambit"] == pytest.approx(values["openspiel"], abs=1e-9)
    thousandths = crosscheck_values(tree, noisy.round(3))
    assert thousandths == pytest.approx(crosscheck_values(tree, noisy.round(3), rational=False), abs=1e-9)
    ours = our_value(tree, noisy)
    if ours is not None:
        assert ours == pytest.approx(values["gambit"], abs=1e-9)


def test_gambit_and_openspiel_agree_on_floats_with_no_short_fraction():
    tree = awkward_tree()
    values = crosscheck_values(tree)
    assert values["gambit"] == pytest.approx(values["openspiel"], abs=1e-9)
    ours = our_value(tree)
    if ours is not None:
        assert ours == pytest.approx(values["gambit"], abs=1e-9)


def test_openspiel_reads_the_labelled_rational_file_too():
    pyspiel = pytest.importorskip("pyspiel", reason="the crosscheck extra (open-spiel) is not installed")
    game = pyspiel.load_efg_game(write_efg(kuhn_poker(), title="Kuhn"))
    assert game.get_type().utility == pyspiel.GameType.Utility.ZERO_SUM
    assert game.get_type().information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    state = game.new_initial_state()
    assert [p for _, p in state.chance_outcomes()] == [1 / 6] * 6
