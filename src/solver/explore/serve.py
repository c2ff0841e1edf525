"""`charge-spark explore` from the command line: the rule set's table stored
(solved first when it is not), a socket bound, the server run, the URL
printed once it serves.

Served by uvicorn (ASGI) with Starlette's routing: both widely used and kept
up, small, with no template or database layer to bring in; the routes are
plain functions, the tests drive them in-process with Starlette's client."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rules.charge_spark.config import RuleSet, fingerprint
from rules.charge_spark.game import ChargeSparkGame, ReferenceChargeSparkGame
from rules.charge_spark.size import estimate_reachable
from rules.charge_spark.state import initial_position

from ..answering import UNASKED_SOLVE_LIMIT, SolveNotAskedError, about_states, solve_time_text
from ..core.files import OutputError
from ..core.resources import usable_cores
from ..core.table_file import table_path
from ..storage import default_cache_dir
from ..tables import readers_kept_open, solved_table, stored_part
from .answers import Explorer
from .app import create_app

if TYPE_CHECKING:
    import uvicorn

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def stored_table(rules: RuleSet, cache_dir: str | None, warn: Callable[[str], None],
                 log: Callable[[str], None], solve_command: str = "charge-spark solve") -> Path:
    """The path of the rule set's stored table: solved and stored first (with
    progress on a terminal) when it is not, the start's length and stalls kept
    as `solve` keeps them. Past `UNASKED_SOLVE_LIMIT` states, an hour's solve
    is not started unasked: `SolveNotAskedError` names `solve_command`."""
    key = fingerprint(rules)
    path = table_path(Path(cache_dir) if cache_dir else default_cache_dir(), key)
    code = ChargeSparkGame(rules).encode(initial_position(rules))
    if stored_part(path, key, code, ReferenceChargeSparkGame(rules), warn) is not None:
        return path  # a few blocks read: the table is answered state by state from here on
    whole = estimate_reachable(rules, initial_position(rules))
    if whole > UNASKED_SOLVE_LIMIT:
        raise SolveNotAskedError(
            f"the table of these rules [{key}] is not stored, and they have {about_states(whole)}"
            f" ({solve_time_text(whole)} to solve): run {solve_command} first; the explorer reads the stored table")
    log(f"no stored table for these rules [{key}]: solving {about_states(whole)} ({solve_time_text(whole)}),"
        " stored for next time")
    table = solved_table(rules, cache_dir, show_progress=sys.stderr.isatty(), warn=warn, workers=usable_cores())
    if not table.stored:
        raise OutputError(f"the table could not be stored in {table.path.parent}: the explorer reads its answers"
                          " from the stored table (see the warning above)")
    if not table.reused:
        from ..analysis.stalls import keep_length_and_stalls

        keep_length_and_stalls(rules, code, table.result, table.path.parent)
    return table.path


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to `host`:`port` (0: a free port); a one-line error when it cannot be."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)  # connections wait from now on, while the server starts
    except OSError as error:  # socket.gaierror included: an unknown host name
        raise click.BadParameter(f"cannot listen on {host} port {port}: {error.strerror or error}",
                                 param_hint="--host/--port") from None
    return sock


def address_of(sock: socket.socket, host: str) -> str:
    """The URL to open for a server listening on `sock`."""
    port = sock.getsockname()[1]
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else "[::1]" if host == "::" else (
        f"[{host}]" if ":" in host else host)
    return f"http://{shown}:{port}/"


def _server(explorer: Explorer, host: str, listening: Callable[[], None] | None = None) -> uvicorn.Server:
    """uvicorn's server of `explorer`; `listening` is called once it serves, its
    Ctrl-C handler in place (before, a Ctrl-C could land in the middle of
    building the event loop, and Python printed that loop's half-built
    state as a traceback on the way out)."""
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and listening is not None:
                listening()

    from .http_limits import MAX_HEAD_BYTES, BoundedH11Protocol

    # Behind a loopback address, only loopback names: a page elsewhere cannot reach it by a name it controls.
    allowed = ["127.0.0.1", "localhost", "[::1]"] if host in LOOPBACK else None
    config = uvicorn.Config(create_app(explorer, allowed), log_level="warning", access_log=False, lifespan="off",
                            server_header=False, http=BoundedH11Protocol, h11_max_incomplete_event_size=MAX_HEAD_BYTES)
    return Server(config)


@contextlib.contextmanager
def serving_in_thread(explorer: Explorer, host: str = "127.0.0.1") -> Iterator[str]:
    """The explorer served from a thread of this process on a free port, for
    as long as the block runs; yields its URL (the benchmark's way in)."""
    sock = listen(host, 0)
    server = _server(explorer, host)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    with readers_kept_open():
        thread.start()
        try:
            yield address_of(sock, host)
        finally:
            server.should_exit = True
            thread.join()
            sock.close()
            _stop_solves(server)


def serve(rules: RuleSet, cache_dir: str | None, host: str, port: int, echo: Callable[[str], None],
          warn: Callable[[str], None], solve_command: str = "charge-spark solve") -> None:
    """Serve the explorer of `rules` until interrupted (`solve_command`: the
    command that stores the rules' table, named when it is too large to solve unasked)."""
    stored_table(rules, cache_dir, warn, lambda line: print(f"charge-spark: {line}", file=sys.stderr, flush=True),
                 solve_command)
    sock = listen(host, port)
    explorer = Explorer(rules, cache_dir)
    echo(f"charge-spark explore: rules {rules.name or '(unnamed)'} [fingerprint {explorer.fingerprint}]")
    server = _server(explorer, host, lambda: echo(f"open {address_of(sock, host)}   (Ctrl-C stops the server)"))
    with readers_kept_open():
        try:
            server.run(sockets=[sock])
        finally:  # Ctrl-C included: the worker ends, and the cache is left as it was before its solve
            _stop_solves(server)


def _stop_solves(server: uvicorn.Server) -> None:
    server.config.app.state.rule_sets.solves.stop()
