"""Reporting API v2, the server side: status codes of §2 and the ordering of §4.

Against an ``http(s)://`` target, the receiver an exec harness starts with its ``serve``
operation, or (in-process) the reference receiver: valid, unauthorised, oversized, wrongly
typed, non-JSON and invalid reports, and sequences of reports for one run_id posted out of
order and duplicated. With a read URL (``--read-url``, or ``serve``'s ``read_url``; the
reference receiver's ``GET /api/runs/<run_id>``) the suite also checks that the stored
report is the one with the greatest seq. Where the seed allows two status codes (401 or
403, 400 or 422) the checks accept both.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import requests
from hypothesis import strategies as st

from trainrecord_conformance import strategies as S
from trainrecord_conformance.checks.base import Check, Context, Failed
from trainrecord_conformance.checks.reporting import (
    REPORT,
    broken_report_edges,
    broken_reports,
    edge_report,
    reports,
)
from trainrecord_conformance.targets import Target, TargetError

SERVE = frozenset({"serve"})
MAX_BODY = 256 * 1024


def post(
    ctx: Context, body: bytes, *, token: str | None = "", content_type: str = "application/json"
) -> requests.Response:
    """POST raw bytes to the server; ``token=""`` means the right token, None none."""
    url, right, ca_file, _ = ctx.target.server()
    headers = {"Content-Type": content_type, "User-Agent": "CORread-reporter/2"}
    tok = right if token == "" else token
    if tok is not None:
        headers["Authorization"] = f"Bearer {tok}"
    try:
        return requests.post(
            url,
            data=body,
            headers=headers,
            timeout=10,
            allow_redirects=False,
            verify=ca_file or True,
        )
    except requests.RequestException as exc:
        raise TargetError(f"the server did not answer: {exc}") from exc


def encode(report: Any) -> bytes:
    """A report as the client sends it."""
    return json.dumps(report, allow_nan=False).encode("utf-8")


def expect(resp: requests.Response, codes: set[int], what: str) -> None:
    """The answer's status is one of ``codes``."""
    if resp.status_code not in codes:
        raise Failed(
            f"{what}: answered {resp.status_code} ({resp.text[:200]!r}), expected {sorted(codes)}"
        )


AUTH_REFUSED = {401, 403}
"""§2: "401 / 403: bad or missing token". The reference receivers answer 401 to both (the
decision of spec/README.md, "Receiver"); the seed allows either, so the suite does too."""
INVALID_PAYLOAD = {400, 422}
"""§2: "400 / 422: invalid payload". The reference receivers answer 400 to a body that is not
strict JSON and 422 to a report the schema refuses; the seed allows either for both."""


def auth(ctx: Context, case: tuple[Any, str | None]) -> None:
    """A valid report is accepted with the token and refused with 401/403 without it."""
    report, wrong = case
    expect(
        post(ctx, encode(report), token=wrong),
        AUTH_REFUSED,
        "a report with a wrong token" if wrong else "a report without a token",
    )
    expect(post(ctx, encode(report)), {200, 201, 202, 204}, "a valid report with the token")


def raw_post(ctx: Context, head: list[str], body: bytes = b"") -> int:
    """POST with exactly these header lines (a Content-Length no HTTP library would send),
    over TLS for an https target; the status of the answer."""
    import socket
    import ssl
    from urllib.parse import urlsplit

    url, _, ca_file, _ = ctx.target.server()
    parts = urlsplit(url)
    host, port = (
        parts.hostname or "127.0.0.1",
        parts.port or (443 if parts.scheme == "https" else 80),
    )
    lines = [f"POST {parts.path or '/'} HTTP/1.1", f"Host: {parts.netloc}", *head]
    try:
        with socket.create_connection((host, port), timeout=10) as plain:
            sock: Any = plain
            if parts.scheme == "https":
                context = ssl.create_default_context(cafile=ca_file)
                sock = context.wrap_socket(plain, server_hostname=host)
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
            answer = b""
            while b"\r\n" not in answer:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                answer += chunk
    except OSError as exc:
        raise TargetError(f"the server did not answer: {exc}") from exc
    try:
        return int(answer.split(b" ", 2)[1])
    except (IndexError, ValueError):
        raise Failed(f"the answer is not HTTP: {answer[:80]!r}") from None


def auth_white_space(ctx: Context, case: tuple[Any, str]) -> None:
    """White space around the Authorization value is not part of it (RFC 9110 §5.5): the
    right token followed by a space or a tab is accepted."""
    report, space = case
    _, right, _, _ = ctx.target.server()
    body = encode({**report, "run_id": str(uuid.uuid4())})
    head = [
        "Content-Type: application/json",
        f"Authorization: Bearer {right}{space}",
        f"Content-Length: {len(body)}",
    ]
    status = raw_post(ctx, head, body)
    if status not in {200, 201, 202, 204}:
        raise Failed(f"the right token followed by {space!r} was answered {status}")


def huge_length(ctx: Context, length: str) -> None:
    """A Content-Length over 256 KB is 413 however large (judged before reading: nothing is
    sent), also past what a 64-bit parser holds."""
    _, right, _, _ = ctx.target.server()
    head = ["Content-Type: application/json", f"Authorization: Bearer {right}"]
    status = raw_post(ctx, [*head, f"Content-Length: {length}"])
    if status != 413:
        raise Failed(f"Content-Length {length} was answered {status}, expected 413")


HUGE_LENGTHS = [str(2**32), str(2**63), str(2**64), "99999999999999999999999"]
"""Lengths no receiver reads a body of (beyond any drain bound), past 32 and 64 bits."""


def too_large(ctx: Context, case: tuple[Any, int]) -> None:
    """A body over 256 KB is answered 413 (it is valid JSON, padded with spaces)."""
    report, extra = case
    body = encode(report)
    body = body[:-1] + b" " * (MAX_BODY + extra - len(body)) + b"}"
    expect(post(ctx, body), {413}, f"a {len(body)}-byte report")


def content_type(ctx: Context, case: tuple[Any, str]) -> None:
    """A body that is not declared application/json is answered 415."""
    report, kind = case
    expect(post(ctx, encode(report), content_type=kind), {415}, f"Content-Type {kind}")


def not_json(ctx: Context, body: bytes) -> None:
    """A body that is not strict JSON is answered 400 (or 422: §2 allows either)."""
    expect(post(ctx, body), INVALID_PAYLOAD, f"the body {body[:60]!r}")


def invalid(ctx: Context, broken: S.Broken) -> None:
    """A report the schema rejects is answered 422 (or 400: §2 allows either)."""
    expect(post(ctx, encode(broken.instance)), INVALID_PAYLOAD, f"a report breaking {broken.site}")


def newest_wins(ctx: Context, case: tuple[Any, list[int]]) -> None:
    """Every report of a run is answered 200, in any order; the greatest seq is stored.

    Each example reports a run_id of its own: the server keeps what earlier examples sent,
    and Hypothesis may draw a run_id again (it mutates earlier examples), so a drawn one
    could already hold a greater seq."""
    report, seqs = case
    report = {**report, "run_id": str(uuid.uuid4())}
    for seq in seqs:
        expect(
            post(ctx, encode({**report, "seq": seq})),
            {200},
            f"report seq {seq} (posted in the order {seqs})",
        )
    _, tok, ca_file, read_url = ctx.target.server()
    if read_url is None or "serve_read" not in ctx.target.operations:
        return
    resp = requests.get(
        f"{read_url.rstrip('/')}/{report['run_id']}",
        timeout=10,
        headers={"Authorization": f"Bearer {tok}"},
        verify=ca_file or True,
    )
    expect(resp, {200}, "reading the stored report back")
    stored = resp.json().get("seq")
    if stored != max(seqs):
        raise Failed(f"after seqs {seqs} the server stores seq {stored}, not {max(seqs)}")


def checks() -> list[Check]:
    """Every server check."""
    with_ = lambda s: lambda t: st.tuples(reports(t), s)  # noqa: E731

    junk_bodies = [b"{not json", b"NaN", b'{"seq": NaN}', b"\xff\xfe{}", b"[1,", b'{"a": Infinity}']
    junk = st.sampled_from(junk_bodies)
    tokens: list[str | None] = [None, "wrong", "Bearer"]
    types = ["text/plain", "application/x-www-form-urlencoded"]
    seqs = st.lists(st.integers(0, 2**40), min_size=1, max_size=6).flatmap(
        lambda xs: st.permutations(xs + xs[: len(xs) // 2])
    )
    return [
        Check(
            "report.server.auth",
            "401/403 without or with a wrong token",
            SERVE,
            with_(st.sampled_from(tokens)),
            auth,
            scale="io",
            edges=lambda t: [(edge_report(t), w) for w in tokens],
        ),
        Check(
            "report.server.too_large",
            "413 over 256 KB",
            SERVE,
            with_(st.integers(1, 4096)),
            too_large,
            scale="io",
            edges=lambda t: [(edge_report(t), 1)],  # one byte over the bound
        ),
        Check(
            "report.server.auth",
            "the token followed by white space is the token",
            SERVE,
            with_(st.sampled_from([" ", "\t", "  "])),
            auth_white_space,
            scale="io",
            edges=lambda t: [(edge_report(t), w) for w in (" ", "\t")],
        ),
        Check(
            "report.server.too_large",
            "413 for a Content-Length over 256 KB, however large",
            SERVE,
            lambda t: st.sampled_from(HUGE_LENGTHS),
            huge_length,
            scale="io",
            edges=lambda t: HUGE_LENGTHS,
        ),
        Check(
            "report.server.content_type",
            "415 for another Content-Type",
            SERVE,
            with_(st.sampled_from(types)),
            content_type,
            scale="io",
            edges=lambda t: [(edge_report(t), k) for k in types],
        ),
        Check(
            "report.server.not_json",
            "400/422 for a body that is not strict JSON",
            SERVE,
            lambda t: junk,
            not_json,
            scale="io",
            edges=lambda t: junk_bodies,
        ),
        Check(
            "report.server.invalid",
            "400/422 for a report the schema rejects",
            SERVE,
            broken_reports,
            invalid,
            scale="io",
            edges=broken_report_edges,
        ),
        Check(
            "report.server.newest_wins",
            "200 in any order; the greatest seq is stored",
            SERVE,
            with_(seqs),
            newest_wins,
            scale="io",
        ),
    ]


__all__ = ["REPORT", "Target", "checks"]
