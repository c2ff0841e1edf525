"""The explorer's routes (Starlette). Eight GET routes, and POSTs to some of them:

    /              the position page (?position=...; &p1=&p2= a pair chosen; &from= the position it was played from)
    /coach         a game against the solver (?position=&seat=1|2&seed=&moves=card,card,...)
    /rules         the rules form's target: its changed keys as `set=` items, sent on to the position page
    /compare       two rule sets side by side (?a=KEY=VALUE&...&b=KEY=VALUE&..., each over the printed rules)
    /api/compare   the same figures as JSON
    /api/query     the object `query --json` prints (?position=...)
    /api/step      where a pair of cards leads, with each outcome's chance (?position=&p1=&p2=)
    /api/coach     a coached game replayed, as JSON (the /coach parameters)

A GET never starts a solve past `ASK_FIRST_STATES` (a page then shows what
it would take, with a "Solve" button); a POST to the address of `/`, `/coach`,
`/compare`, `/api/query` or `/api/compare` starts the solves of its rule sets
(`do=solve`, the default) or cancels them (`do=cancel`, `fingerprint=` one of
them), then answers as a GET of that address does (a page: 303 to it). A POST
carries the page's token (or, from a script, the `X-Charge-Spark` header).

Every page and API takes repeatable `set=KEY=VALUE` items, applied as `--set`
applies them on top of the rules the explorer was started with. A query
string longer than `MAX_QUERY_BYTES` or with more than `MAX_PARAMETERS`
parameters is refused before it is read.

No route reads a file named by a request, so no path reaches the disk. Bad
input is a 400 with the CLI's one line (JSON from the API, a page with the
box to try again from the pages); anything else is a 500 with one line, its
traceback on the server's stderr only.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Sequence

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rules.charge_spark.cards import BONUS_CARDS
from rules.charge_spark.config import MAX_BONUS_CARDS, fingerprint
from rules.charge_spark.notation import format_position, parse_position

from .answers import BAD_INPUT, ExploreInputError, Explorer, message
from .coach import CoachGame, parse_moves, parse_seat, parse_seed, replay
from .compare import Side, compare_json, side_of, side_rules
from .http_limits import PostRefused, cross_site_refusal, posted_form
from .pages import asking_page, coach_page, compare_page, error_page, link, position_page, solving_page, url
from .rule_sets import RuleSets, SolveNotAsked, TableNotReady, rules_keys, settings_between

SECURITY_HEADERS = [
    # Inline styles and script only; no frames, no plugins, nothing fetched from elsewhere.
    (b"content-security-policy", b"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline';"
                                 b" img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]
NOT_FOUND = ("no such page; the explorer serves /, /coach, /rules, /compare, /api/query, /api/step, /api/coach and"
             " /api/compare")
MAX_QUERY_BYTES = 16_384
"""The longest query string read (a coached game of hundreds of turns fits)."""
MAX_PARAMETERS = 100
"""The most query parameters read (the rules form sends about 40)."""


class SecurityHeaders:
    """Adds `SECURITY_HEADERS` to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


class QueryLimits:
    """Refuses a query string past `MAX_QUERY_BYTES` or `MAX_PARAMETERS` with a one-line 400, before any route reads it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            query: bytes = scope.get("query_string", b"")
            problem = None
            if len(query) > MAX_QUERY_BYTES:
                problem = f"the query string is too long ({len(query):,} bytes; at most {MAX_QUERY_BYTES:,})"
            elif query.count(b"&") + 1 > MAX_PARAMETERS:
                problem = f"too many query parameters ({query.count(b'&') + 1:,}; at most {MAX_PARAMETERS})"
            if problem is not None:
                api = scope.get("path", "").startswith("/api/")
                response = (JSONResponse({"error": problem}, status_code=400) if api
                            else PlainTextResponse(problem, status_code=400))
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _param(request: Request, name: str) -> str | None:
    return request.query_params.get(name)


def _bad_json(error: Exception) -> JSONResponse:
    return JSONResponse({"error": message(error)}, status_code=400)


def _settings(request: Request) -> list[str]:
    return request.query_params.getlist("set")


def bonus_pile(request: Request) -> str:
    """The bonus pile the rules form's checkboxes give (`bonus_card=CARD`, each with `bonus_copies.CARD=N`),
    as `bonus_cards` takes it: "ray,ray,trap", in the order of the cards (an unknown card is passed on, for
    the rules parser to say so; a pile over `MAX_BONUS_CARDS` too)."""
    pile = []
    ticked = request.query_params.getlist("bonus_card")
    for card in BONUS_CARDS:
        if card.label in ticked:
            copies = request.query_params.get(f"bonus_copies.{card.label}", "1").strip()
            if not copies.isdigit() or not 1 <= int(copies) <= MAX_BONUS_CARDS:
                raise ExploreInputError(f"bonus_copies.{card.label}: must be a number from 1 to {MAX_BONUS_CARDS},"
                                        f" got {copies[:20]!r}")
            pile += [card.label] * int(copies)
    unknown = [card for card in ticked if card not in {c.label for c in BONUS_CARDS}]
    return ",".join(pile + unknown[:1])


def here(request: Request) -> str:
    """The address of `request` on this server (its path and query): where its page's forms POST."""
    query = request.url.query
    return request.url.path + (f"?{query}" if query else "")


def waiting_page(waiting: TableNotReady, request: Request, token: str) -> HTMLResponse:
    """The progress page of the tables a request waits for (202: not the answer yet), each with its Cancel."""
    return HTMLResponse(solving_page(waiting.waiting, started_url=url("/", position="start"), action=here(request),
                                     token=token), status_code=202)


def asked_page(asked: SolveNotAsked, request: Request, token: str) -> HTMLResponse:
    """The page of tables whose solve a GET does not start: what each would take, and "Solve" (200: a page
    to act on; the API answers 409)."""
    return HTMLResponse(asking_page(asked.estimates, started_url=url("/", position="start"), action=here(request),
                                    token=token))


def create_app(started: Explorer, allowed_hosts: Sequence[str] | None = None,
               rule_sets: RuleSets | None = None) -> Starlette:
    """The explorer over `started`'s table, and over those of the rule sets
    `set=` items make from its rules (`rule_sets`); requests naming another
    host than `allowed_hosts` (None: any) are refused, so a web page elsewhere
    cannot reach a loopback server through a name it controls (DNS rebinding)."""
    rule_sets = rule_sets or RuleSets(started)
    token = secrets.token_urlsafe(24)  # in every form that POSTs: a page of another site cannot read it

    def explorer_of(request: Request) -> Explorer:
        return rule_sets.explorer(_settings(request))

    def json_route(answer: Callable[[Request], dict]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                return JSONResponse(answer(request))
            except TableNotReady as waiting:
                return JSONResponse(waiting.as_json(), status_code=202)
            except SolveNotAsked as asked:
                return JSONResponse(asked.as_json(), status_code=409)
            except BAD_INPUT as error:
                return _bad_json(error)
        return endpoint

    def page_route(render: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                return render(request)
            except TableNotReady as waiting:
                return waiting_page(waiting, request, token)
            except SolveNotAsked as asked:
                return asked_page(asked, request, token)
            except BAD_INPUT as error:
                box = (_param(request, "position") or "")[:2000]
                try:  # the page of the rule set asked for, where its rules are good
                    shown = explorer_of(request)
                except (*BAD_INPUT, TableNotReady, SolveNotAsked):
                    shown = started
                return HTMLResponse(error_page(shown, message(error), box), status_code=400)
        return endpoint

    def api_query(request: Request) -> dict:
        explorer = explorer_of(request)
        return explorer.query(explorer.position(_param(request, "position")))

    def api_step(request: Request) -> dict:
        explorer = explorer_of(request)
        position = explorer.position(_param(request, "position"))
        card1 = explorer.card(position, 0, _param(request, "p1"))
        card2 = explorer.card(position, 1, _param(request, "p2"))
        return explorer.step_json(explorer.step(position, card1, card2))

    def coached(explorer: Explorer, request: Request) -> tuple[CoachGame, list[str]]:
        start = explorer.position(_param(request, "position") or "start")
        seed = parse_seed(_param(request, "seed"))
        if seed is None:
            raise ExploreInputError("no seed given")
        moves = parse_moves(_param(request, "moves"))
        return replay(explorer, start, parse_seat(_param(request, "seat")), seed, moves), moves

    def api_coach(request: Request) -> dict:
        explorer = explorer_of(request)
        game, _ = coached(explorer, request)
        return coach_json(explorer, game)

    def home(request: Request) -> Response:
        explorer = explorer_of(request)
        position = explorer.position(_param(request, "position") or "start")
        p1, p2 = _param(request, "p1"), _param(request, "p2")
        origin = _param(request, "from")
        if (p1 is None) != (p2 is None):
            raise ExploreInputError("a pair of cards needs both p1 and p2")
        step_from = None if origin is None else explorer.position(origin)
        cards = None
        if p1 is not None:
            played_at = step_from or position
            cards = (explorer.card(played_at, 0, p1), explorer.card(played_at, 1, p2))
        return HTMLResponse(position_page(explorer, position, step_from=step_from, cards=cards,
                                          box=_param(request, "position")))

    def coach(request: Request) -> Response:
        explorer = explorer_of(request)
        if parse_seed(_param(request, "seed")) is None:
            # A seed of its own, in the address: the game can then be replayed from it.
            seat = parse_seat(_param(request, "seat")) + 1
            position = explorer.text(explorer.position(_param(request, "position") or "start"))
            return RedirectResponse(link(explorer, "/coach", position=position, seat=seat,
                                         seed=secrets.randbelow(10**9)), status_code=303)
        game, moves = coached(explorer, request)
        return HTMLResponse(coach_page(explorer, game, moves))

    def apply_rules(request: Request) -> Response:
        """The rules form sent: each key whose value differs from the rules the explorer started
        with becomes a `set=` item (any other name too, to be refused as `--set` refuses it)."""
        started_with = rules_keys(started.rules)
        items = list(_settings(request))
        fields = [(key, value) for key, value in request.query_params.multi_items()
                  if key not in ("position", "set", "bonus_form", "bonus_card") and not key.startswith("bonus_copies.")]
        if "bonus_form" in request.query_params:  # the pile's checkboxes and counts, as one bonus_cards value
            fields.append(("bonus_cards", bonus_pile(request)))
        for key, value in fields:
            if started_with.get(key) != value:
                items.append(f"{key}={value}")
        rules = rule_sets.rules(items)
        rule_sets.check_solvable(rules)  # refused here, before the page is asked for
        try:  # the same position under the new rules, where it is one
            position = format_position(parse_position(_param(request, "position") or "start", rules), rules)
        except BAD_INPUT:
            position = "start"
        return RedirectResponse(url("/", settings_between(started.rules, rules), position=position), status_code=303)

    def side_items(request: Request) -> list[tuple[str, list[str]]]:
        return [(name, [item for item in request.query_params.getlist(name) if item.strip()]) for name in ("a", "b")]

    def compared(request: Request) -> tuple[Side, Side]:
        """Both sides, each table queued for solving where it is not stored (`TableNotReady` for those)."""
        explorers, waiting, asks = [], [], []
        both = [(name, items, side_rules(items, name)) for name, items in side_items(request)]
        for name, _, rules in both:  # both good and solvable before either is queued
            try:
                rule_sets.check_solvable(rules)
            except BAD_INPUT as error:
                raise ExploreInputError(f"{name}: {message(error)}") from None
        for name, items, rules in both:
            try:
                explorers.append((rule_sets.explorer_for(rules, name), items))
            except TableNotReady as not_ready:
                waiting += not_ready.waiting
            except SolveNotAsked as asked:
                asks += asked.estimates
            except BAD_INPUT as error:
                raise ExploreInputError(f"{name}: {message(error)}") from None
        if asks:
            raise SolveNotAsked(asks)
        if waiting:
            raise TableNotReady(waiting)
        (a, a_items), (b, b_items) = explorers
        return side_of(a, a_items), side_of(b, b_items)

    def api_compare(request: Request) -> dict:
        return compare_json(*compared(request))

    def compare(request: Request) -> Response:
        try:
            return HTMLResponse(compare_page(side_items(request), compared(request)))
        except TableNotReady as waiting:
            return waiting_page(waiting, request, token)
        except SolveNotAsked as asked:
            return asked_page(asked, request, token)
        except BAD_INPUT as error:
            return HTMLResponse(compare_page(side_items(request), None, message(error)), status_code=400)

    def page_rule_sets(request: Request) -> list:
        """The rule sets the page (or API answer) at `request`'s address shows."""
        if request.url.path.endswith("compare"):
            return [side_rules(items, name) for name, items in side_items(request)]
        return [rule_sets.rules(_settings(request))]

    def act(request: Request, action: str, key: str | None) -> None:
        """Start the solves of the rule sets at `request`'s address, or cancel them (or the one of `key`)."""
        named = page_rule_sets(request)
        if action == "solve":
            for rules in named:  # every one solvable before any is queued
                rule_sets.check_solvable(rules)
            for rules in named:
                rule_sets.start(rules)
            return
        keys = {fingerprint(rules) for rules in named}
        if key is not None and key not in keys:
            raise ExploreInputError(f"no solve of rules [{key[:12]}] on this page to cancel")
        for each in sorted(keys) if key is None else [key]:
            rule_sets.solves.cancel(each)

    def posting(answer: Callable[[Request], Response] | None) -> Callable[[Request], Awaitable[Response]]:
        """The POST to a page's (or an API's) address: its solves started or cancelled (`act`), then the
        page's answer to a GET (a 303 to it; an API, its answer)."""
        async def endpoint(request: Request) -> Response:
            api = answer is not None
            try:
                fields = await posted_form(request)
                refusal = cross_site_refusal(request, fields, token)
                if refusal is not None:
                    raise PostRefused(403, refusal)
                action = fields.get("do", "solve")
                if action not in ("solve", "cancel"):
                    raise PostRefused(400, f"do must be solve or cancel, not {action[:40]!r}")
                await run_in_threadpool(act, request, action, fields.get("fingerprint"))
            except PostRefused as refused:
                return (JSONResponse({"error": refused.text}, status_code=refused.status) if api
                        else PlainTextResponse(refused.text, status_code=refused.status))
            except BAD_INPUT as error:
                if api:
                    return _bad_json(error)
                return HTMLResponse(error_page(started, message(error), (_param(request, "position") or "")[:2000]),
                                    status_code=400)
            if answer is not None:
                return await run_in_threadpool(answer, request)
            return RedirectResponse(here(request), status_code=303)
        return endpoint

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        text = NOT_FOUND if status == 404 else ("only GET requests are served, and POSTs to /, /coach, /compare,"
                                                 " /api/query and /api/compare (to start or cancel a solve)")
        return PlainTextResponse(text, status_code=status)

    async def server_error(request: Request, exc: Exception) -> Response:
        # The server logs the traceback; the page gets one line.
        return PlainTextResponse(f"internal error ({type(exc).__name__}); the details are on the server's stderr",
                                 status_code=500)

    routes = [
        Route("/", page_route(home), methods=["GET"]),
        Route("/coach", page_route(coach), methods=["GET"]),
        Route("/rules", page_route(apply_rules), methods=["GET"]),
        Route("/compare", compare, methods=["GET"]),
        Route("/api/compare", json_route(api_compare), methods=["GET"]),
        Route("/api/query", json_route(api_query), methods=["GET"]),
        Route("/api/step", json_route(api_step), methods=["GET"]),
        Route("/api/coach", json_route(api_coach), methods=["GET"]),
        *(Route(path, posting(None), methods=["POST"]) for path in ("/", "/coach", "/compare")),
        Route("/api/query", posting(json_route(api_query)), methods=["POST"]),
        Route("/api/compare", posting(json_route(api_compare)), methods=["POST"]),
    ]
    middleware = [Middleware(SecurityHeaders), Middleware(QueryLimits), Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts or ["*"])]
    app = Starlette(routes=routes, middleware=middleware,
                    exception_handlers={404: not_found, 405: not_found, 500: server_error})
    app.state.rule_sets = rule_sets  # its background solves end with the server (`serve`)
    return app


def coach_json(explorer: Explorer, game: CoachGame) -> dict:
    """A coached game as JSON: each turn's cards, values and cost, and the totals."""
    return {
        "fingerprint": explorer.fingerprint,
        "start": explorer.text(game.start),
        "seat": game.seat + 1,
        "seed": game.seed,
        "turns": [
            {
                "turn": t.number, "position": explorer.text(t.position), "value": t.value,
                "card": t.mine.label, "solver_card": t.theirs.label, "card_values": t.values,
                "chosen_value": t.chosen, "best_value": t.best, "best_cards": list(t.best_cards), "cost": t.cost,
                "chance": str(t.chance),
                "next": None if t.outcome.position is None else explorer.text(t.outcome.position),
                "winner": t.outcome.label,
            }
            for t in game.turns
        ],
        "position": None if game.position is None else explorer.text(game.position),
        "winner": game.result,
        "winner_seat": None if game.winner is None else game.winner.seat + 1,
        "total_cost": game.total_cost,
        "lost_turns": [t.number for t in game.lost_turns],
    }
