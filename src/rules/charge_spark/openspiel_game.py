"""Charge & Spark as an OpenSpiel game (needs the `crosscheck` extra; pyspiel is
imported only by this module).

Two players, zero-sum, simultaneous moves, perfect information, and explicit
chance: when a turn has several outcomes (a contested bonus draw, the draw of
a bonus card), the state after both cards is a chance node over them. OpenSpiel
games must end, and Charge & Spark can loop forever, so the game takes a
`horizon` (turns; 0 = none, for tools that handle cycles): at the horizon play
stops as unending. Returns are +1 / -1 for a win / loss and 0 for unending,
i.e. 2 v - 1 for our value v. Parameter `rules` is a rules file's TOML text
(default: the default rules); `overrides` a ';'-separated list of `--set`
items, written KEY:VALUE inside a game string, e.g. "board:SM;health:1".

    import rules.charge_spark.openspiel_game  # registers "charge_spark"
    game = pyspiel.load_game("charge_spark(overrides=board:SM;health:1,horizon=30)")
"""

from __future__ import annotations

import pyspiel

from .cards import Card
from .config import RuleSet, apply_overrides, rules_from_toml
from .notation import format_position
from .state import initial_position
from .turn import Winner, legal_cards, resolve_turn

SHORT_NAME = "charge_spark"
_DEFAULT_PARAMS = {"rules": "", "overrides": "", "horizon": 100}

_GAME_TYPE = pyspiel.GameType(
    short_name=SHORT_NAME,
    long_name="Charge & Spark",
    dynamics=pyspiel.GameType.Dynamics.SIMULTANEOUS,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.PERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=2,
    min_num_players=2,
    provides_information_state_string=False,
    provides_information_state_tensor=False,
    provides_observation_string=False,
    provides_observation_tensor=False,
    parameter_specification=_DEFAULT_PARAMS,
)


def _rules_of(params: dict) -> RuleSet:
    base = rules_from_toml(params["rules"], "rules parameter") if params.get("rules") else RuleSet()
    # A game string cannot hold '=' inside a value, so KEY:VALUE is accepted too.
    items = [item if "=" in item else item.replace(":", "=", 1)
             for item in str(params.get("overrides", "")).split(";") if item.strip()]
    return apply_overrides(base, items)


class ChargeSparkOpenSpielGame(pyspiel.Game):
    def __init__(self, params: dict | None = None) -> None:
        params = {**_DEFAULT_PARAMS, **(params or {})}
        self.rules = _rules_of(params)
        self.horizon = int(params["horizon"])
        info = pyspiel.GameInfo(
            num_distinct_actions=len(Card),
            max_chance_outcomes=8,
            num_players=2,
            min_utility=-1.0,
            max_utility=1.0,
            utility_sum=0.0,
            max_game_length=2 * self.horizon if self.horizon else 10**9,
        )
        super().__init__(_GAME_TYPE, info, params)

    def new_initial_state(self) -> ChargeSparkOpenSpielState:
        return ChargeSparkOpenSpielState(self)


class ChargeSparkOpenSpielState(pyspiel.State):
    def __init__(self, game: ChargeSparkOpenSpielGame) -> None:
        super().__init__(game)
        self.rules = game.rules
        self.horizon = game.horizon
        self.position = initial_position(self.rules)
        self.turn = 0
        self.winner: Winner | None = None
        self.pending: list | None = None  # chance outcomes of the last turn, while unresolved

    def current_player(self) -> int:
        if self.is_terminal():
            return pyspiel.PlayerId.TERMINAL
        if self.pending is not None:
            return pyspiel.PlayerId.CHANCE
        return pyspiel.PlayerId.SIMULTANEOUS

    def _legal_actions(self, player: int) -> list[int]:
        side = self.position.p1 if player == 0 else self.position.p2
        return [int(card) for card in legal_cards(self.rules, side, player)]

    def chance_outcomes(self) -> list[tuple[int, float]]:
        return [(k, float(p)) for k, (p, _) in enumerate(self.pending)]

    def _settle(self, result) -> None:
        self.pending = None
        if isinstance(result, Winner):
            self.winner = result
        else:
            self.position = result

    def _apply_actions(self, actions: list[int]) -> None:
        outcomes = resolve_turn(self.rules, self.position, Card(actions[0]), Card(actions[1]))
        self.turn += 1
        if len(outcomes) == 1:
            self._settle(outcomes[0][1])
        else:
            self.pending = outcomes

    def _apply_action(self, action: int) -> None:  # a chance outcome
        self._settle(self.pending[action][1])

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"outcome {action}"
        return Card(action).label

    def is_terminal(self) -> bool:
        return self.winner is not None or (self.horizon > 0 and self.turn >= self.horizon and self.pending is None)

    def returns(self) -> list[float]:
        if self.winner is None:
            return [0.0, 0.0]
        return [1.0, -1.0] if self.winner.seat == 0 else [-1.0, 1.0]

    def __str__(self) -> str:
        text = format_position(self.position, self.rules)
        if self.horizon:
            text += f" | turn {self.turn}"
        if self.pending is not None:
            text += " | drawing"
        if self.winner is not None:
            text += f" | {self.winner.name} wins"
        return text


pyspiel.register_game(_GAME_TYPE, ChargeSparkOpenSpielGame)
