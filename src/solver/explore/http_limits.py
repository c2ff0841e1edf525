"""The explorer's HTTP/1.1 connections: uvicorn's own (h11), but a request whose
head outgrows `MAX_HEAD_BYTES` is answered 414 (its request line, the address,
is the long part) or 431 (its headers are), rather than by closing the
connection on it: the rest of the request is read and dropped while the answer
goes out, so the client gets the answer, not a reset connection."""

from __future__ import annotations

import h11
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
