"""Reporting API v2, the client side: what ``send_report`` puts on the wire.

The suite runs a loopback receiver (:mod:`.receiver`) and inspects what arrives: method
and URL exactly as configured, the three headers, a body that is the report itself and
valid; redirects never followed (the redirect target receives nothing); every status
handled as §2 says, with no retry; TLS verified; unsafe settings and invalid reports
refused before anything is sent.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any

from hypothesis import strategies as st

from trainrecord.canonical import loads_strict
from trainrecord_conformance import strategies as S
from trainrecord_conformance.checks.base import Check, Context, Failed
from trainrecord_conformance.checks.foundry import _same
from trainrecord_conformance.checks.receiver import Receiver, TlsPair
from trainrecord_conformance.targets import Target

REPORT = "https://trainrecord.dev/schemas/reporting/reporting.schema.json"
SEND = frozenset({"send_report"})


@cache
def valid_report_vectors() -> tuple[Any, ...]:
    """Every valid report of the spec's vectors (the seed's examples and more), in file order."""
    folder = resources.files("trainrecord_spec").joinpath("vectors", "reporting")
    out = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".json"):
            continue
        for group in json.loads(entry.read_text(encoding="utf-8")):
            if group["schema"] == REPORT:
                out += [case["data"] for case in group["tests"] if case["valid"]]
    return tuple(out)


@cache
def _vector_reports() -> tuple[Any, ...]:
    """Valid, self-consistent reports from the spec's vectors (the seed's examples and more)."""
    from trainrecord.report import consistency_problems, privacy_problems

    return tuple(
        data
        for data in valid_report_vectors()
        if not consistency_problems(data) and not privacy_problems(data)
    )


def reports(target: Target | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """Reports a client may send: the vectors' consistent reports with a fresh seq and run_id."""
    return st.tuples(st.sampled_from(_vector_reports()), st.integers(0, 2**53 - 1), st.uuids()).map(
        lambda t: {**t[0], "seq": t[1], "run_id": str(t[2])}
    )


def receiver(ctx: Context) -> Receiver:
    """The run's recording receiver."""
    return ctx.service("report-receiver", Receiver)


def token() -> str:
    """A token for one exchange."""
    return "tok-" + secrets.token_hex(8)


def send(ctx: Context, url: str, tok: str, report: Any, ca_file: str | None = None) -> Any:
    """Run send_report."""
    return ctx.run("send_report", {"url": url, "token": tok, "report": report, "ca_file": ca_file})


def _one_arrival(ctx: Context, path: str, report: Any, tok: str, tail: str = "") -> Any:
    """The one request a report sent to ``path + tail`` (``path`` fresh) led to."""
    rec = receiver(ctx)
    result = send(ctx, rec.base + path + tail, tok, report)
    if result.outcome != "ok" or not result.output["delivered"]:
        raise Failed(f"a valid report to a 200 receiver gave {result.describe()}")
    got = rec.arrived(path)
    if len(got) != 1:
        raise Failed(f"{len(got)} requests arrived for one report")
    return got[0]


URL_TAILS = ["", "/./a/../b", "?", "?x=%7E&y=", "//twice/", "/%2E%2E/runs?a=1&b", "/x#part"]
"""What follows the fresh path of a post_url case: dot segments, an empty query's ``?``, an
escape of an unreserved character, an empty segment, a fragment. §2 sends the URL "exactly
as configured": none of them is normalised away (a WHATWG URL parser removes dot segments
and drops the ``?``; ``requests`` also decodes ``%7E``). Only the fragment is never sent."""


def post_url(ctx: Context, case: tuple[Any, str]) -> None:
    """POST to the URL exactly as configured: the request target is the path and query as
    written (the fragment is not sent in HTTP)."""
    report, tail = case
    path = receiver(ctx).fresh()
    wanted = (path + tail).split("#", 1)[0]
    got = _one_arrival(ctx, path, report, token(), tail)
    if got.method != "POST" or got.path != wanted:
        raise Failed(
            f"the report arrived as {got.method} {got.path}, configured POST {path + tail} "
            f"(the target {wanted})"
        )


HTTP_NEEDS = ("host", "content-length")
"""The headers HTTP itself needs besides §2's three (spec/README: "exactly the three
headers, plus Host and Content-Length")."""


def headers(ctx: Context, report: Any) -> None:
    """Content-Type, Authorization and User-Agent as §2 says, and no other header than
    Host and Content-Length, each once: no Accept-Encoding, Accept or Connection (a
    ``requests`` session adds all three, node:http adds ``Connection``)."""
    tok = token()
    got = _one_arrival(ctx, receiver(ctx).fresh(), report, tok)
    wanted = {
        "content-type": "application/json",
        "authorization": f"Bearer {tok}",
        "user-agent": "CORread-reporter/2",
    }
    for name, value in wanted.items():
        have = got.headers.get(name, "")
        if (have.split(";")[0].strip() if name == "content-type" else have) != value:
            raise Failed(f"header {name} is {have!r}, expected {value!r}")
    allowed = {*wanted, *HTTP_NEEDS}
    extra = [n for n in got.names if n not in allowed]
    twice = sorted({n for n in got.names if got.names.count(n) > 1})
    missing = [n for n in HTTP_NEEDS if n not in got.names]
    if extra or twice or missing:
        raise Failed(
            f"the request's headers are {list(got.names)}: exactly Content-Type, "
            "Authorization and User-Agent, plus Host and Content-Length, each once"
            + (f"; not {extra}" if extra else "")
            + (f"; {twice} more than once" if twice else "")
            + (f"; {missing} missing" if missing else "")
        )


def body(ctx: Context, report: Any) -> None:
    """The body is the report, strict JSON in UTF-8, valid."""
    got = _one_arrival(ctx, receiver(ctx).fresh(), report, token())
    try:
        data = loads_strict(got.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise Failed(f"the body is not strict JSON in UTF-8: {exc}") from exc
    if not _same(data, report):
        raise Failed("the body differs from the report sent")
    if S.oracle_rules(data, REPORT):
        raise Failed(f"the body breaks {sorted(S.oracle_rules(data, REPORT))}")


def invalid_refused(ctx: Context, broken: S.Broken) -> None:
    """A report the schema rejects is refused naming the rule, and never sent."""
    rec = receiver(ctx)
    path = rec.fresh()
    rule = broken.site.split(" ")[0]
    result = send(ctx, rec.base + path, token(), broken.instance)
    if result.outcome != "refused":
        raise Failed(f"an invalid report ({broken.site}) gave {result.describe()}")
    if rec.arrived(path):
        raise Failed(f"an invalid report ({broken.site}) reached the server")
    del rule


def no_redirect(ctx: Context, case: tuple[Any, int]) -> None:
    """A 3xx is a failure; the redirect target receives nothing."""
    report, _ = case
    rec = receiver(ctx)
    path = rec.fresh("/redirect")
    result = send(ctx, rec.base + path, token(), report)
    landing = path.replace("/redirect", "/landing", 1)
    if rec.arrived(landing):
        raise Failed("the client followed the redirect: the token reached the redirect target")
    if result.outcome == "ok" and result.output["delivered"]:
        raise Failed("a 302 answer counted as delivered")


def statuses(ctx: Context, case: tuple[Any, int]) -> None:
    """2xx is delivered, anything else is not; the status is reported; no retry."""
    report, code = case
    rec = receiver(ctx)
    path = rec.fresh(f"/status/{code}")
    result = send(ctx, rec.base + path, token(), report)
    if result.outcome != "ok":
        raise Failed(f"a {code} answer gave {result.describe()} (a failure is an outcome)")
    if result.output["delivered"] != (200 <= code < 300) or result.output["status"] != code:
        raise Failed(f"a {code} answer gave {result.output}")


def no_retry(ctx: Context, case: tuple[Any, int]) -> None:
    """A failed report is sent once."""
    report, code = case
    rec = receiver(ctx)
    path = rec.fresh(f"/status/{code}")
    send(ctx, rec.base + path, token(), report)
    if len(rec.arrived(path)) != 1:
        raise Failed(f"a {code} answer led to {len(rec.arrived(path))} requests")


def tls_verify(ctx: Context, report: Any) -> None:
    """An untrusted certificate gets nothing; a trusted one gets the report."""
    pair = ctx.service("report-tls", lambda: TlsPair(str(ctx.folder(create=True))))
    path = pair.receiver.fresh()
    result = send(ctx, pair.receiver.base + path, token(), report)
    if pair.receiver.arrived(path) or (result.outcome == "ok" and result.output["delivered"]):
        raise Failed("the report went to a server whose certificate does not verify")
    path = pair.receiver.fresh()
    result = send(ctx, pair.receiver.base + path, token(), report, ca_file=pair.ca_file)
    if result.outcome != "ok" or not result.output["delivered"]:
        raise Failed(f"with the server's CA trusted the report gave {result.describe()}")


def setting_refused(
    rule: str, url: Callable[[Receiver, str], str], tok: Callable[[], str] = token
) -> Callable[[Context, Any], None]:
    """An unsafe setting is refused naming ``rule``; nothing is sent."""

    def check(ctx: Context, case: tuple[Any, str]) -> None:
        report, variant = case
        rec = receiver(ctx)
        path = rec.fresh()
        ctx.refused(
            "send_report",
            {"url": url(rec, path + variant), "token": tok(), "report": report, "ca_file": None},
            rule,
        )
        if rec.arrived(path):
            raise Failed("a refused setting still sent the report")

    return check


def _port(rec: Receiver) -> str:
    return rec.base.rsplit(":", 1)[1]


CODES = [200, 201, 202, 204, 299, 400, 401, 403, 404, 413, 422, 500, 503]
FAILS = [400, 401, 403, 404, 422, 500, 502, 503]


def edge_report(target: Target | None = None) -> dict[str, Any]:
    """One fixed report a client may send (the fixed cases' report)."""
    return {**_vector_reports()[0], "seq": 0, "run_id": "00000000-0000-4000-8000-000000000000"}


MAX_SEQ = 2**53 - 1
"""The greatest seq (the schema's bound: every JSON implementation reads it exactly)."""
EDGE_TEXT = 'naïve ✓ 😀 \u2028 "q" \x7f'
"""A display name outside ASCII (Latin-1, the BMP, an astral character, U+2028) and with
characters JSON escapes or may (a quote, DEL)."""


def edge_reports(target: Target | None = None) -> list[dict[str, Any]]:
    """Valid reports at the body's boundaries: the first report of each kind, seq 0 and the
    greatest seq, a name outside ASCII (and a host with a backslash), the longest name in
    astral characters (255 code points, 510 UTF-16 units)."""
    base = edge_report(target)
    kinds = {r["kind"]: r for r in reversed(_vector_reports())}
    return [
        *({**r, "seq": 0, "run_id": base["run_id"]} for r in kinds.values()),
        {**base, "seq": MAX_SEQ},
        {**base, "name": EDGE_TEXT, "host": 'lab\\gpu "01"'},
        {**base, "name": "😀" * 255},
    ]


def report_rules() -> list[str]:
    """The rules of reporting.schema.json."""
    return sorted(r for r in S.schema_rules() if r.startswith("report."))


def broken_reports(target: Target | None = None) -> st.SearchStrategy[S.Broken]:
    """Reports that break exactly one rule of reporting.schema.json (strict JSON)."""
    return st.sampled_from(report_rules()).flatmap(
        lambda r: S.breaking_instances(r, schema_id=REPORT)
    )


def broken_report_edges(target: Target | None = None) -> list[S.Broken]:
    """The cases that define each rule of reporting.schema.json (the schema checks' edge
    cases, :func:`~trainrecord_conformance.strategies.edge_cases`: true, false and 3.0 for
    an integer, the exact bound and one past it, near misses of an enum member, each
    missing field ...), strict JSON: the reports a client must refuse and a receiver must
    answer 400 or 422."""
    return [
        broken
        for rule in report_rules()
        for _, broken in S.edge_cases(rule, nonfinite=False)
        if broken.schema_id == REPORT
    ]


def checks() -> list[Check]:
    """Every client check."""
    codes = st.sampled_from(CODES)
    fails = st.sampled_from(FAILS)
    with_code = lambda c: lambda t: st.tuples(reports(t), c)  # noqa: E731
    variant = lambda t: st.tuples(reports(t), st.sampled_from(["", "?x=1", "#f"]))  # noqa: E731

    return [
        Check(
            "report.transport.post_url",
            "POST to the URL as configured (dot segments, an empty ?, escapes kept)",
            SEND,
            lambda t: st.tuples(reports(t), st.sampled_from(URL_TAILS)),
            post_url,
            scale="io",
            edges=lambda t: [(edge_report(t), tail) for tail in URL_TAILS],
        ),
        Check(
            "report.transport.headers",
            "the three headers of §2, and only Host and Content-Length besides",
            SEND,
            reports,
            headers,
            scale="io",
        ),
        Check(
            "report.transport.body",
            "the body is the report, valid strict JSON",
            SEND,
            reports,
            body,
            scale="io",
            edges=edge_reports,
        ),
        Check(
            "report.transport.body",
            "an invalid report is refused and never sent",
            SEND,
            broken_reports,
            invalid_refused,
            scale="io",
            edges=broken_report_edges,
        ),
        Check(
            "report.transport.no_redirect",
            "a 302 is a failure, never followed",
            SEND,
            with_code(st.just(302)),
            no_redirect,
            scale="io",
        ),
        Check(
            "report.transport.status",
            "2xx delivered, anything else not",
            SEND,
            with_code(codes),
            statuses,
            scale="io",
            edges=lambda t: [(edge_report(t), c) for c in CODES],
        ),
        Check(
            "report.transport.no_retry",
            "a failed report is sent once",
            SEND,
            with_code(fails),
            no_retry,
            scale="io",
            edges=lambda t: [(edge_report(t), c) for c in FAILS],
        ),
        Check(
            "report.transport.tls_verify",
            "certificates are verified",
            SEND,
            reports,
            tls_verify,
            scale="io",
        ),
        Check(
            "report.settings.url_scheme",
            "plain http only to loopback",
            SEND,
            variant,
            setting_refused(
                "report.settings.url_scheme", lambda r, p: f"http://example.org:{_port(r)}{p}"
            ),
            scale="io",
        ),
        Check(
            "report.settings.url_credentials",
            "no credentials in the URL",
            SEND,
            variant,
            setting_refused(
                "report.settings.url_credentials",
                lambda r, p: f"http://user:secret@127.0.0.1:{_port(r)}{p}",
            ),
            scale="io",
        ),
        Check(
            "report.settings.token",
            "a token is required",
            SEND,
            variant,
            setting_refused("report.settings.token", lambda r, p: r.base + p, lambda: ""),
            scale="io",
        ),
    ]
