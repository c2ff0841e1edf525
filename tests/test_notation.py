"""Position notation: parsing, the normal form, round trips and error messages."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rules.charge_spark.cards import BASE_CARDS, BONUS_CARDS, COPYABLE_CARDS, Card
from rules.charge_spark.config import RuleSet
from rules.charge_spark.notation import (
    PositionError,
    format_position,
    format_rest,
    parse_card,
    parse_position,
    parse_rest,
    validate_position,
)
from rules.charge_spark.state import PlayerState, Position, RestCard, initial_position

DEFAULT = RuleSet()


def test_start_is_the_initial_position() -> None:
    for rules in (DEFAULT, RuleSet(health=6, start_battery=0, start_disc=3, board="S*M")):
        assert parse_position("start", rules) == initial_position(rules)
        assert parse_position("  START ", rules) == initial_position(rules)
        assert parse_position("/", rules) == initial_position(rules)  # every token left out
    assert format_position(parse_position("start", DEFAULT), DEFAULT) == (
        "h4 b2 d0 p0 rest=- / h4 b2 d0 p0 rest=-"
    )


def test_spec_example() -> None:
    position = parse_position("h3 b1 rest=spark / h4 p2 rest=move bonus=ray", DEFAULT)
    assert position == Position(
        PlayerState(health=3, battery=1, disc=0, progress=0, rest=RestCard(Card.SPARK)),
        PlayerState(health=4, battery=2, disc=0, progress=2, rest=RestCard(Card.MOVE), bonus=(Card.RAY,)),
    )
    assert format_position(position, DEFAULT) == "h3 b1 d0 p0 rest=spark / h4 b2 d0 p2 rest=move bonus=ray"


def test_normal_form_example() -> None:
    text = "h4 b2 d0 p0 rest=- / h3 b1 d0 p2 rest=move bonus=ray"
    assert format_position(parse_position(text, DEFAULT), DEFAULT) == text


def test_omitted_tokens_take_start_values_of_the_rules() -> None:
    rules = RuleSet(health=6, start_battery=1, start_disc=2)
    position = parse_position("h2 / p1", rules)
    assert position.p1 == PlayerState(health=2, battery=1, disc=2)
    assert position.p2 == PlayerState(health=6, battery=1, disc=2, progress=1)


def test_copy_in_the_rest_zone() -> None:
    two_copies = RuleSet(bonus_cards=(Card.COPY, Card.COPY))
    position = parse_position("rest=copy>lightning / rest=copy", two_copies)
    assert position.p1.rest == RestCard(Card.COPY, Card.LIGHTNING)
    assert position.p2.rest == RestCard(Card.COPY)
    assert format_position(position, two_copies) == "h4 b2 d0 p0 rest=copy>lightning / h4 b2 d0 p0 rest=copy"
    assert parse_rest("COPY>Ray") == RestCard(Card.COPY, Card.RAY)
    assert format_rest(None) == "-" and parse_rest("-") is None


def test_case_insensitive_and_any_token_order() -> None:
    a = parse_position("BONUS=Trap,RAY rest=Copy>Spark H2 p3/h1", DEFAULT)
    b = parse_position("h2 p3 rest=copy>spark bonus=ray,trap / h1", DEFAULT)
    assert a == b
    assert a.p1.bonus == (Card.RAY, Card.TRAP)
    assert parse_card("LiGhTnInG") is Card.LIGHTNING


def test_multiset_bonus_cards() -> None:
    rules = RuleSet(bonus_cards=(Card.COPY, Card.COPY, Card.RAY))
    position = parse_position("rest=copy>move bonus=copy / bonus=ray", rules)
    assert position.p1.held_bonus()[Card.COPY] == 2
    assert format_position(position, rules) == "h4 b2 d0 p0 rest=copy>move bonus=copy / h4 b2 d0 p0 rest=- bonus=ray"
    with pytest.raises(PositionError, match="copy is held 3 times"):
        parse_position("rest=copy bonus=copy / bonus=copy", rules)


# (text, the token the message must name, words of the reason)
BAD_TEXTS = [
    ("h3", None, "one '/'"),
    ("h3 / h4 / h2", None, "found 2"),
    ("", None, "found 0"),
    ("x / ", "player 1, token 'x'", "unknown token"),
    ("/ hello", "player 2, token 'hello'", "unknown token"),
    ("/ bonus", "player 2, token 'bonus'", "unknown token"),
    ("/ gold=3", "player 2, token 'gold=3'", "unknown token"),
    ("start / start", "player 1, token 'start'", "stands alone"),
    ("h3 h4 /", "token 'h4'", "repeated token ('h3' already given)"),
    ("/ rest=spark rest=move", "player 2, token 'rest=move'", "repeated token"),
    ("bonus=ray bonus=trap /", "token 'bonus=trap'", "repeated token"),
    ("h /", "token 'h'", "not a number"),
    ("h3x /", "token 'h3x'", "not a number"),
    ("b-1 /", "token 'b-1'", "not a number"),
    ("d1.5 /", "token 'd1.5'", "not a number"),
    ("h0 /", "token 'h0'", "Health must be from 1 to health (4)"),
    ("h5 /", "token 'h5'", "Health must be from 1 to health (4)"),
    ("/ b5", "player 2, token 'b5'", "Battery must be from 0 to battery_tiles (4)"),
    ("d9 /", "token 'd9'", "Disc must be from 0 to disc_tiles (4)"),
    ("p5 /", "token 'p5'", "p must be below the moon"),
    ("p9 /", "token 'p9'", "p runs 0 to 4"),
    ("rest=zap /", "token 'rest=zap'", "unknown card 'zap'"),
    ("rest= /", "token 'rest='", "needs a card"),
    ("rest=copy>zap /", "token 'rest=copy>zap'", "unknown card 'zap'"),
    ("rest=copy>copy /", "token 'rest=copy>copy'", "never holds a Copy"),
    ("rest=spark>move /", "token 'rest=spark>move'", "only a Copy holds"),
    ("bonus=zap /", "token 'bonus=zap'", "unknown card 'zap'"),
    ("bonus=ray,,trap /", "token 'bonus=ray,,trap'", "unknown card ''"),
    ("bonus=spark /", "token 'bonus=spark'", "spark is a base card"),
    ("bonus=ray,ray /", "token 'bonus=ray,ray'", "ray is held 2 times"),
    ("rest=trap / bonus=trap", "player 2, token 'bonus=trap'", "trap is held 2 times"),
    ("bonus=copy / rest=copy>lightning", "player 2, token 'rest=copy>lightning'", "copy is held 2 times"),
]


@pytest.mark.parametrize("text, token, reason", BAD_TEXTS)
def test_errors_name_the_token_and_why(text: str, token: str | None, reason: str) -> None:
    with pytest.raises(PositionError) as info:
        parse_position(text, DEFAULT)
    message = str(info.value)
    assert "\n" not in message
    if token is not None:
        assert token in message, message
    assert reason in message, message


def test_bonus_card_not_in_the_rule_set() -> None:
    rules = RuleSet(bonus_cards=(Card.RAY,))
    with pytest.raises(PositionError, match=r"token 'rest=trap'.*not among the rule set's bonus cards \(ray\)"):
        parse_position("rest=trap /", rules)
    with pytest.raises(PositionError, match="not among"):
        parse_position("/ bonus=copy", RuleSet(bonus_cards=()))


def test_limits_follow_the_rules() -> None:
    rules = RuleSet(board="S*M", health=2, battery_tiles=1, start_battery=1, disc_tiles=0)
    assert parse_position("h2 b1 d0 p1 /", rules).p1.progress == 1
    for text, token in [("p2 /", "p2"), ("h3 /", "h3"), ("b2 /", "b2"), ("d1 /", "d1")]:
        with pytest.raises(PositionError, match=f"token '{token}'"):
            parse_position(text, rules)


def test_position_error_is_a_value_error() -> None:
    assert issubclass(PositionError, ValueError)


def test_validate_position_names_the_normal_form_token() -> None:
    bad = Position(PlayerState(health=0, battery=0, disc=0), PlayerState(health=4, battery=2, disc=0))
    with pytest.raises(PositionError, match="player 1, token 'h0'"):
        validate_position(bad, DEFAULT)
    validate_position(initial_position(DEFAULT), DEFAULT)


# ---------------------------------------------------- random valid positions

RULE_SETS = [
    DEFAULT,
    RuleSet(board="S*M", health=2, battery_tiles=1, start_battery=0, disc_tiles=0),
    RuleSet(board="S..**.*M", health=7, battery_tiles=6, disc_tiles=5, start_disc=5,
            bonus_cards=(Card.COPY, Card.COPY, Card.RAY, Card.RAY, Card.TRAP)),
    RuleSet(bonus_cards=()),
]


@st.composite
def positions(draw: st.DrawFn) -> tuple[RuleSet, Position]:
    """A rule set and a valid position under it, from random valid field values."""
    rules = draw(st.sampled_from(RULE_SETS))
    # Deal each of the rule set's bonus cards to the pile, a hand or a rest zone.
    pool = draw(st.permutations(rules.bonus_cards))
    owners = draw(st.lists(st.integers(0, 4), min_size=len(pool), max_size=len(pool)))
    hands: list[list[Card]] = [[], []]
    rest_bonus: list[Card | None] = [None, None]
    for card, owner in zip(pool, owners):
        if owner in (1, 2):
            hands[owner - 1].append(card)
        elif owner in (3, 4) and rest_bonus[owner - 3] is None:
            rest_bonus[owner - 3] = card
    players = []
    for seat in range(2):
        card = rest_bonus[seat]
        if card is None:
            rest = draw(st.one_of(st.none(), st.sampled_from(BASE_CARDS).map(RestCard)))
        elif card is Card.COPY:
            rest = RestCard(Card.COPY, draw(st.one_of(st.none(), st.sampled_from(COPYABLE_CARDS))))
        else:
            rest = RestCard(card)
        players.append(PlayerState(
            health=draw(st.integers(1, rules.health)),
            battery=draw(st.integers(0, rules.battery_tiles)),
            disc=draw(st.integers(0, rules.disc_tiles)),
            progress=draw(st.integers(0, rules.moves_to_moon - 1)),
            rest=rest,
            bonus=tuple(hands[seat]),
        ))
    return rules, Position(players[0], players[1])


@settings(max_examples=300, deadline=None)
@given(positions())
def test_round_trip(case: tuple[RuleSet, Position]) -> None:
    rules, position = case
    validate_position(position, rules)
    text = format_position(position, rules)
    assert "\n" not in text and text.count("/") == 1
    assert parse_position(text, rules) == position
    swapped = format_position(position.swapped(), rules)
    assert parse_position(swapped, rules) == position.swapped()


@settings(max_examples=200, deadline=None)
@given(positions(), st.data())
def test_shuffled_recased_and_omitted_tokens_parse_the_same(case: tuple[RuleSet, Position], data: st.DataObject) -> None:
    rules, position = case
    start = initial_position(rules).p1
    sides = []
    for side in format_position(position, rules).split(" / "):
        tokens = side.split()
        # A token equal to its start value may be left out.
        default_tokens = set(format_position(Position(start, start), rules).split(" / ")[0].split())
        kept = [t for t in tokens if t not in default_tokens or data.draw(st.booleans())]
        kept = data.draw(st.permutations(kept))
        kept = [t.upper() if data.draw(st.booleans()) else t for t in kept]
        sides.append(" ".join(kept))
    text = "/".join(sides)
    assert parse_position(text, rules) == position, text


def test_bonus_cards_are_written_in_card_order() -> None:
    position = parse_position("bonus=trap,ray / ", DEFAULT)
    assert format_position(position, DEFAULT).startswith("h4 b2 d0 p0 rest=- bonus=ray,trap /")
    assert set(BONUS_CARDS) >= set(position.p1.bonus)
