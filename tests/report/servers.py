"""Small real servers for the reporting tests: a recording server with a chosen answer,
a hanging one, one that answers garbage, one that closes the connection, one that drips its
answer a byte at a time, one that floods a huge body and counts what the client took, over
HTTP or TLS.

Every server runs in a daemon thread on 127.0.0.1 with a free port and records what it
received (method, path, headers, body), so a test can assert what reached it, e.g. that
the token never reached a redirect target.
"""

from __future__ import annotations

import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote


@dataclass
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        """The value of one header (case-insensitive), or None."""
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None


@dataclass
class Behaviour:
    """What the server answers: a status, a body, headers; or hang, garbage, close; or the
    answer dripped one byte every ``drip`` seconds, from its first byte (``drip``) or after
    the status line and headers (``drip_body``). ``echo``: the body with ``{auth}`` replaced
    by the request's Authorization header as it arrived and ``{auth%}`` by it
    percent-encoded (a debug server or proxy that echoes what it was sent)."""

    status: int = 200
    body: bytes = b'{"ok": true}'
    headers: dict[str, str] = field(default_factory=dict)
    mode: str = "answer"  # answer | hang | garbage | close | drip | drip_body | echo | flood
    drip: float = 0.15
    flood: int = 0
    """``mode="flood"``: the answer announces a body of this many bytes (``body`` first,
    then ``Z``s) and writes it in 64 KiB pieces until it is all sent or the client closes;
    the server counts in ``body_bytes_sent`` what the connection took."""


class _Handler(BaseHTTPRequestHandler):
    server: TestServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _record(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        got = Received(self.command, self.path, list(self.headers.items()), body)
        with self.server.lock:
            self.server.requests.append(got)
        self.server.arrived.set()

    def _answer(self) -> None:
        self._record()
        b = self.server.behaviour
        if b.mode == "hang":
            self.server.release.wait(60)
            self.close_connection = True
            return
        if b.mode == "close":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if b.mode == "garbage":
            self.wfile.write(b"\x00\xffthis is not HTTP at all\r\n\r\n\xfe")
            self.wfile.flush()
            self.close_connection = True
            return
        if b.mode in ("drip", "drip_body"):
            self._drip(b)
            return
        if b.mode == "flood":
            self._flood(b)
            return
        body = b.body
        if b.mode == "echo":
            auth = self.headers.get("Authorization") or ""
            body = body.replace(b"{auth}", auth.encode("latin-1"))
            body = body.replace(b"{auth%}", quote(auth, safe="").encode("ascii"))
        self.send_response(b.status)
        for key, value in b.headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _flood(self, b: Behaviour) -> None:
        self.close_connection = True
        self.send_response(b.status)
        for key, value in b.headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(b.flood))
        self.end_headers()
        head, piece = b.body[: b.flood], b"Z" * 65536
        try:
            self.wfile.write(head)
            self.server.count_sent(len(head))
            left = b.flood - len(head)
            while left > 0:
                chunk = piece[: min(left, len(piece))]
                self.wfile.write(chunk)
                self.server.count_sent(len(chunk))
                left -= len(chunk)
        except OSError:
            pass  # the client closed the connection: what it had taken is counted
        finally:
            self.server.flood_over.set()

    def _drip(self, b: Behaviour) -> None:
        head = (
            f"HTTP/1.1 {b.status} OK\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(b.body)}\r\n\r\n"
        ).encode()
        self.close_connection = True
        try:
            if b.mode == "drip_body":
                self.wfile.write(head)
                self.wfile.flush()
                head = b""
            for i in range(len(head + b.body)):
                if self.server.release.wait(b.drip):
                    return
                self.wfile.write((head + b.body)[i : i + 1])
                self.wfile.flush()
        except OSError:
            pass  # the client gave up: what the test expects

    do_POST = do_GET = _answer


class TestServer(ThreadingHTTPServer):
    """A recording server with a switchable :class:`Behaviour`."""

    daemon_threads = True
    __test__ = False

    def __init__(self, behaviour: Behaviour, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.behaviour = behaviour
        self.requests: list[Received] = []
        self.lock = threading.Lock()
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.body_bytes_sent = 0
        self.flood_over = threading.Event()
        self.tls = tls
        if tls is not None:
            self.socket = tls.wrap_socket(self.socket, server_side=True)
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # TLS handshakes refused by the client land here; nothing to report

    def count_sent(self, n: int) -> None:
        """Add ``n`` body bytes the connection took (``mode="flood"``)."""
        with self.lock:
            self.body_bytes_sent += n

    @property
    def url(self) -> str:
        """Base URL of the server."""
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.server_address[1]}"

    def stop(self) -> None:
        """Release hanging requests and stop."""
        self.release.set()
        self.shutdown()
        self.server_close()


class RawServer(socketserver.ThreadingTCPServer):
    """A TCP server that accepts and records raw bytes (for TLS refusal checks)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        super().__init__(("127.0.0.1", 0), _RawHandler)
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()


class _RawHandler(socketserver.BaseRequestHandler):
    server: RawServer

    def handle(self) -> None:
        self.request.settimeout(5)
        try:
            data = self.request.recv(65536)
        except OSError:
            data = b""
        self.server.chunks.append(data)


def wait_until(cond: Callable[[], bool], limit: float = 20.0) -> None:
    """Poll until ``cond()`` (a guard against hanging, not a speed assertion)."""
    deadline = time.monotonic() + limit
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.01)
