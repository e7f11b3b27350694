"""Transport (§2 of the seed): one POST of one report, and what its answer means.

Public API:

* :func:`post_report` ``(settings, body, session=None) -> Outcome``: POST ``body`` to
  ``settings.url`` exactly as configured, with exactly the headers Content-Type:
  application/json, Authorization: Bearer <token> and User-Agent: CORread-reporter/2; TLS
  verified; redirects never followed (a 3xx is a failure, so the token never reaches
  another address); ``settings.timeout`` (10 s) per wait; no retry. Never raises for a
  network or server failure: the :class:`Outcome` says what happened.
* :class:`Outcome`: ``ok``, ``status`` (HTTP status or None), ``category`` (accepted,
  unauthorized, invalid, redirect, failed, timeout, tls, network), ``body`` (first 300
  characters of the answer) and ``message`` (a warning a person can act on; never the
  token).
* :class:`ReportNotDelivered`: raised by synchronous sends (``report_status()``) with the
  status code and the first 300 characters of the body.
* :func:`new_session`: a ``requests.Session`` with ``trust_env`` off (no .netrc auth can
  replace the token, no proxy from the environment for loopback) and no default headers.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

import requests
from urllib3.util import SKIP_HEADER

from trainrecord.report.settings import ReportSettings, is_loopback_host

USER_AGENT = "CORread-reporter/2"
BODY_PREVIEW = 300
_READ_LIMIT = 4096


@dataclass(frozen=True)
class Outcome:
    """What became of one report."""

    ok: bool
    status: int | None
    category: str
    body: str
    message: str


class ReportNotDelivered(RuntimeError):
    """A report that was meant to get through did not (``report_status()``)."""

    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.status = outcome.status
        self.body = outcome.body
        code = f"HTTP {outcome.status}" if outcome.status is not None else outcome.category
        super().__init__(
            f"report not delivered ({code}): {outcome.message}"
            + (f"; server said: {outcome.body}" if outcome.body else "")
        )


def new_session() -> requests.Session:
    """A session that sends only our headers and never reads credentials from the environment."""
    session = requests.Session()
    session.trust_env = False
    session.headers.clear()
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


def _preview(resp: requests.Response) -> str:
    try:
        raw = resp.raw.read(_READ_LIMIT, decode_content=True) or b""
    except Exception:  # a server that breaks off mid-body: the status still counts
        raw = b""
    return raw.decode("utf-8", errors="replace")[:BODY_PREVIEW]


def classify(status: int, body: str) -> Outcome:
    """The meaning of an HTTP status to the client (§2)."""
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
    return Outcome(False, status, "failed", body, f"the server failed (HTTP {status})")


def post_report(
    settings: ReportSettings, body: bytes, session: requests.Session | None = None
) -> Outcome:
    """POST one report body; never raises for network or server failures."""
    own = session is None
    sess = session or new_session()
    try:
        resp = sess.post(
            settings.url,
            data=body,
            headers=headers(settings),
            timeout=settings.timeout,
            allow_redirects=False,
            verify=settings.verify,
            proxies=_proxies(settings.url),
            stream=True,
        )
        try:
            return classify(resp.status_code, _preview(resp))
        finally:
            resp.close()
    except requests.exceptions.SSLError:
        return Outcome(
            False,
            None,
            "tls",
            "",
            "the server's TLS certificate did not verify; no report was sent "
            "(set ca_bundle in [report] for a private CA)",
        )
    except requests.exceptions.Timeout:
        return Outcome(False, None, "timeout", "", f"no answer within {settings.timeout:g} s")
    except requests.exceptions.RequestException as exc:
        kind = type(exc).__name__
        return Outcome(
            False,
            None,
            "network",
            "",
            f"could not deliver the report ({kind}): the server is down, "
            "unreachable or closed the connection",
        )
    finally:
        if own:
            sess.close()
