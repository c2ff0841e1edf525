"""`charge-spark explore`: its API gives what `query --json` gives, its turns
and coach add up, bad input is one line and a 400, nothing outside its own
pages is served, user text is escaped, and a real browser can use it."""

from __future__ import annotations

import json
import re
import signal
import socket
import time
import tomllib
from fractions import Fraction
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import numpy as np
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from explore_browser import ExploreServer, chrome, console, missing_browser, screenshot_page
from rules.charge_spark.cards import Card
from rules.charge_spark.config import RuleSet, apply_overrides, fingerprint
from rules.charge_spark.game import ChargeSparkGame
from rules.charge_spark.notation import format_position, parse_position
from rules.charge_spark.turn import resolve_turn
from solver.cli import main
from solver.core.table_file import table_path
from solver.core.table_reader import TableReader
from solver.explore.answers import Explorer
from solver.explore.app import create_app
from solver.explore.coach import COST_TOLERANCE
from solver.storage import TABLE_FORMAT
from solver.tables import readers_kept_open, solved_table

# Small variants, each solved once for the module: one with a star and bonus draws (no Battery at the
# start, so a game lasts more than one Lightning), one with neither.
TINY = ["board=S*M", "health=1", "battery_tiles=2", "start_battery=0", "disc_tiles=2", "bonus_cards=ray,copy"]
BARE = ["board=SM", "health=1", "bonus_cards="]
VARIANTS = {"tiny": TINY, "bare": BARE}


def settings(overrides: list[str]) -> list[str]:
    return [item for override in overrides for item in ("--set", override)]


class Table:
    """A solved variant: its rules, cache and an in-process client of the explorer."""

    def __init__(self, overrides: list[str], cache_dir) -> None:
        self.overrides = overrides
        self.rules = apply_overrides(RuleSet(), overrides)
        self.cache_dir = str(cache_dir)
        solved_table(self.rules, self.cache_dir)
        self.explorer = Explorer(self.rules, self.cache_dir)
        self.client = TestClient(create_app(self.explorer))

    def positions(self, count: int, seed: int = 0) -> list[str]:
        """`count` random positions of the table (every state stored is reachable from the start)."""
        key = fingerprint(self.rules)
        reader = TableReader(table_path(self.cache_dir, key), key, TABLE_FORMAT)
        states = reader.take("states", 0, reader.num_states)
        game = ChargeSparkGame(self.rules)
        codes = np.random.default_rng(seed).choice(states, count, replace=False)
        return [format_position(game.decode(int(code))) for code in codes]

    def cli(self, *args: str):
        return CliRunner().invoke(main, [*args, *settings(self.overrides), "--cache-dir", self.cache_dir])


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    cache = tmp_path_factory.mktemp("explore-tables")
    with readers_kept_open():  # as the server runs
        made = {name: Table(overrides, cache) for name, overrides in VARIANTS.items()}
        yield made
        for table in made.values():
            table.client.app.state.rule_sets.solves.stop()


@pytest.fixture(scope="module")
def tiny(tables) -> Table:
    return tables["tiny"]


# --- the API against the command line --------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_api_query_is_exactly_query_json_at_random_reachable_positions(tables, variant):
    table = tables[variant]
    for position in ["start", *table.positions(6, seed=len(variant))]:
        done = table.cli("query", position, "--json")
        assert done.exit_code == 0, done.output
        response = table.client.get("/api/query", params={"position": position})
        assert response.status_code == 200
        assert response.json() == json.loads(done.stdout)


def test_api_query_normalises_the_position_it_is_given(tiny):
    answer = tiny.client.get("/api/query", params={"position": "b1 rest=spark / rest=move"}).json()
    assert answer["position"] == "h1 b1 d0 p0 rest=spark / h1 b0 d0 p0 rest=move"
    assert answer["fingerprint"] == fingerprint(tiny.rules)


def test_api_step_gives_the_rules_outcomes_whose_values_make_the_stage_matrix(tiny):
    """Each cell of the stage matrix is the chance-weighted value of the positions its pair leads to."""
    for position in ["start", *tiny.positions(5, seed=3)]:
        answer = tiny.client.get("/api/query", params={"position": position}).json()
        matrix = answer["matrix"]
        for i, p1 in enumerate(matrix["rows"]):
            for j, p2 in enumerate(matrix["cols"]):
                step = tiny.client.get("/api/step", params={"position": position, "p1": p1, "p2": p2}).json()
                outcomes = step["outcomes"]
                assert sum(Fraction(o["chance"]) for o in outcomes) == 1
                expected = resolve_turn(tiny.rules, parse_position(position, tiny.rules), Card.parse(p1), Card.parse(p2))
                assert [Fraction(o["chance"]) for o in outcomes] == [p for p, _ in expected]
                value = 0.0
                for o in outcomes:
                    if o["winner"] is not None:
                        assert o["position"] is None and o["winner_seat"] in (1, 2) and o["kind"] in ("knock-out", "moon")
                        value += o["probability"] * (1.0 if o["winner_seat"] == 1 else 0.0)
                    else:
                        after = tiny.client.get("/api/query", params={"position": o["position"]}).json()
                        value += o["probability"] * after["value"]
                assert value == pytest.approx(matrix["values"][i][j], abs=1e-12)


def test_a_move_onto_a_star_draws_each_bonus_card_with_its_chance(tiny):
    step = tiny.client.get("/api/step", params={"position": "start", "p1": "move", "p2": "charge"}).json()
    draws = sorted((o["p1_draws"], o["chance"]) for o in step["outcomes"])
    assert draws == [(["copy"], "1/2"), (["ray"], "1/2")]
    assert all(o["position"].startswith("h1 b0 d0 p1 rest=move bonus=") for o in step["outcomes"])


# --- bad input --------------------------------------------------------------------------------

BAD_POSITIONS = {
    "health out of range": "h5 / h1",
    "unknown token": "x1 / h1",
    "no slash": "h1 b2",
    "unknown card in rest": "rest=sword / h1",
    "script": "<script>alert('x')</script>",
    "path": "../../etc/passwd",
    "empty": "",
}


@pytest.mark.parametrize("text", BAD_POSITIONS.values(), ids=BAD_POSITIONS.keys())
def test_a_bad_position_is_a_400_with_the_clis_line(tiny, text):
    done = tiny.cli("query", text, "--json")
    assert done.exit_code == 2
    cli_line = done.stderr.strip()
    response = tiny.client.get("/api/query", params={"position": text})
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/json")
    assert cli_line == f"charge-spark: error: {response.json()['error']}"
    step = tiny.client.get("/api/step", params={"position": text, "p1": "charge", "p2": "charge"})
    assert step.status_code == 400 and step.json() == response.json()


BAD_CARDS = {
    "unknown card": ({"p1": "sword", "p2": "charge"}, "unknown card 'sword'"),
    "unaffordable": ({"p1": "counter", "p2": "charge"}, "P1 cannot play counter"),
    "not in hand": ({"p1": "charge", "p2": "ray"}, "P2 cannot play ray"),
    "missing": ({"p1": "charge"}, "no card given for P2"),
}


@pytest.mark.parametrize("cards,expected", BAD_CARDS.values(), ids=BAD_CARDS.keys())
def test_a_bad_card_is_a_400_naming_it(tiny, cards, expected):
    response = tiny.client.get("/api/step", params={"position": "start", **cards})
    assert response.status_code == 400
    error = response.json()["error"]
    assert expected in error and "\n" not in error
    if "sword" in expected:  # the CLI's own line for an unknown card
        done = tiny.cli("query", "rest=sword / h1", "--json")
        assert done.stderr.strip().endswith(error)


def test_an_html_string_in_the_position_box_is_escaped(tiny):
    attack = '"><script>alert(1)</script><img src=x onerror=alert(2)>'
    response = tiny.client.get("/", params={"position": attack})
    assert response.status_code == 400
    page = response.text
    assert "<script>alert" not in page and "<img" not in page
    assert 'value="&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;"' in page  # the box
    assert "&lt;script&gt;alert(1)&lt;" in page.split('id="error"')[1]  # the message (the token up to '/'), as text
    assert page.count("<script>") == 1  # the page's own


def test_a_rule_sets_name_is_escaped_everywhere(tiny):
    rules = apply_overrides(tiny.rules, ["name=<b>bold</b> & <script>x()</script>"])
    assert fingerprint(rules) == fingerprint(tiny.rules)  # a name does not change the game: same table
    client = TestClient(create_app(Explorer(rules, tiny.cache_dir)))
    for path in ("/", f"/coach?{urlencode({'seed': 1, 'moves': 'charge'})}"):
        page = client.get(path).text
        assert "&lt;b&gt;bold&lt;/b&gt; &amp; &lt;script&gt;x()&lt;/script&gt;" in page
        assert "<b>bold" not in page and page.count("<script>") == 1


def test_pages_and_api_carry_no_traceback_and_refuse_other_methods(tiny):
    assert tiny.client.put("/api/query", params={"position": "start"}).status_code == 405
    assert tiny.client.post("/api/step", params={"position": "start"}).status_code == 405
    assert tiny.client.post("/rules", params={"position": "start"}).status_code == 405
    refused = tiny.client.post("/api/query", params={"position": "start"})  # neither the page's token nor the header
    assert refused.status_code == 403 and "token" in refused.json()["error"]
    response = tiny.client.get("/?position=h9%20/%20h9")
    assert response.status_code == 400 and "Traceback" not in response.text
    assert "player 1, token &#39;h9&#39;" in response.text
    assert "default-src 'none'" in response.headers["content-security-policy"]


@pytest.fixture(scope="module")
def server(tiny):
    """The command itself, on a free port, over the tiny table."""
    with ExploreServer([*settings(TINY), "--cache-dir", tiny.cache_dir]) as running:
        yield running


def test_the_address_is_printed_once_ctrl_c_reaches_the_server(tiny):
    # Printed before uvicorn's handlers were in place, a Ctrl-C right after the address could
    # land while the event loop was being built, and Python printed that loop's half-built
    # state as a traceback on the way out.
    from solver.explore.serve import _server, _stop_solves, listen

    sock = listen("127.0.0.1", 0)
    handlers = []

    def listening() -> None:
        handlers.append(signal.getsignal(signal.SIGINT))
        server.should_exit = True

    server = _server(tiny.explorer, "127.0.0.1", listening)
    before = signal.getsignal(signal.SIGINT)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        _stop_solves(server)
    assert handlers == [server.handle_exit]
    assert signal.getsignal(signal.SIGINT) == before  # given back once it stopped


def raw_get(url: str, target: str, host: str | None = None, headers: str = "") -> tuple[int, str]:
    """GET `target` sent byte for byte (no client tidies the path up), with `headers` (lines ending CRLF) too."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {host or parts.netloc}\r\n{headers}Connection: close\r\n\r\n"
                     .encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.decode(errors="replace").partition("\r\n\r\n")
    return int(head.split()[1]), body


TRAVERSALS = ["/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/..%2f..%2f..%2fetc%2fpasswd",
              "/api/../../../../etc/passwd", "/static/../../../etc/passwd", "//etc/passwd",
              "/%2e%2e%5c%2e%2e%5cetc%5cpasswd", "/coach/../../etc/passwd", "/etc/passwd%00"]


@pytest.mark.parametrize("target", TRAVERSALS)
def test_nothing_but_its_own_pages_is_served(server, target):
    status, body = raw_get(server.url, target)
    assert status in (400, 404)
    assert "root:" not in body and "Traceback" not in body


def test_a_position_naming_a_file_is_a_bad_position(server):
    status, body = raw_get(server.url, "/api/query?position=..%2F..%2F..%2Fetc%2Fpasswd")
    assert status == 400 and "root:" not in body and json.loads(body)["error"].startswith("expected the two players")


def test_the_server_refuses_10000_parameters_and_goes_on_answering(server):
    # The HTTP layer refuses a request line past 32 KB before the application sees it, and says so.
    status, body = raw_get(server.url, "/api/query?position=start&" + "&".join(["set=health=1"] * 10_000))
    assert status == 414 and "Traceback" not in body
    status, body = raw_get(server.url, "/api/query?position=start&" + "&".join(["set=health=1"] * 1_000))
    assert status == 400 and json.loads(body)["error"].startswith("too many query parameters (1,001")
    assert raw_get(server.url, "/api/query?position=start")[0] == 200


def test_an_oversized_address_is_a_414_and_oversized_headers_a_431_not_a_closed_connection(server):
    status, body = raw_get(server.url, "/api/query?position=start&x=" + "a" * 1_000_000)
    assert status == 414 and body.startswith("the address is too long") and body.count("\n") == 1
    status, body = raw_get(server.url, "/api/query?position=start", headers=f"X-Big: {'b' * 200_000}\r\n")
    assert status == 431 and body.startswith("the request's headers are too large") and body.count("\n") == 1
    status, body = raw_get(server.url, "/api/query?position=start", headers="".join(
        f"X-Many-{i}: {'c' * 100}\r\n" for i in range(2_000)))
    assert status == 431
    assert raw_get(server.url, "/api/query?position=start")[0] == 200  # and it goes on answering


def test_positions_found_by_a_hostile_sweep_are_a_400_in_one_line(tiny):
    for position in (b"h" + b"9" * 29 + b"%20/", b"h1%0a/", b"h1%0d%0a/%20h1", b"%1b[31mh1%20/"):
        for path in ("/api/query", "/", "/api/step", "/coach"):
            status, body = asgi_get(tiny.client.app, path, b"position=" + position + b"&p1=charge&p2=charge")
            assert status == 400, (position, path, body[:200])
            if path.startswith("/api/"):
                error = json.loads(body)["error"]
                assert "\n" not in error and len(error) < 200 and ("digits" in error or "control character" in error)


def test_a_loopback_server_answers_only_to_loopback_names(server):
    assert raw_get(server.url, "/api/query?position=start")[0] == 200
    assert raw_get(server.url, "/api/query?position=start", host=f"localhost:{urlsplit(server.url).port}")[0] == 200
    assert raw_get(server.url, "/api/query?position=start", host="attacker.example")[0] == 400


def test_the_command_prints_a_loopback_url_and_stops_on_ctrl_c(tiny):
    running = ExploreServer([*settings(TINY), "--cache-dir", tiny.cache_dir])
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", running.url)
        assert raw_get(running.url, "/")[0] == 200
    finally:
        status = running.stop()
    assert status == 130
    assert running.process.stderr.read().strip() == "charge-spark: interrupted; the explorer stopped; nothing partial was saved"


def test_a_port_in_use_is_one_line_and_exit_two(tiny):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = tiny.cli("explore", "--port", str(port))
    assert done.exit_code == 2
    assert len(done.stderr.strip().splitlines()) == 1 and f"cannot listen on 127.0.0.1 port {port}" in done.stderr


# --- the position page --------------------------------------------------------------------------


def cells(page: str) -> dict[tuple[str, str], str]:
    """The matrix's cell links by (P1's card, P2's card), unescaped."""
    found = re.findall(r'<a href="([^"]+)" class="cell[^"]*" data-p1="([^"]+)" data-p2="([^"]+)"', page)
    return {(p1, p2): href.replace("&amp;", "&") for href, p1, p2 in found}


def test_the_position_page_shows_board_value_strategies_matrix_fingerprint_and_assumptions(tiny):
    page = tiny.client.get("/", params={"position": "start"}).text
    answer = tiny.client.get("/api/query", params={"position": "start"}).json()
    start = answer["position"]
    assert f'<code id="position">{start}</code>' in page
    assert fingerprint(tiny.rules) in page and "open: every card in hand is public" in page
    assert "S*M (an assumed layout" in page and 'id="board"' in page and page.count('class="pawn"') == 2
    assert f'{answer["value"]:.6f}' in page
    assert 'id="p1-strategy"' in page and 'id="p2-strategy"' in page and 'id="win-split"' in page
    assert set(cells(page)) == {(r, c) for r in answer["matrix"]["rows"] for c in answer["matrix"]["cols"]}


def test_a_cell_moves_to_where_its_pair_leads_and_lists_every_outcome(tiny):
    start_page = tiny.client.get("/", params={"position": "start"}).text
    link = cells(start_page)[("move", "charge")]
    query = parse_qs(urlsplit(link).query)
    step = tiny.client.get("/api/step", params={"position": "start", "p1": "move", "p2": "charge"}).json()
    assert query["position"][0] in [o["position"] for o in step["outcomes"]]
    page = tiny.client.get(link).text
    assert f'<code id="position">{query["position"][0]}</code>' in page
    listed = re.findall(r'<li class="outcome[^"]*">chance ([0-9/]+)', page)
    assert listed == [o["chance"] for o in step["outcomes"]]
    assert "(you are here)" in page and "P1 draws" in page


def test_a_cell_that_ends_the_game_says_who_won(tiny):
    for position in tiny.positions(40, seed=9):
        for (p1, p2), link in cells(tiny.client.get("/", params={"position": position}).text).items():
            step = tiny.client.get("/api/step", params={"position": position, "p1": p1, "p2": p2}).json()
            (winner,) = {o["winner"] for o in step["outcomes"]}
            if winner is not None:
                query = parse_qs(urlsplit(link).query)
                assert query["position"] == [position] and (query["p1"], query["p2"]) == ([p1], [p2])
                page = tiny.client.get(link).text
                assert f'<strong class="winner">{winner}</strong>' in page and 'class="cell selected"' in page
                return
    raise AssertionError("no pair ends the game at 40 positions")


# --- the coach ----------------------------------------------------------------------------------


def coach(table: Table, **params) -> dict:
    response = table.client.get("/api/coach", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def play(table: Table, seed: int, seat: int = 1, turns: int = 200) -> tuple[dict, list[str]]:
    """A coached game in which the designer plays, at turn t, the t-th of
    their playable cards (cyclically), until it ends or `turns` are played."""
    moves: list[str] = []
    while True:
        game = coach(table, seed=seed, seat=seat, moves=",".join(moves))
        if game["winner"] is not None or len(moves) == turns:
            return game, moves
        legal = table.explorer.legal(parse_position(game["position"], table.rules), seat - 1)
        moves.append(legal[len(moves) % len(legal)].label)


def test_a_coached_game_replays_from_its_seed(tiny):
    first, moves = play(tiny, seed=11, turns=6)
    assert coach(tiny, seed=11, moves=",".join(moves)) == first
    assert [t["card"] for t in first["turns"]] == moves
    games = {tuple((t["solver_card"], t["next"]) for t in play(tiny, seed=seed, turns=4)[0]["turns"]) for seed in range(8)}
    assert len(games) > 1  # the seed matters where the solver mixes or chance draws


def test_the_solvers_card_does_not_depend_on_the_designers_card_that_turn(tiny):
    for seed in range(4):
        for length in range(4):
            game, moves = play(tiny, seed=seed, turns=length)
            if game["winner"] is not None:
                break
            legal = tiny.explorer.legal(parse_position(game["position"], tiny.rules), 0)
            solver_cards = {coach(tiny, seed=seed, moves=",".join([*moves, card.label]))["turns"][-1]["solver_card"]
                            for card in legal}
            assert len(solver_cards) == 1


@pytest.mark.parametrize("seat", [1, 2])
def test_each_cards_cost_is_its_value_against_the_solvers_strategy_below_the_best(tiny, seat):
    game, _ = play(tiny, seed=5, seat=seat, turns=10)
    assert game["turns"] and any(t["cost"] > 0 for t in game["turns"]) and any(t["cost"] == 0 for t in game["turns"])
    for turn in game["turns"]:
        answer = tiny.client.get("/api/query", params={"position": turn["position"]}).json()
        matrix, rows, cols = answer["matrix"]["values"], answer["matrix"]["rows"], answer["matrix"]["cols"]
        if seat == 1:
            expected = {r: sum(matrix[i][j] * answer["p2_strategy"][c] for j, c in enumerate(cols)) for i, r in enumerate(rows)}
        else:
            expected = {c: 1 - sum(matrix[i][j] * answer["p1_strategy"][r] for i, r in enumerate(rows)) for j, c in enumerate(cols)}
        assert turn["card_values"] == pytest.approx(expected, abs=1e-12)
        value = answer["value"] if seat == 1 else 1 - answer["value"]
        assert turn["value"] == pytest.approx(value, abs=1e-12)
        assert turn["best_value"] == pytest.approx(value, abs=1e-8)  # the solver's strategy is optimal
        gap = turn["best_value"] - turn["chosen_value"]
        assert turn["cost"] == (gap if gap > COST_TOLERANCE else 0.0)
        step = tiny.client.get("/api/step", params={
            "position": turn["position"], "p1": turn["card"] if seat == 1 else turn["solver_card"],
            "p2": turn["solver_card"] if seat == 1 else turn["card"]}).json()
        assert (turn["next"], turn["winner"]) in [(o["position"], o["winner"]) for o in step["outcomes"]]
    assert game["total_cost"] == pytest.approx(sum(t["cost"] for t in game["turns"]))
    assert game["lost_turns"] == [t["turn"] for t in sorted(game["turns"], key=lambda t: (-t["cost"], t["turn"]))
                                  if t["cost"] > 0]


def test_a_finished_game_shows_its_total_cost_and_where_it_was_lost(tiny):
    game, played = play(tiny, seed=2)
    assert game["winner"] is not None
    moves = ",".join(played)
    page = tiny.client.get("/coach", params={"seed": 2, "moves": moves}).text
    assert game["winner"] in page and 'id="summary"' in page
    assert f'id="total-cost">{game["total_cost"]:.4f}<' in page
    for number in game["lost_turns"]:
        assert f"turn {number} (" in page
    assert page.count('<tr class="turn') == len(game["turns"])
    over = tiny.client.get("/api/coach", params={"seed": 2, "moves": moves + ",charge"})
    assert over.status_code == 400 and "the game ended at turn" in over.json()["error"]


def test_a_coach_without_a_seed_gets_one_in_its_address(tiny):
    response = tiny.client.get("/coach", params={"seat": 2}, follow_redirects=False)
    assert response.status_code == 303
    query = parse_qs(urlsplit(response.headers["location"]).query)
    assert query["seat"] == ["2"] and query["seed"][0].isdigit() and query["position"][0].startswith("h1 b0")


BAD_COACH = {
    "seed": ({"seed": "x1"}, "seed must be a whole number"),
    "seat": ({"seed": 1, "seat": 3}, "seat must be 1 or 2"),
    "illegal card": ({"seed": 1, "moves": "counter"}, "turn 1: P1 cannot play counter"),
    "unknown card": ({"seed": 1, "moves": "charge,sword"}, "turn 2: unknown card 'sword'"),
}


@pytest.mark.parametrize("params,expected", BAD_COACH.values(), ids=BAD_COACH.keys())
def test_a_bad_coach_request_is_a_400_naming_it(tiny, params, expected):
    response = tiny.client.get("/api/coach", params=params)
    assert response.status_code == 400 and expected in response.json()["error"]
    page = tiny.client.get("/coach", params=params)
    assert page.status_code == 400 and expected.replace("'", "&#39;") in page.text


# --- rules on the page --------------------------------------------------------------------------

CHEAPER_COUNTER = "cost.counter.disc=1"  # a rule set of its own over the tiny one, solved while the request waits


def cache_listing(cache_dir) -> dict[str, tuple[int, int]]:
    """Every file under `cache_dir` with its size and modification time."""
    root = Path(cache_dir)
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def dotted_keys(mapping: dict, prefix: str = "") -> list[str]:
    """The keys of a TOML document as `--set` writes them (cost.counter.disc)."""
    return [key for name, value in mapping.items()
            for key in (dotted_keys(value, f"{prefix}{name}.") if isinstance(value, dict) else [f"{prefix}{name}"])]


def answered(client: TestClient, path: str, params, timeout: float = 600):
    """`path`'s answer once the tables it needs are stored: through the 202s that say how their solves stand."""
    deadline = time.monotonic() + timeout
    while (response := client.get(path, params=params)).status_code == 202:
        waiting = response.json()
        assert waiting["status"] in ("queued", "solving") and waiting["progress"]["fingerprint"]
        assert time.monotonic() < deadline, "the solve did not end"
        time.sleep(0.5)
    return response


@pytest.fixture(scope="module")
def cheaper(tiny) -> Table:
    """The tiny rules with a cheaper Counter: its table solved by the explorer, in the background."""
    first = tiny.client.get("/api/query", params={"position": "start", "set": CHEAPER_COUNTER})
    assert first.status_code == 202  # not stored: queued, and answered with where its solve stands
    assert first.json()["status"] == "queued" and first.json()["progress"]["solves_ahead"] == 0
    assert answered(tiny.client, "/api/query", {"position": "start", "set": CHEAPER_COUNTER}).status_code == 200
    return Table([*TINY, CHEAPER_COUNTER], tiny.cache_dir)  # the same cache: the table the explorer stored


ROUND_TRIPS = [
    [],
    [CHEAPER_COUNTER],
    ["bonus_cards=", "name=a, b = c", "board=S.*.M"],
    ["bonus_cards=ray,ray,trap", "recovery=battery", "clash=difference", "cost.move.disc=1", "cost.charge.disc=0"],
    ["damage.lightning=5", "health=4", "battery_tiles=3", "start_battery=3", "contested_draw=nobody"],
]


@pytest.mark.parametrize("items", ROUND_TRIPS, ids=[" ".join(i) or "none" for i in ROUND_TRIPS])
def test_the_items_a_page_carries_make_its_rule_set_again(tiny, items):
    """`settings_between` and the form's values read back by `--set` give the same rules."""
    from solver.explore.rule_sets import rules_keys, settings_between

    rules = apply_overrides(tiny.rules, items)
    assert apply_overrides(tiny.rules, settings_between(tiny.rules, rules)) == rules
    assert apply_overrides(RuleSet(), [f"{k}={v}" for k, v in rules_keys(rules).items()]) == rules
    assert len(settings_between(tiny.rules, rules)) <= len(rules_keys(rules))


@pytest.mark.parametrize("item", [CHEAPER_COUNTER, "damage.lightning=1"])
def test_set_items_answer_as_query_json_with_the_same_set_after_the_202s(tiny, cheaper, item):
    answered(tiny.client, "/api/query", {"position": "start", "set": item})  # solved in the background if need be
    variant = Table([*TINY, item], tiny.cache_dir)  # stored now: read, not solved again
    for position in ["start", *variant.positions(5, seed=1)]:
        response = tiny.client.get("/api/query", params={"position": position, "set": item})
        assert response.status_code == 200, response.text
        done = variant.cli("query", position, "--json")
        assert response.json() == json.loads(done.stdout)
    assert response.json()["fingerprint"] == fingerprint(variant.rules) != fingerprint(tiny.rules)
    step = tiny.client.get("/api/step", params={"position": "start", "p1": "charge", "p2": "charge",
                                                "set": item}).json()
    assert step["fingerprint"] == fingerprint(variant.rules)
    # Items that change nothing give the rules the explorer started with.
    same = tiny.client.get("/api/query", params={"position": "start", "set": "health=1"}).json()
    assert same == tiny.client.get("/api/query", params={"position": "start"}).json()


def rules_form_fields(page: str) -> list[tuple[str, str]]:
    """What the rules form of `page` sends as it stands, as a browser sends it: its text and hidden boxes,
    each select's chosen option, each ticked checkbox."""
    form = page.split('id="rules-form"')[1].split("</form>")[0]
    sent = []
    for tag in re.findall(r"<input [^>]*>|<select [^>]*>.*?</select>", form, re.S):
        name = re.search(r'name="([^"]+)"', tag).group(1)
        if tag.startswith("<select"):
            chosen = re.findall(r'<option value="([^"]*)" selected>', tag)
            assert len(chosen) == 1, tag
            sent.append((name, chosen[0]))
        elif 'type="checkbox"' in tag:
            if " checked" in tag:
                sent.append((name, re.search(r'value="([^"]*)"', tag).group(1)))
        else:
            sent.append((name, re.search(r'value="([^"]*)"', tag).group(1)))
    return sent


def rules_form_keys(page: str) -> dict[str, str]:
    """Each rules key the form of `page` shows, with its value as `--set` writes it (the bonus pile's
    checkboxes and counts as one `bonus_cards` value)."""
    sent = rules_form_fields(page)
    shown = {name: value for name, value in sent if name not in ("position", "bonus_form", "bonus_card")
             and not name.startswith("bonus_copies.")}
    counts = dict(sent)
    shown["bonus_cards"] = ",".join(card for name, card in sent if name == "bonus_card"
                                    for _ in range(int(counts[f"bonus_copies.{card}"])))
    return shown


def test_every_page_shows_the_fingerprint_the_differences_and_every_rules_key(tiny, cheaper):
    variant = apply_overrides(tiny.rules, [CHEAPER_COUNTER])
    written = tomllib.loads(CliRunner().invoke(main, ["rules", *settings([*TINY, CHEAPER_COUNTER])]).stdout)
    keys = set(dotted_keys(written))
    for path in ("/", "/coach?seed=3&moves=charge", "/?position=h9"):
        page = tiny.client.get(path + ("&" if "?" in path else "?") + urlencode({"set": CHEAPER_COUNTER})).text
        assert f'<code id="fingerprint">{fingerprint(variant)}</code>' in page
        assert "cost.counter.disc=1" in re.search(r'<code id="changed">([^<]*)</code>', page).group(1)
        form = rules_form_keys(page)
        assert set(form) == keys
        assert form["cost.counter.disc"] == "1" and form["board"] == "S*M" and form["bonus_cards"] == "ray,copy"
        assert f'id="settings">{CHEAPER_COUNTER}<' in page


def test_the_rules_form_goes_to_the_same_page_for_its_rule_set(tiny, cheaper):
    page = tiny.client.get("/", params={"position": "start"}).text
    form = [(name, "1" if name == "cost.counter.disc" else value) for name, value in rules_form_fields(page)]
    response = tiny.client.get("/rules", params=form, follow_redirects=False)
    assert response.status_code == 303
    target = parse_qs(urlsplit(response.headers["location"]).query)
    assert target == {"position": [dict(form)["position"]], "set": [CHEAPER_COUNTER]}
    page = tiny.client.get(response.headers["location"]).text
    assert fingerprint(apply_overrides(tiny.rules, [CHEAPER_COUNTER])) in page
    links = {href.replace("&amp;", "&"): tag for tag, href in re.findall(r'(<a[^>]*href="(/[^"]*)")', page)}
    assert len(links) > 10
    for href, tag in links.items():  # every link stays with the rule set but the one back to the started rules
        if href.startswith("/compare?"):  # the comparison names its rule sets by their items over the printed rules
            named = parse_qs(urlsplit(href).query)
            assert CHEAPER_COUNTER in named["a"] + named.get("b", [])
            continue
        assert parse_qs(urlsplit(href).query).get("set") == (None if 'id="started-rules"' in tag else [CHEAPER_COUNTER])
    assert re.search(r'<input type="hidden" name="set" value="cost.counter.disc=1">', page)  # the position box keeps it


BAD_SETTINGS = {
    "unknown key": "bogus=1",
    "impossible value": "health=0",
    "not a number": "health=many",
    "a path for a key": "../../etc/passwd=1",
    "a path for a value": "board=../../etc/passwd",
    "no equals sign": "health",
    "markup": "name=<script>alert(1)</script>\x07",
}


@pytest.mark.parametrize("item", BAD_SETTINGS.values(), ids=BAD_SETTINGS.keys())
def test_a_bad_set_item_is_a_400_with_the_clis_line(tiny, item):
    before = cache_listing(tiny.cache_dir)
    done = CliRunner().invoke(main, ["query", "start", "--json", *settings([*TINY, item]), "--cache-dir", tiny.cache_dir])
    response = tiny.client.get("/api/query", params={"position": "start", "set": item})
    if done.exit_code == 0:  # a title may hold markup: it is escaped, never refused
        assert response.status_code == 200 and "<script>" not in tiny.client.get("/", params={"set": item}).text
        return
    assert response.status_code == 400
    assert done.stderr.strip() == f"charge-spark: error: {response.json()['error']}"
    page = tiny.client.get("/", params={"position": "start", "set": item})
    assert page.status_code == 400 and "Traceback" not in page.text and page.text.count("<script>") == 1
    assert cache_listing(tiny.cache_dir) == before


def asgi_get(app, path: str, query: bytes) -> tuple[int, bytes]:
    """GET `path?query` straight through the ASGI app: no client shortens or refuses the query first."""
    import asyncio

    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": query, "root_path": "",
             "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


HOSTILE_QUERIES = {
    "10,000 set items": b"position=start&" + b"&".join([b"set=health=1"] * 10_000),
    "10,000 bare parameters": b"&".join([b"a"] * 10_000),
    "a huge number": b"position=start&set=health=" + b"9" * 400,
    "a huge health": b"position=start&set=health=1000000000",
    "a huge tile count": b"position=start&set=battery_tiles=99999999999",
    "a board past any memory": b"position=start&set=board=S" + b"*" * 3000 + b"M",
    "a game slow to estimate": b"position=start&set=battery_tiles=4&set=disc_tiles=4&set=board=S" + b"*" * 14
                               + b"M&set=bonus_cards=ray,ray,ray,copy,copy,trap,trap,recovery",
    "tiles slow to estimate": b"position=start&set=battery_tiles=40&set=disc_tiles=40",
    "80 set items": b"position=start&" + b"&".join([b"set=health=1"] * 80),
}


@pytest.mark.parametrize("query", HOSTILE_QUERIES.values(), ids=HOSTILE_QUERIES.keys())
def test_hostile_set_parameters_are_a_400_in_one_line_and_write_nothing(tiny, query):
    before = cache_listing(tiny.cache_dir)
    app = tiny.client.app
    started = time.monotonic()
    for path in ("/api/query", "/", "/api/step", "/coach", "/rules"):
        status, body = asgi_get(app, path, query)
        assert status == 400, (path, body[:200])
        text = body.decode()
        if path.startswith("/api/"):
            text = json.loads(text)["error"]
            assert "\n" not in text.strip() and "Traceback" not in text
    assert time.monotonic() - started < 10  # refused at once, nothing estimated for long
    assert cache_listing(tiny.cache_dir) == before


# --- compare ------------------------------------------------------------------------------------


def sides(a: list[str], b: list[str]) -> list[tuple[str, str]]:
    return [("a", item) for item in a] + [("b", item) for item in b]


def test_api_compare_gives_two_query_json_answers_and_rows_from_them(tiny, cheaper):
    response = tiny.client.get("/api/compare", params=sides(TINY, [*TINY, CHEAPER_COUNTER]))
    assert response.status_code == 200, response.text
    compared = response.json()
    for side, overrides in (("a", TINY), ("b", [*TINY, CHEAPER_COUNTER])):
        done = CliRunner().invoke(main, ["query", "start", "--json", *settings(overrides), "--cache-dir", tiny.cache_dir])
        assert compared[side]["start"] == json.loads(done.stdout)
        assert compared[side]["fingerprint"] == fingerprint(apply_overrides(RuleSet(), overrides))
        for seat in ("p1", "p2"):
            assert sum(compared[side]["usage"][seat].values()) == pytest.approx(1.0, abs=1e-9)
    rows = {row["label"]: row for row in compared["rows"]}
    assert rows["value to P1"]["a"] == compared["a"]["start"]["value"]
    assert rows["mean length (turns)"]["b"] == compared["b"]["start"]["length"]["mean"]
    assert rows["P1 opens with move"]["b"] == compared["b"]["start"]["p1_strategy"]["move"]
    assert rows["P2 plays counter"]["a"] == compared["a"]["usage"]["p2"]["counter"]
    for row in compared["rows"]:
        assert row["difference"] == pytest.approx(row["b"] - row["a"])
        if row["unit"] == "share":
            assert row["highlighted"] == (abs(row["difference"]) > 0.01)
    assert any(row["highlighted"] for row in compared["rows"]) and not rows["value to P1"]["highlighted"]


def test_the_compare_page_shows_both_rule_sets_and_highlights_the_rows_that_differ(tiny, cheaper):
    params = sides(TINY, [*TINY, CHEAPER_COUNTER])
    compared = tiny.client.get("/api/compare", params=params).json()
    page = tiny.client.get("/compare", params=params).text
    assert page.count('<tr class="row differs">') == sum(row["highlighted"] for row in compared["rows"]) > 0
    assert page.count('<tr class="row') == len(compared["rows"])
    assert compared["a"]["fingerprint"] in page and compared["b"]["fingerprint"] in page
    assert "cost.counter.disc=1" in re.search(r'id="head-b">.*?<code class="changed">([^<]*)<', page, re.S).group(1)
    assert page.count("<script>") == 1 and 'id="loading"' in page  # its one: the loading indicator


def test_every_position_page_links_to_the_comparison_with_the_printed_rules(tiny, cheaper):
    for params in ({"position": "start"}, {"position": "start", "set": CHEAPER_COUNTER}):
        page = tiny.client.get("/", params=params).text
        link = re.search(r'id="compare-printed" href="([^"]+)"', page).group(1).replace("&amp;", "&")
        query = parse_qs(urlsplit(link).query)
        rules = apply_overrides(tiny.rules, [params["set"]] if "set" in params else [])
        assert apply_overrides(RuleSet(), query["a"]) == rules and "b" not in query  # b: the printed rules
        started = re.search(r'id="compare-started" href="([^"]+)"', page)
        assert (started is None) == ("set" not in params)  # rules changed on the page: also with those started with
        if started:
            query = parse_qs(urlsplit(started.group(1).replace("&amp;", "&")).query)
            assert apply_overrides(RuleSet(), query["a"]) == tiny.rules and apply_overrides(RuleSet(), query["b"]) == rules


def test_a_bad_side_is_a_400_naming_the_side_with_the_clis_line(tiny):
    before = cache_listing(tiny.cache_dir)
    done = CliRunner().invoke(main, ["query", "start", "--json", "--set", "health=0"])
    response = tiny.client.get("/api/compare", params=sides(TINY, ["health=0"]))
    assert response.status_code == 400
    assert done.stderr.strip() == f"charge-spark: error: {response.json()['error'].removeprefix('b: ')}"
    page = tiny.client.get("/compare", params=[*sides([*TINY, "name=<script>x</script>"], []), ("b", "bogus=<b>")])
    assert page.status_code == 400 and "<script>x" not in page.text and "&lt;script&gt;x&lt;/script&gt;" in page.text
    assert cache_listing(tiny.cache_dir) == before


def test_a_rule_set_too_large_for_the_memory_is_refused_at_once_with_nothing_queued(tiny, monkeypatch):
    import solver.explore.solves

    monkeypatch.setattr(solver.explore.solves, "states_that_fit", lambda per_state: 1000)  # a small machine
    before = cache_listing(tiny.cache_dir)
    larger = apply_overrides(tiny.rules, ["health=2"])
    for path, params in [("/api/query", {"position": "start", "set": "health=2"}),
                         ("/api/compare", sides(TINY, [*TINY, "health=2"]))]:
        response = tiny.client.get(path, params=params)
        assert response.status_code == 400
        error = response.json()["error"]
        assert "\n" not in error and "would not fit in the memory available (about 1,000 states)" in error
        assert error.startswith("b: " if "compare" in path else f"the table of these rules [{fingerprint(larger)}]")
    solves = tiny.client.app.state.rule_sets.solves
    unstored = [*TINY, "counter_reflect=3"]  # would be queued, but its other side is refused: nothing is
    assert tiny.client.get("/api/compare", params=sides(unstored, [*TINY, "health=2"])).status_code == 400
    assert solves.status(fingerprint(apply_overrides(RuleSet(), unstored))) is None
    page = tiny.client.get("/rules", params={"position": "start", "health": "2"}, follow_redirects=False)
    assert page.status_code == 400 and "would not fit in the memory available" in page.text
    assert solves.status(fingerprint(larger)) is None  # nothing queued
    assert cache_listing(tiny.cache_dir) == before


def test_the_progress_page_refreshes_itself_until_the_answer_is_there(tiny):
    harder = "damage.spark=2"
    page = tiny.client.get("/", params={"position": "start", "set": harder})
    assert page.status_code == 202
    assert re.search(r'<meta http-equiv="refresh" content="\d+">', page.text) and "<script" not in page.text
    assert fingerprint(apply_overrides(tiny.rules, [harder])) in page.text and "damage.spark=2" in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'none'")
    assert re.search(r'class="state">(waiting: 0 solves before it|solving)<', page.text)
    assert answered(tiny.client, "/api/query", {"position": "start", "set": harder}).status_code == 200
    assert tiny.client.get("/", params={"position": "start", "set": harder}).status_code == 200


def test_a_comparison_waits_for_both_sides_solved_in_order(tiny):
    a, b = [*TINY, "counter_reflect=1"], [*TINY, "cost.barrier.battery=1"]  # neither stored
    first = tiny.client.get("/api/compare", params=sides(a, b))
    assert first.status_code == 202
    waiting = first.json()
    assert set(waiting["sides"]) == {"a", "b"} and waiting["status"] in ("queued", "solving")
    assert waiting["sides"]["b"]["progress"]["solves_ahead"] >= 1  # queued in order: a's solve first
    page = tiny.client.get("/compare", params=sides(a, b))
    assert page.status_code == 202 and 'id="solve-a"' in page.text and 'id="solve-b"' in page.text
    assert '<meta http-equiv="refresh"' in page.text
    compared = answered(tiny.client, "/api/compare", sides(a, b)).json()
    for side, overrides in (("a", a), ("b", b)):
        done = CliRunner().invoke(main, ["query", "start", "--json", *settings(overrides), "--cache-dir", tiny.cache_dir])
        assert compared[side]["start"] == json.loads(done.stdout)


def child_processes(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children.append(int(stat.parent.name))
    return children


def test_pages_are_answered_while_a_solve_runs_and_ctrl_c_leaves_the_cache_as_it_was(tiny):
    """The command itself: a solve in its worker, the stored table answered meanwhile, then Ctrl-C."""
    import statistics
    import urllib.request

    before = cache_listing(tiny.cache_dir)
    larger = "health=8"  # 546,573 states: enumerated in a second, solved in far longer than the queries below take
    running = ExploreServer([*settings(TINY), "--cache-dir", tiny.cache_dir])
    try:
        query = f"{running.url}api/query?{urlencode({'position': 'start', 'set': larger})}"
        deadline = time.monotonic() + 600
        while True:
            response = urllib.request.urlopen(query, timeout=30)
            waiting = json.loads(response.read())
            assert response.status == 202, waiting
            if waiting["status"] == "solving" and waiting["progress"]["phase"] == "solving":
                progress = waiting["progress"]
                assert progress["states_found"] == progress["states_to_solve"] > progress["states_solved"] >= 0
                assert progress["ranks_solved"] >= 0 and progress["elapsed_seconds"] > 0
                break
            assert time.monotonic() < deadline
            time.sleep(0.5)
        workers = child_processes(running.process.pid)
        assert workers  # the solve runs in a process of its own
        latencies = []
        for position in tiny.positions(30, seed=4):
            started = time.perf_counter()
            status, _ = raw_get(running.url, f"/api/query?{urlencode({'position': position})}")
            latencies.append(time.perf_counter() - started)
            assert status == 200
        print(f"/api/query on the stored table while a solve runs: median {1000 * statistics.median(latencies):.1f} ms")
        assert statistics.median(latencies) < 1.0
    finally:
        status = running.stop()
    assert status == 130
    assert running.process.stderr.read().strip() == "charge-spark: interrupted; the explorer stopped; nothing partial was saved"
    ended = time.monotonic() + 10  # the worker, and multiprocessing's helper, end with the server
    while [pid for pid in workers if Path(f"/proc/{pid}").exists()] and time.monotonic() < ended:
        time.sleep(0.1)
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()]
    assert cache_listing(tiny.cache_dir) == before


# --- a real browser -----------------------------------------------------------------------------

no_browser = missing_browser()


@pytest.mark.skipif(no_browser is not None, reason=f"no browser to drive: {no_browser}")
def test_a_browser_clicks_through_positions_and_plays_the_coach(server, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chrome()
    try:
        driver.get(server.url)
        start = driver.find_element(By.ID, "position").text
        driver.find_element(By.CSS_SELECTOR, 'a.cell[data-p1="move"][data-p2="charge"]').click()
        moved = driver.find_element(By.ID, "position").text
        assert moved != start and "p1 rest=move bonus=" in moved
        assert "position=" in driver.current_url and "(you are here)" in driver.find_element(By.ID, "step").text
        driver.find_element(By.ID, "back").click()
        assert driver.find_element(By.ID, "position").text == start
        driver.find_element(By.ID, "forward").click()
        assert driver.find_element(By.ID, "position").text == moved
        assert console(driver) == []
        box = driver.find_element(By.ID, "position-box")
        box.clear()
        box.send_keys("<script>alert(1)</script>\n")
        # Submitting the form does not wait for the page it loads (a click on a link does).
        error = WebDriverWait(driver, 30).until(expected_conditions.presence_of_element_located((By.ID, "error")))
        assert "'<script>alert(1)<'" in error.text  # text, not markup
        # The bad request's 400 is the one message: no script ran, nothing failed.
        assert [m for m in console(driver) if "status of 400 (Bad Request)" not in m] == []

        driver.get(f"{server.url}coach?seat=1&seed=4")
        for turn in range(1, 30):
            if driver.find_elements(By.ID, "summary"):
                break
            driver.find_elements(By.CSS_SELECTOR, "#hand a.play")[0].click()
            assert len(driver.find_elements(By.CSS_SELECTOR, "#history tr.turn")) == turn
        summary = driver.find_element(By.ID, "summary").text
        assert "Total cost of your cards" in summary and "seed" in driver.find_element(By.ID, "coach-setup").text
        png = tmp_path / "coach.png"
        driver.save_screenshot(str(png))
        assert png.stat().st_size > 10_000
        assert console(driver) == []
    finally:
        driver.quit()


@pytest.mark.skipif(no_browser is not None, reason=f"no browser to drive: {no_browser}")
def test_a_browser_changes_a_cost_watches_it_solve_and_compares(server, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    change = ("cost.lightning.battery", "1")  # a rule set nothing else in this module asks for
    driver = chrome()
    try:
        driver.get(server.url)
        driver.find_element(By.CSS_SELECTOR, "#rules summary").click()
        box = driver.find_element(By.CSS_SELECTOR, f'#rules-form input[name="{change[0]}"]')
        assert box.get_attribute("value") == "2"
        box.clear()
        box.send_keys(change[1])
        driver.find_element(By.ID, "apply-rules").click()
        # Not stored: the progress page, which looks again by itself until the answer is there.
        WebDriverWait(driver, 60).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".solve")))
        assert parse_qs(urlsplit(driver.current_url).query)["set"] == ["=".join(change)]
        assert "solving the rules asked for" in driver.find_element(By.TAG_NAME, "h1").text
        WebDriverWait(driver, 600).until(expected_conditions.presence_of_element_located((By.ID, "position")))
        assert "=".join(change) in driver.find_element(By.ID, "changed").text
        assert driver.find_element(By.ID, "settings").text == "=".join(change)
        assert console(driver) == []

        driver.get(f"{server.url}compare?{urlencode(sides(TINY, [*TINY, '='.join(change)]))}")
        WebDriverWait(driver, 600).until(expected_conditions.presence_of_element_located((By.ID, "compare")))
        highlighted = driver.find_elements(By.CSS_SELECTOR, "#compare tr.row.differs")
        plain = driver.find_element(By.CSS_SELECTOR, "#compare tr.row:not(.differs) td")
        marked = {row.find_element(By.TAG_NAME, "td").value_of_css_property("background-color") for row in highlighted}
        assert highlighted and len(marked) == 1 and plain.value_of_css_property("background-color") not in marked
        png = tmp_path / "compare.png"
        screenshot_page(driver, png)
        assert png.stat().st_size > 10_000
        assert console(driver) == []
    finally:
        driver.quit()


def test_a_table_on_disk_waits_until_its_worker_has_finished_the_whole_job(tiny, monkeypatch):
    """The worker stores the table, then follows play from the start for the length and stalls a
    query reads: until it says it is done the API answers 202, never a query without them."""
    from solver.explore.rule_sets import RuleSets
    from solver.explore.solves import SolveStatus

    variant = [*TINY, "counter_reflect=3"]
    key = fingerprint(apply_overrides(RuleSet(), variant))
    solves = tiny.client.app.state.rule_sets.solves
    monkeypatch.setattr(RuleSets, "is_stored", lambda self, rules: True)  # the table is on disk
    monkeypatch.setitem(solves._statuses, key, SolveStatus(key, "solving", 0.0, 1.0, "", {"phase": "storing"}))
    response = tiny.client.get("/api/query", params={"position": "start", "set": "counter_reflect=3"})
    assert response.status_code == 202 and response.json()["status"] == "solving"


# --- asking before a large solve, and cancelling one ----------------------------------------------


def token_of(page: str) -> str:
    """The token the page's POST forms carry."""
    return re.search(r'<input type="hidden" name="token" value="([^"]+)">', page).group(1)


@pytest.fixture
def asks_first(monkeypatch):
    """Every rule set not stored counts as large: a GET shows its estimate rather than starting its solve."""
    import solver.explore.rule_sets

    monkeypatch.setattr(solver.explore.rule_sets, "ASK_FIRST_STATES", 10)


def test_a_get_of_a_large_rule_set_shows_the_estimate_and_starts_nothing(tiny, asks_first):
    item = "counter_reflect=0"  # asked for nowhere else
    rules = apply_overrides(tiny.rules, [item])
    key = fingerprint(rules)
    solves = tiny.client.app.state.rule_sets.solves
    before = cache_listing(tiny.cache_dir)
    page = tiny.client.get("/", params={"position": "start", "set": item})
    assert page.status_code == 200  # a page to act on (the API: 409)
    from rules.charge_spark.size import estimate_reachable

    states = round(estimate_reachable(rules))
    figures = dict(re.findall(r'<th class="text">([^<]+)</th><td class="[a-z]+">([^<]+)</td>', page.text))
    assert figures["states (estimated)"] == f"about {states:,}"
    assert re.fullmatch(r"under 10 s|about \d+ (s|min)|about [\d.]+ h", figures["time (estimated)"])
    assert re.fullmatch(r"about [\d,.]+ (MB|GB)", figures["memory at its peak (estimated)"])
    assert key in page.text and item in page.text
    form = re.search(r'<form id="solve-form" method="post" action="([^"]+)">', page.text).group(1).replace("&amp;", "&")
    assert parse_qs(urlsplit(form).query) == {"position": ["start"], "set": [item]}  # POSTs to the same page
    assert 'id="solve-button"' in page.text and token_of(page.text)
    api = tiny.client.get("/api/query", params={"position": "start", "set": item})
    assert api.status_code == 409
    assert api.json()["status"] == "not started" and api.json()["estimate"]["estimated_states"] == states
    assert "\n" not in api.json()["error"] and "POST" in api.json()["error"]
    compared = tiny.client.get("/compare", params=sides(TINY, [*TINY, item]))
    assert compared.status_code == 200 and 'id="estimate-b"' in compared.text and 'id="estimate-a"' not in compared.text
    assert solves.status(key) is None  # nothing queued
    assert cache_listing(tiny.cache_dir) == before
    # The rules the explorer started with, and tables stored, are answered as ever.
    assert tiny.client.get("/", params={"position": "start"}).status_code == 200


def test_a_post_from_the_page_starts_the_solve_and_a_post_from_elsewhere_is_refused(tiny, asks_first):
    item = "barrier_reduce=0"
    key = fingerprint(apply_overrides(tiny.rules, [item]))
    solves = tiny.client.app.state.rule_sets.solves
    params = {"position": "start", "set": item}
    page = tiny.client.get("/", params=params)
    token = token_of(page.text)
    before = cache_listing(tiny.cache_dir)
    refused = [
        tiny.client.post("/", params=params, data={"do": "solve"}),  # no token
        tiny.client.post("/", params=params, data={"do": "solve", "token": token[:-1] + ("y" if token.endswith("x") else "x")}),
        tiny.client.post("/", params=params, data={"do": "solve", "token": token}, headers={"sec-fetch-site": "cross-site"}),
        tiny.client.post("/", params=params, data={"do": "solve", "token": token}, headers={"origin": "http://evil.example"}),
        tiny.client.post("/", params=params, content=b"token=" + b"x" * 5000,
                         headers={"content-type": "application/x-www-form-urlencoded"}),
        tiny.client.post("/", params=params, json={"token": token}),
    ]
    assert [r.status_code for r in refused] == [403, 403, 403, 403, 413, 415]
    assert all("\n" not in r.text.strip() for r in refused)
    assert solves.status(key) is None and cache_listing(tiny.cache_dir) == before
    started = tiny.client.post("/", params=params, data={"do": "solve", "token": token}, follow_redirects=False)
    assert started.status_code == 303
    assert parse_qs(urlsplit(started.headers["location"]).query) == {"position": ["start"], "set": [item]}
    assert solves.status(key).state in ("queued", "solving", "stored")
    assert answered(tiny.client, "/api/query", params).status_code == 200
    # A script starts one with its header instead of the page's token; the API answers as a GET would.
    other = "damage.spark=3"
    response = tiny.client.post("/api/query", params={"position": "start", "set": other},
                                headers={"X-Charge-Spark": "1"})
    assert response.status_code == 202 and response.json()["status"] in ("queued", "solving")
    assert answered(tiny.client, "/api/query", {"position": "start", "set": other}).status_code == 200


def wait_for_phase(client: TestClient, params: dict, phase: str, timeout: float = 600) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        response = client.get("/api/query", params=params)
        assert response.status_code == 202, response.text
        progress = response.json()["progress"]
        if progress.get("phase") == phase:
            return progress
        assert time.monotonic() < deadline, progress
        time.sleep(0.2)


def test_cancelling_a_solve_stops_its_worker_and_leaves_the_cache_as_it_was(tiny, asks_first):
    lasting, after = "health=8", "damage.lightning=3"  # 546,573 states: a solve that outlasts the test; then a small one
    solves = tiny.client.app.state.rule_sets.solves
    before = cache_listing(tiny.cache_dir)
    keys = [fingerprint(apply_overrides(tiny.rules, [item])) for item in (lasting, after)]
    token = token_of(tiny.client.get("/", params={"set": lasting}).text)
    for item in (lasting, after):
        posted = tiny.client.post("/", params={"position": "start", "set": item}, data={"do": "solve", "token": token})
        assert posted.status_code == 202  # followed to the progress page
    wait_for_phase(tiny.client, {"position": "start", "set": lasting}, "solving")
    worker = solves._worker.process
    progress_page = tiny.client.get("/", params={"position": "start", "set": lasting})
    assert progress_page.status_code == 202
    cancel = re.search(r'<form class="cancel" method="post" action="([^"]+)">.*?name="fingerprint" value="([^"]+)"',
                       progress_page.text, re.S)
    assert cancel.group(2) == keys[0] and 'id="cancel"' in progress_page.text
    # Its table is not there yet; its lock and kept ranks are.
    assert [name for name in cache_listing(tiny.cache_dir) if keys[0] in name and name not in before]
    cancelled = tiny.client.post(cancel.group(1).replace("&amp;", "&"),
                                 data={"do": "cancel", "fingerprint": keys[0], "token": token_of(progress_page.text)})
    assert cancelled.status_code == 200 and "its solve was cancelled" in cancelled.text  # asked before it starts again
    assert not worker.is_alive()
    assert solves.status(keys[0]).state == "cancelled"
    assert {name for name in cache_listing(tiny.cache_dir) if keys[0] in name} == {n for n in before if keys[0] in n}
    # The next solve goes on, in a worker of its own; then the cache is as it was but for its table.
    assert answered(tiny.client, "/api/query", {"position": "start", "set": after}).status_code == 200
    added = set(cache_listing(tiny.cache_dir)) - set(before)
    assert added and all(keys[1] in name for name in added)
    assert solves.status(keys[0]).state == "cancelled"  # a GET did not start it again
    assert tiny.client.get("/api/query", params={"position": "start", "set": lasting}).json()["status"] == "cancelled"


def test_cancelling_a_queued_solve_drops_it_and_a_stale_cancel_changes_nothing(tiny, asks_first):
    lasting, queued = "health=8", "cost.move.disc=1"  # the first still solving when the second is asked
    solves = tiny.client.app.state.rule_sets.solves
    token = token_of(tiny.client.get("/", params={"set": queued}).text)
    for item in (lasting, queued):
        tiny.client.post("/", params={"set": item}, data={"do": "solve", "token": token})
    key = fingerprint(apply_overrides(tiny.rules, [queued]))
    assert solves.status(key).state == "queued"
    response = tiny.client.post("/api/query", params={"position": "start", "set": queued},
                                data={"do": "cancel"}, headers={"X-Charge-Spark": "1"})
    assert response.status_code == 409 and response.json()["status"] == "cancelled"
    assert solves.status(key).state == "cancelled" and key not in solves._order
    stale = tiny.client.post("/", params={"set": queued}, data={"do": "cancel", "fingerprint": key, "token": token})
    assert stale.status_code == 200 and "its solve was cancelled" in stale.text  # nothing to cancel any more: the page as it is
    wrong = tiny.client.post("/", params={"set": queued}, data={"do": "cancel", "fingerprint": "0" * 12, "token": token})
    assert wrong.status_code == 400 and "no solve of rules [000000000000] on this page" in wrong.text
    lasting_key = fingerprint(apply_overrides(tiny.rules, [lasting]))
    assert solves.cancel(lasting_key) and solves.status(lasting_key).state == "cancelled"


def test_the_rules_form_has_selects_for_enumerated_keys_and_checkboxes_for_bonus_cards(tiny):
    from rules.charge_spark.config import CHOICES

    page = tiny.client.get("/", params={"position": "start", "set": "name=" + "a long title " * 6}).text
    form = page.split('id="rules-form"')[1].split("</form>")[0]
    for key, options in CHOICES.items():
        select = re.search(rf'<select name="{re.escape(key)}">(.*?)</select>', form, re.S)
        assert select, key
        assert re.findall(r'<option value="([^"]*)"', select.group(1)) == list(options)
        assert f'<input type="text" name="{key}"' not in form
    ticked = re.findall(r'<input type="checkbox" name="bonus_card" value="([^"]+)"( checked)?>', form)
    assert [card for card, _ in ticked] == ["ray", "recovery", "trap", "copy"]
    assert [card for card, checked in ticked if checked] == ["ray", "copy"]  # the tiny rules' pile
    assert '<input type="text" name="bonus_cards"' not in form
    for name, value, size in re.findall(r'<input type="text" name="([^"]+)" value="([^"]*)" size="(\d+)"', form):
        assert int(size) > len(value), name  # no value cut off
    # Ticking a card and choosing its copies makes the pile.
    fields = [(n, v) for n, v in rules_form_fields(page) if n not in ("bonus_card",)]
    fields += [("bonus_card", "trap"), ("bonus_card", "ray"), ("bonus_copies.trap", "2")]
    response = tiny.client.get("/rules", params=fields, follow_redirects=False)
    assert response.status_code == 303
    assert "bonus_cards=ray,trap,trap" in parse_qs(urlsplit(response.headers["location"]).query)["set"]
    bad = tiny.client.get("/rules", params=[*fields, ("bonus_copies.ray", "lots")])
    assert bad.status_code == 400 and "bonus_copies.ray: must be a number from 1 to 8" in bad.text


def test_a_difference_that_rounds_to_nothing_is_zero_without_a_sign():
    from solver.explore.pages import _figure, fixed

    assert _figure(-1e-12, "share", signed=True) == "0.00"
    assert _figure(1e-12, "share", signed=True) == "0.00"
    assert _figure(-0.00004, "share", signed=True) == "0.00"
    assert _figure(-0.0001, "share", signed=True) == "-0.01 pt"
    assert _figure(0.0123, "share", signed=True) == "+1.23 pt"
    assert _figure(-1e-9, "turns", signed=True) == "0.00"
    assert _figure(-1e-17, "share") == "0.00%"
    assert fixed(-1e-9, 4) == "0.0000" and fixed(-0.25, 2) == "-0.25" and fixed(0.5, 6) == "0.500000"


def test_several_keys_in_one_set_item_get_the_hint(tiny):
    response = tiny.client.get("/api/query", params={"position": "start", "set": "board=S*M health=1"})
    assert response.status_code == 400
    assert response.json()["error"].endswith("; one --set per key: --set 'board=S*M' --set health=1")
    compared = tiny.client.get("/api/compare", params=[("a", "health=1 board=S*M")])
    assert compared.status_code == 400 and "one --set per key" in compared.json()["error"]


def test_a_position_that_adds_too_many_states_to_the_table_is_not_solved_while_its_page_waits(tiny, monkeypatch):
    import solver.explore.answers

    outside = "p1 / p1"  # not reachable from the start (no draw on the star): solved up to the table's edge
    monkeypatch.setattr(solver.explore.answers, "ASK_FIRST_STATES", 1)
    response = tiny.client.get("/api/query", params={"position": outside})
    assert response.status_code == 400
    assert response.json()["error"].startswith("this position is outside the stored table and adds more than 1 states")
    monkeypatch.undo()
    assert tiny.client.get("/api/query", params={"position": outside}).status_code == 200


def test_a_one_seat_rule_set_draws_each_players_cards_at_its_own_price():
    from rules.charge_spark.state import initial_position
    from solver.explore.board_svg import board_svg

    rules = apply_overrides(RuleSet(), [*TINY, "start_battery=2", "p2.cost.spark.battery=2"])
    svg = str(board_svg(rules, initial_position(rules)))
    spark_tips = re.findall(r"<title>spark; cost ([^;]+); (playable|cannot be paid)</title>", svg)
    assert spark_tips == [("1B", "playable"), ("2B", "playable")]  # P1's Spark, then P2's


def test_the_command_does_not_start_an_hours_solve_unasked(tmp_path):
    # The printed rules, not stored: one line naming the command that stores them, exit 2, nothing written.
    result = CliRunner().invoke(main, ["explore", "--cache-dir", str(tmp_path), "--port", "0"])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "is not stored" in lines[0] and "states" in lines[0]
    assert f"run charge-spark solve --cache-dir {tmp_path} first" in lines[0]
    assert list(tmp_path.iterdir()) == []
