"""Position notation: one line, the two players separated by `/`.

Each player is a list of space-separated tokens, any of which may be left out
(it then takes its start value under the rules in force):

    hN  bN  dN  pN  rest=CARD|-|copy|copy>CARD  bonus=CARD,CARD

`start` alone is the initial position. `format_position` writes the normal
form (h, b, d, p and rest always; bonus= only when non-empty), which
`parse_position` reads back to the same `Position`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from .cards import Card
from .config import RuleSet
from .state import PlayerState, Position, RestCard, initial_player, initial_position

TOKEN_HELP = "hN bN dN pN rest=CARD bonus=CARD,CARD"
_NUMBER = re.compile(r"[0-9]+")
MAX_DIGITS = 9
"""Longest number in a position: far past any rule set's Health, tiles or board, and within a machine integer."""
_NUMBER_TOKENS = {"h": "health", "b": "battery", "d": "disc", "p": "progress"}


class PositionError(ValueError):
    """A position text (or Position) that is malformed or that the rules cannot produce."""


def parse_card(name: str) -> Card:
    """The card called `name` (case-insensitive); PositionError if there is none."""
    try:
        return Card.parse(name)
    except ValueError as exc:
        raise PositionError(str(exc)) from None


def parse_rest(text: str) -> RestCard | None:
    """A rest zone: `-` empty, `CARD`, `copy` (holding nothing) or `copy>CARD`."""
    text = text.strip()
    if text == "-":
        return None
    if not text:
        raise PositionError("needs a card, '-' (empty), 'copy' or 'copy>CARD'")
    if ">" in text:
        holder, copied = text.split(">", 1)
        if parse_card(holder) is not Card.COPY:
            raise PositionError(f"only a Copy holds a copied card, not {holder.strip().lower()}")
        card = parse_card(copied)
        if card is Card.COPY:
            raise PositionError("a Copy never holds a Copy (copying copy>X holds X)")
        return RestCard(Card.COPY, card)
    return RestCard(parse_card(text))


def format_rest(rest: RestCard | None) -> str:
    if rest is None:
        return "-"
    if rest.card is Card.COPY and rest.copied is not None:
        return f"copy>{rest.copied.label}"
    return rest.card.label


def parse_bonus(text: str) -> tuple[Card, ...]:
    """Bonus cards in hand, comma-separated (empty text: none); base cards are errors."""
    if not text.strip():
        return ()
    cards = []
    for name in text.split(","):
        card = parse_card(name)
        if not card.is_bonus:
            raise PositionError(f"{card.label} is a base card; bonus= lists only ray, recovery, trap, copy")
        cards.append(card)
    return tuple(cards)


def _player_tokens(player: PlayerState) -> dict[str, str]:
    """The normal-form token for each field of `player` (bonus only when non-empty)."""
    tokens = {
        "h": f"h{player.health}",
        "b": f"b{player.battery}",
        "d": f"d{player.disc}",
        "p": f"p{player.progress}",
        "rest": f"rest={format_rest(player.rest)}",
    }
    if player.bonus:
        tokens["bonus"] = "bonus=" + ",".join(card.label for card in player.bonus)
    return tokens


def format_player(player: PlayerState) -> str:
    return " ".join(_player_tokens(player).values())


def format_position(position: Position, rules: RuleSet | None = None) -> str:
    """The normal form, e.g. `h4 b2 d0 p0 rest=- / h3 b1 d0 p2 rest=move bonus=ray`.

    `rules` is accepted for symmetry with `parse_position`; the normal form
    writes every field, so it does not depend on them.
    """
    return f"{format_player(position.p1)} / {format_player(position.p2)}"


def _fail(seat: int, token: str, why: str) -> PositionError:
    shown = token if len(token) <= 40 else f"{token[:20]}...{token[-8:]}"  # the line stays one line long
    return PositionError(f"player {seat + 1}, token {shown!r}: {why}")


def _number(text: str, field: str) -> int:
    """The value of a number token's digits; no field of a position runs past `MAX_DIGITS` digits."""
    if not _NUMBER.fullmatch(text):
        raise PositionError(f"{text if len(text) <= 40 else text[:20] + '...'!r} is not a number")
    if len(text) > MAX_DIGITS:
        raise PositionError(f"{field} has {len(text):,} digits; a position's numbers have at most {MAX_DIGITS}")
    return int(text)


def _parse_player(text: str, rules: RuleSet, seat: int) -> tuple[PlayerState, dict[str, str]]:
    """One player's tokens as a PlayerState (omitted fields at their start values),
    and the token text given for each field (for error messages)."""
    start = initial_player(rules, seat)
    values: dict[str, object] = {
        "health": start.health, "battery": start.battery, "disc": start.disc,
        "progress": start.progress, "rest": start.rest, "bonus": start.bonus,
    }
    given: dict[str, str] = {}
    for token in text.split():
        lower = token.lower()
        if "=" in lower:
            kind, _, argument = lower.partition("=")
            if kind not in ("rest", "bonus"):
                raise _fail(seat, token, f"unknown token (tokens: {TOKEN_HELP})")
        elif lower[0] in _NUMBER_TOKENS and (len(lower) == 1 or not lower[1].isalpha()):
            kind, argument = lower[0], lower[1:]
        elif lower == "start":
            raise _fail(seat, token, "'start' stands alone for the whole position")
        else:
            raise _fail(seat, token, f"unknown token (tokens: {TOKEN_HELP})")
        if kind in given:
            raise _fail(seat, token, f"repeated token ({given[kind]!r} already given)")
        given[kind] = token
        try:
            if kind == "rest":
                values["rest"] = parse_rest(argument)
            elif kind == "bonus":
                values["bonus"] = parse_bonus(argument)
            else:
                values[_NUMBER_TOKENS[kind]] = _number(argument, _NUMBER_TOKENS[kind])
        except PositionError as exc:
            raise _fail(seat, token, str(exc)) from None
    return PlayerState(**values), given  # type: ignore[arg-type]


def _check_player(player: PlayerState, rules: RuleSet, seat: int, token: Callable[[str], str]) -> None:
    if not 1 <= player.health <= rules.health:
        extra = " (Health 0 means the game is over)" if player.health == 0 else ""
        raise _fail(seat, token("h"), f"Health must be from 1 to health ({rules.health}){extra}")
    if not 0 <= player.battery <= rules.battery_tiles:
        raise _fail(seat, token("b"), f"Battery must be from 0 to battery_tiles ({rules.battery_tiles})")
    if not 0 <= player.disc <= rules.disc_tiles:
        raise _fail(seat, token("d"), f"Disc must be from 0 to disc_tiles ({rules.disc_tiles})")
    if not 0 <= player.progress < rules.moves_to_moon:
        raise _fail(seat, token("p"), f"p must be below the moon: the board {rules.board!r} has "
                                      f"{rules.moves_to_moon} moves, so p runs 0 to {rules.moves_to_moon - 1}")
    rest = player.rest
    if rest is not None and rest.card is not Card.COPY and rest.copied is not None:
        raise _fail(seat, token("rest"), "only a Copy holds a copied card")
    if rest is not None and rest.copied is Card.COPY:
        raise _fail(seat, token("rest"), "a Copy never holds a Copy (copying copy>X holds X)")
    for card in player.bonus:
        if not card.is_bonus:
            raise _fail(seat, token("bonus"), f"{card.label} is a base card; bonus= lists only bonus cards")


def _check_bonus_counts(position: Position, rules: RuleSet, tokens: list[Callable[[str], str]]) -> None:
    """No bonus card is held (hand or rest, both players together) more often than the rules have it."""
    available = Counter(rules.bonus_cards)
    held: Counter[Card] = Counter()
    for seat, player in enumerate((position.p1, position.p2)):
        holdings = [("rest", player.rest.card)] if player.rest and player.rest.card.is_bonus else []
        holdings += [("bonus", card) for card in player.bonus]
        for kind, card in holdings:
            held[card] += 1
            if held[card] > available[card]:
                pile = ", ".join(c.label for c in rules.bonus_cards) or "none"
                if available[card] == 0:
                    why = f"{card.label} is not among the rule set's bonus cards ({pile})"
                else:
                    why = (f"{card.label} is held {held[card]} times by the two players, "
                           f"but the rule set has {available[card]} (bonus cards: {pile})")
                raise _fail(seat, tokens[seat](kind), why)


def _token_lookup(player: PlayerState, given: dict[str, str]) -> Callable[[str], str]:
    normal = _player_tokens(player)
    return lambda kind: given.get(kind) or normal.get(kind, kind)


def validate_position(position: Position, rules: RuleSet) -> None:
    """PositionError (naming the token) if the rules cannot produce `position`."""
    lookups = [_token_lookup(player, {}) for player in (position.p1, position.p2)]
    for seat, player in enumerate((position.p1, position.p2)):
        _check_player(player, rules, seat, lookups[seat])
    _check_bonus_counts(position, rules, lookups)


def parse_position(text: str, rules: RuleSet) -> Position:
    """The position written `text` under `rules` (see the module docstring)."""
    if not text.isprintable():
        at = next(i for i, c in enumerate(text) if not c.isprintable())
        raise PositionError(f"character {at + 1} is the control character {text[at]!r}; a position is one line of text")
    if text.strip().lower() == "start":
        return initial_position(rules)
    parts = text.split("/")
    if len(parts) != 2:
        raise PositionError(
            f"expected the two players separated by one '/', found {len(parts) - 1} in {text.strip()!r}"
        )
    players: list[PlayerState] = []
    lookups: list[Callable[[str], str]] = []
    for seat, part in enumerate(parts):
        player, given = _parse_player(part, rules, seat)
        lookup = _token_lookup(player, given)
        _check_player(player, rules, seat, lookup)
        players.append(player)
        lookups.append(lookup)
    position = Position(players[0], players[1])
    _check_bonus_counts(position, rules, lookups)
    return position
