"""A game seen through a change to how its players may act (a barred card, a
fixed policy): the outcomes, payoffs and progress rank stay the game's own."""

from __future__ import annotations

from ..core.protocol import StochasticGame


class WrappedGame:
    """The attributes a wrapper keeps from `game` unchanged; subclasses give `expand`."""

    def __init__(self, game: StochasticGame) -> None:
        self.game = game
        self.action_labels = game.action_labels
        self.terminal_labels = game.terminal_labels
        self.terminal_winners = game.terminal_winners
        self.terminal_kinds = game.terminal_kinds
        self.terminal_payoff = game.terminal_payoff
        self.unending_payoff = game.unending_payoff
        if hasattr(game, "progress_rank"):
            # Barring actions or putting chance in place of a player's choice adds no
            # transition: the rank still never falls (rank-by-rank solve).
            self.progress_rank = game.progress_rank
        if hasattr(game, "encoding_layout"):
            # The same state codes: a table of the unwrapped game can seed a solve of this one.
            self.encoding_layout = game.encoding_layout

    def encode(self, position) -> int:
        return self.game.encode(position)
