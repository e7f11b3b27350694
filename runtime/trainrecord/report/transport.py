"""Transport (§2 of the seed): one POST of one report, and what its answer means.

Public API:

* :func:`post_report` ``(settings, body, session=None) -> Outcome``: POST ``body`` to
  ``settings.url`` exactly as configured, with exactly the headers Content-Type:
  application/json, Authorization: Bearer <token> and User-Agent: CORread-reporter/2; TLS
  verified; redirects never followed (a 3xx is a failure, so the token never reaches
  another address; its body is read like any other answer's: at most 4096 bytes, the first
  300 characters kept); ``settings.timeout`` (10 s) is one deadline for the whole exchange
  (connect, send the report, read the answer), however the server spreads its bytes; no
  retry. Never raises for a network or server failure: the :class:`Outcome` says what
  happened.
* :class:`Outcome`: ``ok``, ``status`` (HTTP status or None), ``category`` (accepted,
  unauthorized, invalid, redirect, failed, timeout, tls, network), ``body`` (first 300
  characters of the answer, the token in it as ``<token>``: a server or proxy that echoes
  the request's headers would otherwise hand it back) and ``message`` (a warning a person
  can act on; never the token).
* :class:`ReportNotDelivered`: raised by synchronous sends (``report_status()``) with the
  status code and the first 300 characters of the body (so never the token either).
* :func:`new_session`: a ``requests.Session`` with ``trust_env`` off (no .netrc auth can
  replace the token, no proxy from the environment for loopback), no default headers, and
  the adapter that holds the deadline and sends the request target exactly as configured
  (:func:`request_target`; ``requests`` alone would remove dot segments, drop a trailing
  ``?`` and decode ``%7E``).

The deadline: ``requests`` applies a timeout to each socket wait, so a server that sends a
byte every few seconds would never time out. Each exchange therefore arms a timer; when it
fires, every connection the exchange took from the session's pools is shut down, which ends
a pending connect, send or read at once, and the outcome is ``timeout``. Only sessions from
:func:`new_session` (the default) carry the adapter that lets the timer find the
connections. Name resolution (``getaddrinfo``) cannot be interrupted, so the exchange runs
on a thread of its own and the caller waits for it until the deadline (and a moment for the
cut to land): a resolver that hangs makes the outcome ``timeout`` on time, and the
connection it finally yields is shut down as soon as it has a socket, before anything is
sent on it.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError
from urllib3.util import SKIP_HEADER

from trainrecord.errors import TrainrecordError, escaped
from trainrecord.report.privacy import scrub_token
from trainrecord.report.settings import ReportSettings, is_loopback_host

USER_AGENT = "CORread-reporter/2"
BODY_PREVIEW = 300
_READ_LIMIT = 4096
_RECHECK_S = 0.05
"""After the deadline, how often a connection still without a socket is looked at again."""
_CUT_GRACE_S = 0.5
"""How long past the deadline the caller waits for the cut connection's exchange to end."""


@dataclass(frozen=True)
class Outcome:
    """What became of one report."""

    ok: bool
    status: int | None
    category: str
    body: str
    message: str


class ReportNotDelivered(TrainrecordError, RuntimeError):
    """A report that was meant to get through did not (``report_status()``). Its message
    shows the start of the server's answer :func:`~trainrecord.errors.escaped` (a server
    may answer with ESC [2J); ``body`` holds it as the server sent it."""

    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.status = outcome.status
        self.body = outcome.body
        code = f"HTTP {outcome.status}" if outcome.status is not None else outcome.category
        super().__init__(
            f"report not delivered ({code}): {outcome.message}"
            + (f"; server said: {escaped(outcome.body)}" if outcome.body else "")
        )


class _Deadline:
    """One exchange's deadline: when it passes, every connection the exchange took is shut
    down (which ends any wait on it at once) and :meth:`finish` says it fired."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._connections: list[Any] = []
        self._lock = threading.Lock()
        self._fired = False
        self._done = False
        self._timer: threading.Timer | None = None

    def start(self) -> None:
        self._arm(self.seconds)

    def _arm(self, delay: float) -> None:
        self._timer = threading.Timer(delay, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def attach(self, connection: Any) -> None:
        """A connection this exchange uses (called from the pools of :func:`new_session`)."""
        with self._lock:
            self._connections.append(connection)

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self._fired = True
            if not self._cut():
                self._arm(_RECHECK_S)  # still connecting: cut it as soon as it has a socket

    def _cut(self) -> bool:
        """Shut down every connection's socket; False while one has none yet."""
        cut_all = bool(self._connections)
        for connection in self._connections:
            sock = getattr(connection, "sock", None)
            raw = sock if isinstance(sock, socket.socket) else getattr(sock, "socket", None)
            if not isinstance(raw, socket.socket):
                cut_all = False
                continue
            # The plain socket's shutdown, also under TLS: it ends a blocked recv or send.
            with contextlib.suppress(OSError):
                socket.socket.shutdown(raw, socket.SHUT_RDWR)
        return cut_all

    @property
    def fired(self) -> bool:
        """Whether the deadline has passed."""
        with self._lock:
            return self._fired

    def finish(self) -> bool:
        """The exchange is over; returns whether the deadline passed first."""
        with self._lock:
            self._done = True
            if self._timer is not None:
                self._timer.cancel()
            return self._fired


_current = threading.local()
"""The deadline of the exchange running in this thread (``post_report``)."""


def _attach(connection: Any) -> None:
    deadline = getattr(_current, "deadline", None)
    if deadline is not None:
        deadline.attach(connection)


def _connected(connection: Any) -> None:
    """A connection just connected (its name resolved, TLS done; nothing sent yet): when the
    exchange's deadline already passed (a resolver that answered late), it is closed before
    the report goes out. A deadline passing after this finds the socket and cuts it."""
    deadline = getattr(_current, "deadline", None)
    if deadline is not None and deadline.fired:
        connection.close()
        raise ConnectTimeoutError(connection, "the exchange's deadline passed while connecting")


class _WatchedHTTPConnection(HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _connected(self)


class _WatchedHTTPSConnection(HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _connected(self)


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection

    def _get_conn(self, timeout: float | None = None) -> Any:
        connection = super()._get_conn(timeout)
        _attach(connection)
        return connection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection

    def _get_conn(self, timeout: float | None = None) -> Any:
        connection = super()._get_conn(timeout)
        _attach(connection)
        return connection


_POOLS = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


def request_target(url: str) -> str:
    """The request target of ``url`` exactly as written: everything after the host and
    port, without the fragment (never sent in HTTP), ``/`` when the path is empty.

    ``requests`` would normalise it (``/a/./b/../c`` -> ``/a/c``, a trailing ``?`` dropped,
    ``%7E`` -> ``~``); §2 says the URL is used exactly as configured. urllib3 then only
    percent-encodes what cannot be sent as it is (non-ASCII, a stray ``%``) and writes
    percent-escapes in upper case.
    """
    parts = urlsplit(url)
    rest = url.split("#", 1)[0][len(parts.scheme) + 3 + len(parts.netloc) :]
    return rest if rest.startswith("/") else "/" + rest


class _DeadlineAdapter(HTTPAdapter):
    """An adapter whose pools tell the running exchange's deadline which connection it
    uses (SOCKS proxies keep urllib3's own pools and only per-wait timeouts), and that
    sends the request target exactly as configured (``_exact_target`` on the request)."""

    def request_url(self, request: requests.PreparedRequest, proxies: Any) -> str:
        normalised = super().request_url(request, proxies)
        target = getattr(request, "_exact_target", None)
        # An absolute URL goes only to a plain-HTTP proxy, which a report never uses
        # (http:// is for loopback hosts, and those bypass proxies): left as requests made it.
        return target if target is not None and normalised.startswith("/") else normalised

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_POOLS)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):
            manager.pool_classes_by_scheme = dict(_POOLS)
        return manager


def new_session() -> requests.Session:
    """A session that sends only our headers, never reads credentials from the environment,
    and lets :func:`post_report` hold its deadline."""
    session = requests.Session()
    session.trust_env = False
    session.headers.clear()
    session.mount("https://", _DeadlineAdapter())
    session.mount("http://", _DeadlineAdapter())
    return session


def headers(settings: ReportSettings) -> dict[str, str]:
    """The three headers of §2, exactly (plus Host and Content-Length, which HTTP needs).

    urllib3's ``SKIP_HEADER`` keeps http.client from adding ``Accept-Encoding: identity``.
    """
    return {
        "Content-Type": "application/json",
        "Authorization": f"Bearer {settings.token}",
        "User-Agent": USER_AGENT,
        "Accept-Encoding": SKIP_HEADER,
    }


def _proxies(url: str) -> dict[str, str]:
    if is_loopback_host(urlsplit(url).hostname):
        return {}
    return dict(requests.utils.get_environ_proxies(url))


def _preview(resp: requests.Response, token: str) -> str:
    """The answer's first 300 characters, the token in it (as written or percent-encoded)
    replaced by ``<token>`` before the cut, so that no part of it is left at the end."""
    try:
        raw = resp.raw.read(_READ_LIMIT, decode_content=True) or b""
    except Exception:  # a server that breaks off mid-body: the status still counts
        raw = b""
    return scrub_token(raw.decode("utf-8", errors="replace"), token)[:BODY_PREVIEW]


SAFE_BODY = 256 * 1024
"""§2: "Accepting up to 256 KB is safe" (the receiver's limit, named in a 413's warning)."""


def classify(status: int, body: str, sent: int | None = None) -> Outcome:
    """The meaning of an HTTP status to the client (§2); ``sent`` is the size of the body
    sent, named when the server found it too large."""
    if 200 <= status < 300:
        return Outcome(True, status, "accepted", body, "accepted")
    if status in (401, 403):
        return Outcome(
            False,
            status,
            "unauthorized",
            body,
            f"the server refused the token (HTTP {status}); check "
            "CORREAD_REPORT_TOKEN against the server's",
        )
    if status in (400, 422):
        return Outcome(
            False,
            status,
            "invalid",
            body,
            f"the server found the report invalid (HTTP {status}); the client and "
            "server disagree on the schema",
        )
    if 300 <= status < 400:
        return Outcome(
            False,
            status,
            "redirect",
            body,
            f"the server answered with a redirect (HTTP {status}), which is never "
            "followed; point [report] url at the final address",
        )
    if status == 404:
        why = (
            "the server has no such address (HTTP 404); check [report] url: it is POSTed to "
            "exactly as configured, no path added"
        )
    elif status == 413:
        size = f"{sent} bytes" if sent is not None else "the report"
        why = (
            f"the server refused the report as too large (HTTP 413: {size}; §2 says "
            f"receivers accept up to {SAFE_BODY} bytes, and every report carries the whole "
            "history, about 400 bytes an epoch): raise the receiver's limit"
        )
    elif 400 <= status < 500:
        why = f"the server refused the report (HTTP {status})"
    else:
        why = f"the server failed (HTTP {status})"
    return Outcome(False, status, "failed", body, why)


def _malformed(exc: BaseException) -> str | None:
    """The name of the HTTP parsing error under ``exc`` (a bad status line, a header
    over the limits), or None when the connection failed or was closed."""
    if isinstance(exc, requests.exceptions.InvalidHeader):
        return "InvalidHeader"
    seen: set[int] = set()
    cause: Any = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, http.client.HTTPException) and not isinstance(
            cause, http.client.RemoteDisconnected | http.client.IncompleteRead
        ):
            return type(cause).__name__
        args = getattr(cause, "args", ())
        inner = [a for a in args if isinstance(a, BaseException)]
        cause = cause.__cause__ or cause.__context__ or (inner[-1] if inner else None)
    return None


def _tls_problem(exc: BaseException) -> str:
    """What a TLS failure was, from the ssl error under ``exc``: an expired certificate, one
    for another host, one no trusted CA signed, or a server that does not speak TLS."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ssl.SSLCertVerificationError):
            detail = str(cause.verify_message or "")
            if "expired" in detail:
                return "the server's TLS certificate has expired; no report was sent (renew it)"
            if "not yet valid" in detail:
                return (
                    "the server's TLS certificate is not valid yet (check the clocks); no "
                    "report was sent"
                )
            if "Hostname mismatch" in detail or "IP address mismatch" in detail:
                return (
                    "the server's TLS certificate is not for the host in [report] url "
                    f"({detail}); no report was sent (use a host name the certificate names)"
                )
            return (
                f"the server's TLS certificate did not verify ({detail or 'untrusted'}); no "
                "report was sent (set ca_bundle in [report] for a private CA)"
            )
        if isinstance(cause, ssl.SSLError):
            reason = getattr(cause, "reason", None) or type(cause).__name__
            hint = (
                ": does the server speak HTTPS on this port?"
                if reason
                in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG")
                else ""
            )
            return f"the TLS handshake failed ({reason}{hint}); no report was sent"
        nxt = cause.__cause__ or cause.__context__
        if nxt is None and cause.args and isinstance(cause.args[0], BaseException):
            nxt = cause.args[0]  # urllib3's MaxRetryError holds the reason as an argument
        cause = nxt if nxt is not None else getattr(cause, "reason", None)
    return (
        "the server's TLS certificate did not verify; no report was sent "
        "(set ca_bundle in [report] for a private CA)"
    )


def _timed_out(settings: ReportSettings) -> Outcome:
    return Outcome(
        False,
        None,
        "timeout",
        "",
        f"no answer within {settings.timeout:g} s (the whole exchange); the server is "
        "slow or unreachable",
    )


def post_report(
    settings: ReportSettings, body: bytes, session: requests.Session | None = None
) -> Outcome:
    """POST one report body within ``settings.timeout`` in all; never raises for network or
    server failures."""
    own = session is None
    sess = session or new_session()
    deadline = _Deadline(settings.timeout)
    done: list[Outcome | BaseException] = []

    def exchange() -> None:
        _current.deadline = deadline
        try:
            done.append(_exchange(settings, body, sess))
        except BaseException as exc:  # handed to the caller
            done.append(exc)
        finally:
            _current.deadline = None
            if deadline.finish():  # the deadline fired first: the outcome is a timeout
                done[:] = [_timed_out(settings)]
            if own:
                sess.close()

    worker = threading.Thread(target=exchange, name="trainrecord-report-exchange", daemon=True)
    try:
        deadline.start()
        worker.start()
    except RuntimeError:
        # the interpreter is shutting down (Python 3.12+ starts no thread then, in an atexit
        # flush too): the exchange runs in this thread, without the deadline's cut; the
        # wait at exit stays bounded by whoever waits for this thread (Sender.close)
        exchange()
    else:
        worker.join(settings.timeout + _CUT_GRACE_S)
    if worker.is_alive() or not done:  # still resolving the name: the deadline stays armed
        return _timed_out(settings)
    result = done[0]
    if isinstance(result, BaseException):
        raise result
    return result


def _exchange(settings: ReportSettings, body: bytes, sess: requests.Session) -> Outcome:
    try:
        prepared = sess.prepare_request(
            requests.Request("POST", settings.url, data=body, headers=headers(settings))
        )
        prepared._exact_target = request_target(settings.url)  # type: ignore[attr-defined]
        # The session's adapter sends it, not ``sess.send``: even with allow_redirects off,
        # ``Session.send`` looks up the redirect's next request and reads a 3xx answer's
        # whole body for it (megabytes, held in memory, and then no preview is left). So a
        # 3xx is answered like any other status: not followed, at most 4096 bytes read.
        resp = sess.get_adapter(prepared.url or settings.url).send(
            prepared,
            stream=True,
            timeout=settings.timeout,
            verify=settings.verify,
            cert=sess.cert,
            proxies=_proxies(settings.url),
        )
        try:
            return classify(resp.status_code, _preview(resp, settings.token), len(body))
        finally:
            resp.close()
    except requests.exceptions.SSLError as exc:
        return Outcome(False, None, "tls", "", _tls_problem(exc))
    except requests.exceptions.Timeout:
        return _timed_out(settings)
    except requests.exceptions.RequestException as exc:
        kind = type(exc).__name__
        malformed = _malformed(exc)
        return Outcome(
            False,
            None,
            "network",
            "",
            f"could not deliver the report ({kind}): "
            + (
                f"the server's answer was not valid HTTP ({malformed}); is [report] url a "
                "web server's?"
                if malformed
                else "the server is down, unreachable or closed the connection"
            ),
        )
    except OSError:  # requests: the CA bundle to verify with cannot be read
        return Outcome(
            False,
            None,
            "tls",
            "",
            "the CA certificates to verify the server with could not be read; no report "
            "was sent (check ca_bundle, REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE)",
        )
