"""A `GameTree`'s value from Gambit and from OpenSpiel, each reading our .efg
export of it: an independent check for any test that builds a tree.

Gambit reads the rational file and solves the sequence-form LP in exact
rational arithmetic; the file is unlabelled, since Gambit's reader is
quadratic in labelled nodes. OpenSpiel's reader takes rationals only with 32-bit
parts and no escaped quotes in names, so it gets the decimal, unlabelled
file; its sequence-form LP is solved by GLPK (cvxpy reaches it through
cvxopt), since cvxpy's default ECOS stops at tolerances of 1e-7 (Kuhn poker
comes out 7e-10 off). Tests calling these skip where the `crosscheck` extra
is not installed.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from solver.core.efg import PLAYERS, write_efg
from solver.core.game_tree import GameTree


def gambit_value(tree: GameTree, payoffs: np.ndarray | None = None, rational: bool = True) -> float:
    """Player 1's equilibrium payoff by `pygambit.nash.lp_solve` on the written file."""
    gbt = pytest.importorskip("pygambit", reason="the crosscheck extra (pygambit) is not installed")
    game = gbt.read_efg(io.StringIO(write_efg(tree, payoffs, labels=False)))
    result = gbt.nash.lp_solve(game, rational=rational)
    return float(result.equilibria[0].payoff(game.players[PLAYERS[0]]))


def openspiel_value(tree: GameTree, payoffs: np.ndarray | None = None) -> float:
    """Player 1's value by OpenSpiel's `sequence_form_lp.solve_zero_sum_game` on the written file."""
    pyspiel = pytest.importorskip("pyspiel", reason="the crosscheck extra (open-spiel) is not installed")
    pytest.importorskip("cvxopt", reason="GLPK for OpenSpiel's LP comes with cvxopt (crosscheck extra)")
    from open_spiel.python.algorithms import sequence_form_lp

    game = pyspiel.load_efg_game(write_efg(tree, payoffs, labels=False, decimal=True))
    value, minus_value, _, _ = sequence_form_lp.solve_zero_sum_game(game, solver="GLPK")
    # The two LPs are solved separately: their optima agree up to GLPK's rounding.
    assert abs(value + minus_value) <= 1e-9, (value, minus_value)
    return float(value)


def crosscheck_values(tree: GameTree, payoffs: np.ndarray | None = None, *, rational: bool = True) -> dict[str, float]:
    """{"gambit": ..., "openspiel": ...}: player 1's value of `tree` (leaf payoffs `payoffs` if given) by each.

    Gambit's rational arithmetic slows down on long fractions: Kuhn poker with
    payoffs at full double precision takes 30 s where `rational=False` (Gambit
    in floating point) takes 3 ms."""
    return {"gambit": gambit_value(tree, payoffs, rational), "openspiel": openspiel_value(tree, payoffs)}
