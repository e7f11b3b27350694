"""The reference receiver: the server side of the Reporting API v2 (``trainrecord serve``).

POST (any path: the endpoint is whatever URL the clients are given):

* 401 without ``Authorization: Bearer <token>`` or with a wrong one (constant-time compare
  of the token; the scheme ``Bearer`` in any case, as HTTP auth schemes are
  case-insensitive, followed by one or more spaces);
* 415 when Content-Type is not application/json; 411 without Content-Length;
* 413 when Content-Length is over 256 KB (262144 bytes), judged before reading the body;
* a refused POST's body (401, 415, 413) is read and dropped, never kept, when its
  Content-Length is at most ``DRAIN_LIMIT`` (4 MiB), and the answer says
  ``Connection: close``: a client that sends its whole body before it reads (requests)
  then gets the answer instead of a reset or, over TLS, an ``SSLEOFError``. Over
  ``DRAIN_LIMIT`` nothing is read: the answer is sent and the connection closed;
* 400 for a body that is not strict JSON in UTF-8;
* 422 for a report that fails reporting.schema.json: ``{"ok": false, "problems": [{rule,
  path, message, value}]}``;
* 200 ``{"ok": true, "stored": <bool>}`` otherwise, also for an old or duplicate report
  (stored only when its seq is newer than the stored one for its run_id).

GET, with the same bearer token: ``/api/runs`` lists every run with its ``state`` (its
status, or ``no contact`` when in progress and silent for 3 x every + 5 minutes);
``/api/runs/<run_id>`` gives the run's latest report; ``/api/runs/<run_id>/receipts`` its
receipts.

Plain HTTP only on a loopback address; anywhere else it needs a certificate and key.

Public API: :func:`make_server` ``(host, port, *, token, store, every=60.0, certfile=None,
keyfile=None) -> ReportServer``; :class:`ReportServer` (``url``, ``serve_in_thread()``,
``shutdown()``); ``MAX_BODY``; ``DRAIN_LIMIT``.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import re
import socket
import sqlite3
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from trainrecord.canonical import loads_strict
from trainrecord.errors import RecordRefused, escaped
from trainrecord.report.payload import problems
from trainrecord.report.privacy import scrub_token
from trainrecord.report.settings import check_token, is_loopback_host
from trainrecord.report.store import ReportStore

MAX_BODY = 256 * 1024
DRAIN_LIMIT = 4 * 1024 * 1024
"""A refused POST's body is read and dropped up to this many bytes (by Content-Length) so
that the client reads the answer; over it the connection is closed without reading."""
_DRAIN_CHUNK = 64 * 1024
"""§2: accepting up to 256 KB is safe; more is refused with 413."""
REQUEST_TIMEOUT_S = 30.0
"""The longest a request may take, from its first byte (or the connection's TLS handshake)
to its last: a deadline for the whole of it, not for each read (a client dripping a byte
every 29 s held its connection for good)."""
KEEPALIVE_IDLE_S = 5.0
"""How long a kept-alive connection may wait for its next request (clients report every
``every`` seconds: an idle connection held for 30 s counted against the caps below for
half of each minute, so jobs behind one NAT address filled its share)."""
MAX_CONNECTIONS = 512
"""Connections served at once; more are closed at once, unread."""
MAX_PER_CLIENT = 64
"""Connections served at once from one client address (jobs behind one NAT gateway share
it): one client cannot take them all."""
log = logging.getLogger("trainrecord.report.receiver")
_RUN_PATH = re.compile(r"^/api/runs/([0-9a-f-]{36})(/receipts)?/?$")


class ReportServer(ThreadingHTTPServer):
    """A threading HTTP(S) server holding the store, token and ``every``."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        *,
        token: str,
        store: ReportStore,
        every: float,
        tls: ssl.SSLContext | None,
    ) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, ReportHandler)
        self.expected = token.encode()
        self.store = store
        self.every = every
        self.tls = tls
        if tls is not None:
            self.socket = tls.wrap_socket(
                self.socket, server_side=True, do_handshake_on_connect=False
            )
        self._thread: threading.Thread | None = None
        self._open: dict[str, int] = {}  # connections being served, by client address
        self._open_lock = threading.Lock()
        self._said_full = False

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection in a thread of its own, unless :data:`MAX_CONNECTIONS` are
        served already or :data:`MAX_PER_CLIENT` from its address (then it is closed at
        once, unread: idle connections could otherwise take every descriptor and thread)."""
        host = str(client_address[0])
        with self._open_lock:
            total = sum(self._open.values())
            if total >= MAX_CONNECTIONS or self._open.get(host, 0) >= MAX_PER_CLIENT:
                if not self._said_full:
                    self._said_full = True
                    log.warning(
                        "connections refused: %d open, %d from %s (at most %d, %d a client)",
                        total,
                        self._open.get(host, 0),
                        host,
                        MAX_CONNECTIONS,
                        MAX_PER_CLIENT,
                    )
                self.shutdown_request(request)
                return
            self._open[host] = self._open.get(host, 0) + 1
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._done(host)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._done(str(client_address[0]))

    def _done(self, host: str) -> None:
        with self._open_lock:
            left = self._open.get(host, 0) - 1
            if left > 0:
                self._open[host] = left
            else:
                self._open.pop(host, None)
            if sum(self._open.values()) < MAX_CONNECTIONS // 2:
                self._said_full = False

    @property
    def url(self) -> str:
        """The base URL, e.g. ``https://127.0.0.1:8443``."""
        host, port = self.server_address[:2]
        host = str(host)
        shown = f"[{host}]" if ":" in host else host
        return f"{'https' if self.tls else 'http'}://{shown}:{port}"

    def serve_in_thread(self) -> threading.Thread:
        """Serve from a daemon thread (for tests and embedding); returns it."""
        self._thread = threading.Thread(
            target=self.serve_forever, args=(0.05,), name="report-receiver", daemon=True
        )
        self._thread.start()
        return self._thread

    def close(self) -> None:
        """Stop serving and close the socket."""
        self.shutdown()
        self.server_close()


class ReportHandler(BaseHTTPRequestHandler):
    """One request to the receiver."""

    server: ReportServer
    protocol_version = "HTTP/1.1"
    timeout = REQUEST_TIMEOUT_S
    server_version = "trainrecord-receiver"
    sys_version = ""

    def handle(self) -> None:
        self._deadline = threading.Timer(REQUEST_TIMEOUT_S, self._cut)  # the handshake too
        self._deadline.daemon = True
        self._deadline.start()
        try:
            if isinstance(self.connection, ssl.SSLSocket):
                self.connection.settimeout(self.timeout)
                self.connection.do_handshake()  # in this request's thread, not the accept loop
            super().handle()
        except (ssl.SSLError, ConnectionError, TimeoutError, OSError) as exc:
            log.info("connection from %s dropped: %s", self.address_string(), type(exc).__name__)
            self.close_connection = True
        finally:
            self._deadline.cancel()

    def handle_one_request(self) -> None:
        """One request within :data:`REQUEST_TIMEOUT_S`; a kept-alive connection waits at most
        :data:`KEEPALIVE_IDLE_S` for it to begin (the first request of a connection has the
        whole deadline, its TLS handshake included)."""
        self._idle = getattr(self, "_served", False)
        if self._idle:
            self._restart(KEEPALIVE_IDLE_S)
        self._served = True
        super().handle_one_request()

    def parse_request(self) -> bool:
        """The request line arrived: a kept-alive connection's request has
        :data:`REQUEST_TIMEOUT_S` from here (the first one's deadline runs on)."""
        if self._idle:
            self._idle = False
            self._restart(REQUEST_TIMEOUT_S)
        return super().parse_request()

    def _restart(self, seconds: float) -> None:
        self._deadline.cancel()
        self._deadline = threading.Timer(seconds, self._cut)
        self._deadline.daemon = True
        self._deadline.start()

    def _cut(self) -> None:
        """The request ran past its deadline: shut the connection (a blocked read returns)."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def log_message(self, format: str, *args: Any) -> None:
        # the request line is the client's: a client that put the token in its URL (as a
        # query, say) must not put it into this log, as written or percent-encoded; and
        # its control characters are escaped, as the standard library's own log does (a
        # client could write terminal escapes or fake lines into the log)
        line = scrub_token(format % args, self.server.expected.decode("ascii"))
        log.info("%s %s", self.address_string(), escaped(line))

    def _send(
        self,
        status: int,
        doc: dict[str, Any],
        extra: dict[str, str] | None = None,
        close: bool = False,
    ) -> None:
        body = json.dumps(doc, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def _drop_body(self) -> None:
        """Read and drop the body of a POST about to be refused, when its Content-Length is
        a number up to DRAIN_LIMIT (the caller closes the connection after answering)."""
        if self.command != "POST":
            return
        try:
            left = int(self.headers.get("Content-Length") or "")
        except ValueError:
            return
        if not 0 < left <= DRAIN_LIMIT:
            return
        while left > 0:
            chunk = self.rfile.read(min(left, _DRAIN_CHUNK))
            if not chunk:
                return
            left -= len(chunk)

    def _authorised(self) -> bool:
        # white space around a field value is not part of it (RFC 9110 §5.5), so a trailing
        # space or tab after the token is dropped, as node:http drops it
        header = (self.headers.get("Authorization") or "").strip(" \t")
        scheme, _, credentials = header.partition(" ")
        given = credentials.lstrip(" ").encode("utf-8", "replace")
        same = hmac.compare_digest(given, self.server.expected)  # constant time, always run
        if same and scheme.lower() == "bearer":
            return True
        log.warning(
            "refused %s %s from %s: bad or missing bearer token",
            self.command,
            escaped(self.path.split("?", 1)[0][:100]),
            self.address_string(),
        )
        self._drop_body()
        self._send(
            401,
            {"ok": False, "error": "bad or missing bearer token"},
            {"WWW-Authenticate": 'Bearer realm="trainrecord"'},
            close=True,
        )
        return False

    def do_POST(self) -> None:
        if not self._authorised():
            return
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            self._drop_body()
            self._send(
                415, {"ok": False, "error": "Content-Type must be application/json"}, close=True
            )
            return
        length_text = self.headers.get("Content-Length")
        if length_text is None:
            self._send(411, {"ok": False, "error": "Content-Length is required"}, close=True)
            return
        try:
            length = int(length_text)
            if length < 0:
                raise ValueError
        except ValueError:
            self._send(400, {"ok": False, "error": "Content-Length is not a number"}, close=True)
            return
        if length > MAX_BODY:
            self._drop_body()  # judged by Content-Length above; the body is only dropped
            self._send(413, {"ok": False, "error": f"body over {MAX_BODY} bytes"}, close=True)
            return
        raw = self.rfile.read(length)
        if len(raw) != length:
            self.close_connection = True
            return
        try:
            report = loads_strict(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            self._send(400, {"ok": False, "error": "the body is not strict JSON in UTF-8"})
            return
        try:
            found = problems(report)
        except RecursionError:  # nested just under the parser's limit: the validator's
            self._send(400, {"ok": False, "error": "the body is nested too deeply"})
            return
        if found:
            self._send(422, {"ok": False, "problems": [p.to_json() for p in found[:50]]})
            return
        try:
            stored = self.server.store.put(report)
        except (OverflowError, sqlite3.Error) as exc:  # an answer, never a dropped connection
            log.error("could not store a report: %s: %s", type(exc).__name__, exc)
            self._send(500, {"ok": False, "error": "the receiver could not store the report"})
            return
        self._send(200, {"ok": True, "stored": stored})

    def do_GET(self) -> None:
        if not self._authorised():
            return
        path = self.path.split("?", 1)[0]
        if path.rstrip("/") == "/api/runs":
            self._send(
                200, {"runs": self.server.store.runs(self.server.every), "every": self.server.every}
            )
            return
        match = _RUN_PATH.match(path)
        if match:
            run_id = match.group(1)
            if match.group(2):
                self._send(200, {"run_id": run_id, "receipts": self.server.store.receipts(run_id)})
                return
            report = self.server.store.latest(run_id)
            if report is not None:
                self._send(200, report)
                return
        self._send(404, {"ok": False, "error": "not found"})

    def _not_allowed(self) -> None:
        self._send(
            405,
            {"ok": False, "error": "use POST to report, GET to read"},
            {"Allow": "GET, POST"},
            close=True,
        )

    do_PUT = do_DELETE = do_PATCH = _not_allowed


def server_tls(host: str, certfile: str | None, keyfile: str | None) -> ssl.SSLContext | None:
    """The TLS context for ``certfile`` and ``keyfile`` (None: plain HTTP, loopback only).

    Refuses (:class:`RecordRefused`) a certificate without a key or the reverse, and plain
    HTTP off loopback; ``load_cert_chain``'s ``OSError`` or ``ssl.SSLError`` propagate.
    Creates nothing, so a caller can check its arguments before opening anything."""
    if (certfile is None) != (keyfile is None):
        raise RecordRefused.one(
            "report.server.plain_http_loopback",
            ("cert",),
            "give both --cert and --key for HTTPS, or neither",
        )
    if certfile is None:
        if not is_loopback_host(host):
            raise RecordRefused.one(
                "report.server.plain_http_loopback",
                ("host",),
                "plain HTTP is served only on a loopback address; give --cert "
                "and --key to serve HTTPS on another address",
                host,
            )
        return None
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.minimum_version = ssl.TLSVersion.TLSv1_2
    tls.load_cert_chain(certfile, keyfile)
    return tls


def make_server(
    host: str,
    port: int,
    *,
    token: str,
    store: ReportStore,
    every: float = 60.0,
    certfile: str | None = None,
    keyfile: str | None = None,
) -> ReportServer:
    """A receiver bound to ``host:port`` (port 0 picks a free one). Not yet serving."""
    check_token(token)
    tls = server_tls(host, certfile, keyfile)
    return ReportServer((host, port), token=token, store=store, every=every, tls=tls)
