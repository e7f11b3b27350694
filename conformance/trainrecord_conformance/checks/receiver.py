"""A loopback HTTP(S) receiver that records every request, for the client checks.

Paths decide the answer: ``/status/<code>/...`` answers that status, ``/redirect/...``
answers 302 to ``/landing/...`` on the same server, ``/body/<code>/<n>/...`` answers that
status with an n-character body (:func:`answer_body`; a 3xx with a ``Location`` to
``/landing/...``, as a real redirect has), ``/pattern/<letters>/...`` answers
its i-th request 200 for ``o`` and 500 for ``f`` (the last letter repeats), anything else 200
``{"ok": true}``.
Every request is recorded (method, path, headers, body) so a check can see exactly what
arrived, and what did not.
"""

from __future__ import annotations

import ssl
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Request:
    """One request as it arrived."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    names: tuple[str, ...] = ()
    """Every header's name as it arrived, in lower case and in order, repeats kept."""


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.record(
            Request(
                self.command,
                self.path,
                {k.lower(): v for k, v in self.headers.items()},
                body,
                tuple(k.lower() for k, _ in self.headers.items()),
            )
        )
        parts = self.path.split("/")
        if len(parts) > 2 and parts[1] == "status" and parts[2].isdigit():
            code = int(parts[2])
        elif len(parts) > 1 and parts[1] == "redirect":
            self.send_response(302)
            self.send_header("Location", self.server.base + "/landing/" + "/".join(parts[2:]))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        else:
            code = 200
        payload = b'{"ok": true}' if 200 <= code < 300 else b'{"ok": false, "error": "test"}'
        if len(parts) > 2 and parts[1] == "pattern" and parts[2]:
            seen = len(self.server.arrived(self.path)) - 1
            code = 200 if parts[2][min(seen, len(parts[2]) - 1)] == "o" else 500
            payload = b'{"ok": true}' if code == 200 else b'{"ok": false, "error": "test"}'
        if len(parts) > 3 and parts[1] == "body" and parts[2].isdigit() and parts[3].isdigit():
            code, payload = int(parts[2]), answer_body(int(parts[3])).encode("ascii")
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        if 300 <= code < 400 and code != 304:  # a redirect as servers send it: a Location too
            self.send_header("Location", self.server.base + "/landing/" + "/".join(parts[2:]))
        self.end_headers()
        if code not in (204, 304):
            self.wfile.write(payload)

    do_POST = do_GET = do_PUT = _handle


def answer_body(length: int) -> str:
    """The body ``/body/<code>/<length>/...`` answers: numbered chunks, so any cut shows."""
    return "".join(f"<{i:04d}>" for i in range(length // 6 + 1))[:length]


class Receiver(ThreadingHTTPServer):
    """The recording server, serving from a daemon thread."""

    daemon_threads = True

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        if tls is not None:
            self.socket = tls.wrap_socket(self.socket, server_side=True)
        self.scheme = "https" if tls is not None else "http"
        self.base = f"{self.scheme}://127.0.0.1:{self.server_address[1]}"
        self._requests: list[Request] = []
        self._lock = threading.Lock()
        self._counter = 0
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A failed TLS handshake is expected in the TLS checks: stay quiet."""

    def record(self, request: Request) -> None:
        """Keep a request."""
        with self._lock:
            self._requests.append(request)

    def fresh(self, prefix: str = "") -> str:
        """A path no earlier request used (``<prefix>/c<n>/api/runs``)."""
        with self._lock:
            self._counter += 1
            return f"{prefix}/c{self._counter}/api/runs"

    def arrived(self, marker: str) -> list[Request]:
        """Requests whose path contains ``marker``."""
        with self._lock:
            return [r for r in self._requests if marker in r.path]

    def close(self) -> None:
        """Stop serving."""
        self.shutdown()
        self.server_close()


class TlsPair:
    """A throwaway CA and a receiver with a certificate for 127.0.0.1 signed by it."""

    def __init__(self, folder: str) -> None:
        import trustme

        self.ca = trustme.CA()
        cert = self.ca.issue_cert("127.0.0.1", "localhost")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(context)
        self.ca_file = f"{folder}/ca.pem"
        self.ca.cert_pem.write_to_path(self.ca_file)
        self.receiver = Receiver(context)

    def close(self) -> None:
        """Stop serving."""
        self.receiver.close()
