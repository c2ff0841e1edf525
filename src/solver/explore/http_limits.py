"""The explorer's HTTP/1.1 connections: uvicorn's own (h11), but a request whose
head outgrows `MAX_HEAD_BYTES` is answered 414 (its request line, the address,
is the long part) or 431 (its headers are), rather than by closing the
connection on it: the rest of the request is read and dropped while the answer
goes out, so the client gets the answer, not a reset connection.

And the limits of a POST (the forms that start or cancel a solve): a small
urlencoded body, and proof that it comes from the explorer's own page (its
token) or from a script (a header of its own), never from another site's page."""

from __future__ import annotations

import hmac
from urllib.parse import parse_qsl, urlsplit

import h11
from starlette.requests import Request
from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_HEAD_BYTES = 65_536
"""Largest request line and headers read (the application refuses a query
string past 16 KB itself, with a 400 saying so)."""
DRAIN_SECONDS = 5.0
"""How long the rest of a refused request is read before the connection is closed anyway."""

REASONS = {414: "URI Too Long", 431: "Request Header Fields Too Large"}


def head_refusal(head: bytes) -> tuple[int, str]:
    """The status and one line for a request head of `head` (and more) bytes."""
    line_end = head.find(b"\r\n")
    if line_end < 0 or line_end > MAX_HEAD_BYTES // 2:
        return 414, f"the address is too long (the request line runs past {MAX_HEAD_BYTES // 2:,} bytes)\n"
    return 431, f"the request's headers are too large (past {MAX_HEAD_BYTES:,} bytes)\n"


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with `head_refusal`'s answers for an oversized head."""

    refusing = False

    def data_received(self, data: bytes) -> None:
        if self.refusing:
            return  # the rest of a refused request: read, so that closing does not reset the connection
        super().data_received(data)

    def send_400_response(self, msg: str) -> None:
        head, _ = self.conn.trailing_data
        if len(head) <= MAX_HEAD_BYTES:  # malformed, not oversized: uvicorn's own 400
            super().send_400_response(msg)
            return
        status, text = head_refusal(head)
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"x-content-type-options", b"nosniff"),
                   (b"connection", b"close")]
        for event in (h11.Response(status_code=status, headers=headers, reason=REASONS[status]),
                      h11.Data(data=text.encode()), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self.refusing = True
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(DRAIN_SECONDS, self.transport.close)


# --- POSTs: the explorer's forms that start or cancel a solve -------------------------------------

MAX_FORM_BYTES = 4_096
"""Largest POST body read (the forms send a token, an action and a fingerprint)."""
MAX_FORM_FIELDS = 16
SCRIPT_HEADER = "x-charge-spark"
"""A request header that a script sends in place of the page's token: a page of another site cannot send
it (a cross-origin request with a header of its own needs a preflight the explorer never grants)."""


class PostRefused(Exception):
    """A POST refused before it does anything: its status and one line."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status, self.text = status, text


async def posted_form(request: Request) -> dict[str, str]:
    """The fields of a POSTed form (urlencoded, at most `MAX_FORM_BYTES`, read no further); `PostRefused`."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in ("", "application/x-www-form-urlencoded"):
        raise PostRefused(415, f"a POST is a form (application/x-www-form-urlencoded), not {kind[:60]!r}")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise PostRefused(413, f"the POST's body is too large (at most {MAX_FORM_BYTES:,} bytes)")
    try:
        return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True,
                              max_num_fields=MAX_FORM_FIELDS))
    except ValueError:
        raise PostRefused(400, f"too many form fields (at most {MAX_FORM_FIELDS})") from None


def cross_site_refusal(request: Request, fields: dict[str, str], token: str) -> str | None:
    """Why a POST may come from a page of another site, and is refused (None: it comes from the explorer's own
    page, which carries `token`, or from a script, which sends `SCRIPT_HEADER`)."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"a POST from a page of another site ({site[:40]}) is refused"
    origin = request.headers.get("origin")
    if origin not in (None, "null") and urlsplit(origin).netloc != request.headers.get("host"):
        return "a POST from a page of another origin is refused"
    if SCRIPT_HEADER in request.headers:
        return None
    if hmac.compare_digest(fields.get("token", "").encode(), token.encode()):
        return None
    return (f"a POST needs the token of the explorer's own page (reload the page: the explorer was restarted?)"
            f" or, from a script, the header {SCRIPT_HEADER.title()}")
