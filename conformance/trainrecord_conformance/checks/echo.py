"""A loopback HTTP server that echoes the Authorization header it was sent, as a debug
server or a proxy may: the report_status checks send through it to see that the token never
comes back into the raised message.

``/echo/<code>/<form>/...`` answers status ``code`` with a body holding the request's
Authorization header: ``plain`` as it arrived, ``quoted`` percent-encoded (every byte but
letters, digits and ``-._~``), ``cut`` after 283 filler characters, so that the token (after
``Bearer ``) starts at character 290 and straddles the 300-character preview.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote

FORMS = ("plain", "quoted", "cut")


def echo_body(form: str, auth: str) -> str:
    """The body that answers a request with ``auth`` as its Authorization header."""
    if form == "quoted":
        return '{"ok": false, "headers": {"authorization": "' + quote(auth, safe="") + '"}}'
    if form == "cut":
        return "x" * 283 + auth + " (echoed)"
    return f"bad request; you sent Authorization: {auth}"


class _EchoHandler(BaseHTTPRequestHandler):
    server: EchoServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        parts = self.path.split("/")
        code = int(parts[2]) if len(parts) > 3 and parts[2].isdigit() else 500
        form = parts[3] if len(parts) > 3 and parts[3] in FORMS else "plain"
        with self.server.lock:
            self.server.arrived += 1
        payload = echo_body(form, self.headers.get("Authorization") or "").encode("latin-1")
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class EchoServer(ThreadingHTTPServer):
    """The echoing server on a free loopback port, serving from a daemon thread."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _EchoHandler)
        self.base = f"http://127.0.0.1:{self.server_address[1]}"
        self.lock = threading.Lock()
        self.arrived = 0
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up mid-answer: nothing to report."""

    def close(self) -> None:
        """Stop serving."""
        self.shutdown()
        self.server_close()
