"""The Node implementation's diary verifier and report client, through the harness.

Diaries are built here with the Python runtime's canonical line hash, then broken one rule
at a time (the chain is rebuilt after each change so that only that rule breaks); the Node
verifier must name exactly that rule. Reports go to real loopback servers (plain HTTP and
TLS with a trustme CA) that record what arrives.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from tests.conftest import SPEC
from tests.typescript.node_harness import Harness
from trainrecord import schemas
from trainrecord.canonical import GENESIS, line_hash
from trainrecord.diary import generate_keypair, write_seal
from trainrecord.diary import verify as python_verify

pytestmark = pytest.mark.xdist_group("node")

REPORT_SCHEMA = "https://trainrecord.dev/schemas/reporting/reporting.schema.json"


def _valid_events() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for group in json.loads((SPEC / "vectors" / "diary" / "events.json").read_text("utf-8")):
        for test in group["tests"]:
            data = test["data"]
            if test["valid"] and isinstance(data, dict) and isinstance(data.get("event"), str):
                found.setdefault(data["event"], data)
    return found


EVENTS = _valid_events()
METRICS = b'{"step":0,"loss":2.305945873260498,"grad":{"fc":0.5},"stuck":{"fc":[0,0,0,0]}}\n'


def bodies() -> list[dict[str, Any]]:
    """run_start, alarm, run_end bodies (no prev/hash), seq set, run_end hashing METRICS."""
    out = []
    for i, event in enumerate(["run_start", "alarm", "run_end"]):
        body = {k: v for k, v in EVENTS[event].items() if k not in ("prev", "hash")}
        body["seq"] = i
        out.append(body)
    out[0]["time"] = 1764456439.0  # an integral float: hashed as 1764456439.0, not 1764456439
    out[0]["config"] = {"big": 2**70, "lr": 1e-07, "name": "café 🔥"}
    out[2]["metrics_sha256"] = hashlib.sha256(METRICS).hexdigest()
    out[2]["checks"] = 1  # METRICS is one row: one per check (diary.metrics.rows)
    return out


def write_diary(
    folder: Path,
    items: list[dict[str, Any]],
    prevs: dict[int, str] | None = None,
    metrics: bytes | None = METRICS,
) -> Path:
    """Chain the bodies (prev of line i overridable) and write diary.jsonl + metrics.jsonl."""
    folder.mkdir(parents=True, exist_ok=True)
    lines, prev = [], GENESIS
    for i, body in enumerate(items):
        prev = (prevs or {}).get(i, prev)
        digest = line_hash(prev, body)
        lines.append(json.dumps({**body, "prev": prev, "hash": digest}))
        prev = digest
    (folder / "diary.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if metrics is not None:
        (folder / "metrics.jsonl").write_bytes(metrics)
    return folder


def verify(harness: Harness, folder: Path, key: Path | None = None) -> set[str]:
    """The Node verdict's rule (empty when none), checked against the Python verifier's."""
    result = harness.run("verify_diary", dir=str(folder), key=str(key) if key else None)
    expected = python_verify(folder, workers=1, public_key=key)
    assert result["ok"] == expected.ok
    assert result["status"] == expected.status  # a torn tail is not a failure
    failure = expected.failure
    if failure is None and expected.status == "torn":  # the protocol's torn verdict
        assert (result["rules"], result["line"]) == (["diary.file.torn"], expected.lines)
        return set(result["rules"])
    assert result["rules"] == ([failure.rule] if failure else [])
    line = failure.line - 1 if failure and failure.file == "diary.jsonl" and failure.line else None
    assert result["line"] == line
    return set(result["rules"])


def test_valid_diary_verifies(harness: Harness, tmp_path: Path) -> None:
    assert verify(harness, write_diary(tmp_path, bodies())) == set()


def _seq_gap(b: list[dict[str, Any]]) -> None:
    b[1]["seq"] = 5


def _start_first(b: list[dict[str, Any]]) -> None:
    b[0], b[1] = b[1], b[0]
    b[0]["seq"], b[1]["seq"] = 0, 1


def _end_not_last(b: list[dict[str, Any]]) -> None:
    b[1], b[2] = b[2], b[1]
    b[1]["seq"], b[2]["seq"] = 1, 2
    b[1]["metrics_sha256"] = hashlib.sha256(b"").hexdigest()


def _resumed(b: list[dict[str, Any]]) -> None:
    """run_start after run_end (a resumed run) is allowed."""
    b.append({**b[0], "seq": 3})
    b.append({**b[2], "seq": 4, "checks": 0})  # no row in the second session


def _alarm_missing_field(b: list[dict[str, Any]]) -> None:
    del b[1]["grad_norm"]


def _vanishing_without_baseline(b: list[dict[str, Any]]) -> None:
    b[1].update(diagnosis="vanishing", baseline=None)


def _exploding_without_grad_norm(b: list[dict[str, Any]]) -> None:
    b[1].update(diagnosis="exploding", grad_norm=None, baseline=0.5)


def _time_int(b: list[dict[str, Any]]) -> None:
    b[1]["time"] = 1764456440


def _time_micro(b: list[dict[str, Any]]) -> None:
    b[1]["time"] = 1764456440.123456


BODY_BREAKS: dict[str, tuple[Callable[[list[dict[str, Any]]], None], str]] = {
    "seq gap": (_seq_gap, "diary.chain.seq"),
    "time as an integer token": (_time_int, "diary.time.precision"),
    "time with six decimals": (_time_micro, "diary.time.precision"),
    "vanishing alarm with a null baseline": (
        _vanishing_without_baseline,
        "diary.alarm.baseline.null",
    ),
    "exploding alarm with a null grad_norm": (
        _exploding_without_grad_norm,
        "diary.alarm.grad_norm.null",
    ),
    "alarm before run_start": (_start_first, "diary.order.run_start"),
    "run_end not last": (_end_not_last, "diary.order.run_end"),
    "alarm without grad_norm": (_alarm_missing_field, "diary.alarm.fields.missing"),
}


def test_a_no_gradient_alarm_with_a_null_grad_norm_verifies(
    harness: Harness, tmp_path: Path
) -> None:
    """diary.alarm.grad_norm.null: a layer that got no gradient at all has no norm."""
    items = bodies()
    items[1].update(diagnosis="no_gradient", grad_norm=None, sigma=None)
    assert verify(harness, write_diary(tmp_path, items)) == set()


def test_resumed_run_verifies(harness: Harness, tmp_path: Path) -> None:
    items = bodies()
    _resumed(items)
    assert verify(harness, write_diary(tmp_path, items)) == set()


@pytest.mark.parametrize("name", sorted(BODY_BREAKS))
def test_each_broken_rule_is_named(harness: Harness, tmp_path: Path, name: str) -> None:
    change, rule = BODY_BREAKS[name]
    items = bodies()
    change(items)
    assert verify(harness, write_diary(tmp_path, items)) == {rule}


def test_wrong_prev(harness: Harness, tmp_path: Path) -> None:
    folder = write_diary(tmp_path, bodies(), prevs={2: "a" * 64})
    assert verify(harness, folder) == {"diary.chain.prev"}


def test_tampered_value_breaks_the_hash(harness: Harness, tmp_path: Path) -> None:
    folder = write_diary(tmp_path, bodies())
    text = (folder / "diary.jsonl").read_text("utf-8")
    (folder / "diary.jsonl").write_text(text.replace("1764456439.0", "1764456439.5"), "utf-8")
    assert verify(harness, folder) == {"diary.chain.hash"}


def test_integral_float_written_as_int_breaks_the_hash(harness: Harness, tmp_path: Path) -> None:
    """2.0 and 2 hash differently: the verifier keeps the distinction. For time, an integer
    token is refused before the hash is checked (diary.time.precision)."""
    items = bodies()
    items[0]["config"]["whole"] = 2.0
    folder = write_diary(tmp_path, items)
    text = (folder / "diary.jsonl").read_text("utf-8")
    (folder / "diary.jsonl").write_text(text.replace('"whole": 2.0', '"whole": 2'), "utf-8")
    assert verify(harness, folder) == {"diary.chain.hash"}
    folder = write_diary(tmp_path / "time", items)
    text = (folder / "diary.jsonl").read_text("utf-8")
    (folder / "diary.jsonl").write_text(text.replace("1764456439.0", "1764456439"), "utf-8")
    assert verify(harness, folder) == {"diary.time.precision"}


def test_torn_tail_is_not_tampering(harness: Harness, tmp_path: Path) -> None:
    folder = write_diary(tmp_path, bodies()[:2], metrics=None)
    with (folder / "diary.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"seq": 2, "time": 1.5, "ev')
    assert verify(harness, folder) == {"diary.file.torn"}  # the lines before it verify
    only_torn = tmp_path / "only"
    only_torn.mkdir()
    (only_torn / "diary.jsonl").write_text('{"seq": 0', "utf-8")
    assert verify(harness, only_torn) == {"diary.file.torn"}


def test_line_that_is_not_json(harness: Harness, tmp_path: Path) -> None:
    folder = write_diary(tmp_path, bodies())
    lines = (folder / "diary.jsonl").read_text("utf-8").splitlines()
    lines[1] = lines[1].replace('"seq": 1', '"seq": NaN')
    (folder / "diary.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    assert "diary.file.json" in verify(harness, folder)


def test_metrics_hash_and_rows(harness: Harness, tmp_path: Path) -> None:
    folder = write_diary(tmp_path / "a", bodies(), metrics=METRICS + METRICS)
    assert verify(harness, folder) == {"diary.metrics.sha256"}
    bad = b'{"step":-1,"loss":1.0,"grad":{},"stuck":{}}\n'
    items = bodies()
    items[2]["metrics_sha256"] = hashlib.sha256(bad).hexdigest()
    assert verify(harness, write_diary(tmp_path / "b", items, metrics=bad)) == {
        "diary_metrics.step.negative"
    }
    nan = b'{"step":1,"loss":NaN,"grad":{},"stuck":{}}\n'
    items[2]["metrics_sha256"] = hashlib.sha256(nan).hexdigest()
    assert verify(harness, write_diary(tmp_path / "c", items, metrics=nan)) == {
        "diary.metrics.json"
    }


def test_empty_or_missing_diary(harness: Harness, tmp_path: Path) -> None:
    assert verify(harness, tmp_path) == {"diary.file.empty"}
    (tmp_path / "diary.jsonl").write_bytes(b"")
    assert verify(harness, tmp_path) == {"diary.file.empty"}


def test_seal_and_signature(harness: Harness, tmp_path: Path) -> None:
    folder = write_diary(tmp_path / "run", bodies())
    _, pub, _ = generate_keypair(tmp_path / "k" / "signer")
    _, other, _ = generate_keypair(tmp_path / "k" / "other")
    write_seal(folder, signing_key=tmp_path / "k" / "signer")
    assert verify(harness, folder, key=pub) == set()
    assert verify(harness, folder) == set()  # signature format checked, not the key
    assert verify(harness, folder, key=other) == {"seal.signature.key"}
    seal = (folder / "record.json").read_bytes()
    (folder / "record.json").write_bytes(seal.replace(b'"sealed_at": ', b'"sealed_at": 1'))
    assert verify(harness, folder, key=pub) == {"seal.signature.invalid"}
    (folder / "record.json").write_bytes(seal)
    (folder / "record.sig").write_bytes(b"not base64!\n")
    assert verify(harness, folder, key=pub) == {"seal.signature.format"}


@pytest.mark.parametrize(
    "spoil",
    [
        lambda b: b[:-1] + b"\r\n",  # CRLF
        lambda b: b" " + b,  # a leading space
        lambda b: b"\t" + b,  # a leading tab
        lambda b: b[:-1] + b" \n",  # a space before the newline
        lambda b: b[:-1] + b"\t\n",  # a tab before the newline
    ],
    ids=["crlf", "leading-space", "leading-tab", "trailing-space", "trailing-tab"],
)
def test_signature_with_white_space_around_it_is_refused(
    harness: Harness, tmp_path: Path, spoil: Callable[[bytes], bytes]
) -> None:
    """record.sig is exactly the base64 and one newline (seal.signature.format): Node, like
    Python, refuses it with a CR, a space or a tab around the base64."""
    folder = write_diary(tmp_path / "run", bodies())
    _, pub, _ = generate_keypair(tmp_path / "k" / "signer")
    write_seal(folder, signing_key=tmp_path / "k" / "signer")
    sig = folder / "record.sig"
    sig.write_bytes(spoil(sig.read_bytes()))
    assert verify(harness, folder, key=pub) == {"seal.signature.format"}
    assert verify(harness, folder) == {"seal.signature.format"}  # without the key too


def test_seal_pins_the_tail(harness: Harness, tmp_path: Path) -> None:
    items = bodies()
    folder = write_diary(tmp_path / "cut", items[:2])
    write_seal(folder)
    assert verify(harness, folder) == set()
    write_diary(folder, items)  # the same first lines, one more appended
    assert verify(harness, folder) == {"seal.diary.lines"}
    (folder / "record.sig").write_bytes(b"")
    write_diary(folder, items[:2])
    assert verify(harness, folder) == {"seal.signature.unexpected"}
    (folder / "record.sig").unlink()
    later = METRICS.replace(b'"step":0', b'"step":1')  # a row of the session appended
    (folder / "metrics.jsonl").write_bytes(METRICS + later)
    assert verify(harness, folder) == {"seal.metrics.sha256"}


# --- reports ------------------------------------------------------------------------------


def _valid_report() -> dict[str, Any]:
    """The first example report a client may send: schema-valid and consistent (§5), as
    send_report checks both before anything goes on the wire."""
    from trainrecord.report import consistency_problems

    for group in json.loads((SPEC / "vectors" / "reporting" / "examples.json").read_text("utf-8")):
        for test in group["tests"]:
            if test["valid"] and not consistency_problems(test["data"]):
                return test["data"]
    raise AssertionError("no valid, consistent report vector")


class Recorder(http.server.BaseHTTPRequestHandler):
    """Records every request; answers with the server's configured status."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        self.server.seen.append((self.command, self.path, dict(self.headers), body))  # type: ignore[attr-defined]
        status = self.server.status  # type: ignore[attr-defined]
        self.send_response(status)
        if 300 <= status < 400:
            self.send_header("Location", self.server.location)  # type: ignore[attr-defined]
        payload = b'{"ok": true}' if status < 300 else b"no: " + b"x" * 400
        if status == 204:  # No Content: no body
            payload = b""
        else:
            self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Callable[..., Any]]:
    started: list[http.server.HTTPServer] = []

    def start(status: int = 200, location: str = "", tls: trustme.CA | None = None) -> Any:
        srv = http.server.HTTPServer(("127.0.0.1", 0), Recorder)
        srv.seen, srv.status, srv.location = [], status, location  # type: ignore[attr-defined]
        if tls is not None:
            import ssl

            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            tls.issue_cert("127.0.0.1").configure_cert(ctx)
            srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.shutdown()
        srv.server_close()


TOKEN = "tok-0123456789"
"""A token in no URL of these tests (a short one like "t" is in "http": refused)."""


def _url(srv: Any, scheme: str = "http", tail: str = "/api/runs?x=1") -> str:
    return f"{scheme}://127.0.0.1:{srv.server_address[1]}{tail}"


def test_report_arrives_with_headers_and_valid_body(harness: Harness, server: Any) -> None:
    srv = server()
    report = _valid_report()
    got = harness.run("send_report", url=_url(srv), token="s3cret", report=report)
    assert got == {"delivered": True, "status": 200}
    [(method, path, headers, body)] = srv.seen
    assert (method, path) == ("POST", "/api/runs?x=1")
    assert headers["Content-Type"] == "application/json"
    assert headers["Authorization"] == "Bearer s3cret"
    assert headers["User-Agent"] == "CORread-reporter/2"
    # exactly the three headers, plus the two HTTP needs (node:http's Connection removed)
    names = {k.lower() for k in headers}
    assert names == {"content-type", "authorization", "user-agent", "host", "content-length"}
    sent = json.loads(body.decode("utf-8"))
    assert sent == report
    assert schemas.problems(sent, REPORT_SCHEMA) == []


def test_a_snapshot_with_an_eta_is_refused_before_sending(harness: Harness, server: Any) -> None:
    """report.consistency.eta: eta_seconds is null in every snapshot, also of a run in
    progress (only the training process knows it): Node's send_report refuses one that
    carries an ETA before anything is sent, as Python's consistency_problems does."""
    from trainrecord.report import consistency_problems

    srv = server()
    report = {**_valid_report(), "event": "snapshot", "status": "in progress", "eta_seconds": 60}
    report["error"] = report["finished_at"] = None
    assert "report.consistency.eta" in {p.rule for p in consistency_problems(report)}
    got = harness.run("send_report", url=_url(srv), token=TOKEN, report=report)
    assert got["refused"] and "report.consistency.eta" in got["rules"], got
    assert srv.seen == []


@pytest.mark.parametrize("status", [201, 204, 401, 403, 400, 422, 404, 500, 503])
def test_report_status_codes(harness: Harness, server: Any, status: int) -> None:
    srv = server(status)
    got = harness.run("send_report", url=_url(srv), token=TOKEN, report=_valid_report())
    assert got == {"delivered": 200 <= status < 300, "status": status}
    assert len(srv.seen) == 1  # no retry


def test_redirect_is_not_followed(harness: Harness, server: Any) -> None:
    elsewhere = server()
    srv = server(302, location=_url(elsewhere))
    got = harness.run("send_report", url=_url(srv), token=TOKEN, report=_valid_report())
    assert got == {"delivered": False, "status": 302}
    assert len(srv.seen) == 1 and elsewhere.seen == []


def test_tls_verified(harness: Harness, server: Any, tmp_path: Path) -> None:
    ca = trustme.CA()
    srv = server(tls=ca)
    url = _url(srv, "https")
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    trusted = harness.run(
        "send_report",
        url=url,
        token=TOKEN,
        report=_valid_report(),
        ca_file=str(tmp_path / "ca.pem"),
    )
    assert trusted == {"delivered": True, "status": 200}
    untrusted = harness.run(
        "send_report", url=url, token=TOKEN, report=_valid_report(), ca_file=None
    )
    assert untrusted == {"delivered": False, "status": None}
    assert len(srv.seen) == 1


@pytest.mark.parametrize(
    ("url", "token", "rule"),
    [
        ("http://example.org/api", TOKEN, "report.settings.url_scheme"),
        ("ftp://127.0.0.1/api", TOKEN, "report.settings.url_scheme"),
        ("https://user:pw@example.org/api", TOKEN, "report.settings.url_credentials"),
        (None, TOKEN, "report.settings.url_missing"),
        ("https://example.org/api", None, "report.settings.token"),
        # the token in the URL, before its other checks (as Python); a short token only in
        # the scheme or host is no leak, but in the path it is
        (f"https://{TOKEN}@example.org/api", TOKEN, "report.settings.token"),
        ("ftp://127.0.0.1/api?t=tok%2D0123456789", TOKEN, "report.settings.token"),
        ("http://example.org/api", "t", "report.settings.url_scheme"),
        ("http://example.org/api/t", "t", "report.settings.token"),
    ],
)
def test_report_settings_refused(harness: Harness, url: Any, token: Any, rule: str) -> None:
    got = harness.run("send_report", url=url, token=token, report=_valid_report())
    assert got["refused"] and got["rules"] == [rule]


def test_invalid_report_is_not_sent(harness: Harness, server: Any) -> None:
    srv = server()
    report = {**_valid_report(), "seq": 1.5}
    got = harness.run("send_report", url=_url(srv), token=TOKEN, report=report)
    oracle = {p.rule for p in schemas.problems(report, REPORT_SCHEMA)}
    assert "report.seq.type" in oracle
    assert got["refused"] and set(got["rules"]) == oracle
    assert srv.seen == []


# --- write_diary --------------------------------------------------------------------------


def _events() -> list[dict[str, Any]]:
    """run_start, alarm, run_end as a caller passes them (no seq, time, prev, hash)."""
    return [{k: v for k, v in body.items() if k not in ("seq", "time")} for body in bodies()]


def test_written_diary_verifies_in_python(harness: Harness, tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_bytes(METRICS)
    got = harness.run("write_diary", dir=str(tmp_path), events=_events())
    assert got == {"path": str(tmp_path / "diary.jsonl")}
    result = python_verify(tmp_path, workers=1)
    assert result.ok and result.sealed and result.complete, result.summary()
    lines = [json.loads(x) for x in (tmp_path / "diary.jsonl").read_text("utf-8").splitlines()]
    assert [x["seq"] for x in lines] == [0, 1, 2]
    assert all(isinstance(x["time"], float) for x in lines)
    assert lines[0]["config"]["big"] == 2**70


@pytest.mark.parametrize(
    ("change", "rule"),
    [
        (lambda e: e[1].update(seq=4), "diary.writer.reserved"),
        (lambda e: e[1].update(hash="0" * 64), "diary.writer.reserved"),
        (lambda e: e.pop(0), "diary.order.run_start"),
        (lambda e: e[1].pop("grad_norm"), "diary.alarm.fields.missing"),
        (lambda e: e.insert(2, e.pop(1)), "diary.order.run_end"),
    ],
)
def test_write_diary_refusals(
    harness: Harness, tmp_path: Path, change: Callable[[list[dict[str, Any]]], Any], rule: str
) -> None:
    (tmp_path / "metrics.jsonl").write_bytes(METRICS)
    events = _events()
    change(events)
    got = harness.run("write_diary", dir=str(tmp_path), events=events)
    assert got["refused"] and rule in got["rules"]
    diary = tmp_path / "diary.jsonl"
    lines = diary.read_text("utf-8").splitlines() if diary.exists() else []
    # the refused event wrote nothing: what is there still verifies line by line
    assert len(lines) < len(events)
    if lines:
        result = python_verify(tmp_path, workers=1, check_seal=False)
        assert result.lines == len(lines)
        assert result.failure is None or result.failure.rule == "diary.metrics.sha256"


def test_write_diary_resumes_and_refuses_a_broken_diary(harness: Harness, tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_bytes(METRICS)
    events = _events()
    harness.run("write_diary", dir=str(tmp_path), events=events[:2])
    # the new session starts with its own run_start (diary.writer.resume)
    harness.run("write_diary", dir=str(tmp_path), events=[events[0], *events[2:]])
    assert python_verify(tmp_path, workers=1).ok
    text = (tmp_path / "diary.jsonl").read_text("utf-8")
    (tmp_path / "diary.jsonl").write_text(text.replace('"seq":1,', '"seq":7,'), "utf-8")
    got = harness.run("write_diary", dir=str(tmp_path), events=[events[0]])
    assert got == {"refused": True, "rules": ["diary.writer.resume"]}


@pytest.mark.parametrize("first", ["alarm", "run_end", "sink_error"])
def test_resumed_diary_continues_with_run_start(
    harness: Harness, tmp_path: Path, first: str
) -> None:
    """A diary without run_end (a crashed session) is continued by the new session's
    run_start: Node refuses any other first event (diary.writer.resume), as Python does,
    and writes nothing into diary.jsonl."""
    from trainrecord.diary import DiaryWriter
    from trainrecord.errors import RecordRefused

    (tmp_path / "metrics.jsonl").write_bytes(METRICS)
    events = {e["event"]: e for e in _events()}
    events["sink_error"] = {"event": "sink_error", "sink": "x", "error": "y"}
    harness.run("write_diary", dir=str(tmp_path), events=[events["run_start"]])
    before = (tmp_path / "diary.jsonl").read_bytes()
    got = harness.run(
        "append_diary", dir=str(tmp_path), events=[events[first]], fsync_policy="always"
    )
    assert got == {"refused": True, "rules": ["diary.writer.resume"]}
    assert (tmp_path / "diary.jsonl").read_bytes() == before
    with DiaryWriter(tmp_path) as writer, pytest.raises(RecordRefused) as refused:
        writer.append(first, {k: v for k, v in events[first].items() if k != "event"})
    assert [p.rule for p in refused.value.problems] == ["diary.writer.resume"]
    assert (tmp_path / "diary.jsonl").read_bytes() == before
    got = harness.run(
        "append_diary", dir=str(tmp_path), events=[events["run_start"]], fsync_policy="always"
    )
    assert got == {"path": str(tmp_path / "diary.jsonl")}
    assert python_verify(tmp_path, workers=1).lines == 2


def test_node_writes_a_whole_second_as_a_float_token() -> None:
    """The Node writer stamps time as Math.round(Date.now()) / 1000, a JavaScript number,
    which its canonical JSON writes as a Python float: 1764460800.0 on a whole second, never
    the integer token 1764460800 that diary.time.precision refuses."""
    import subprocess

    from tests.typescript.node_harness import NODE_IMPL, require_node

    script = (
        'const { canonicalLine } = require("./lib/pyjson");'
        "process.stdout.write(canonicalLine({ time: Math.round(1764460800000) / 1000 }));"
    )
    out = subprocess.run(
        [require_node(), "-e", script], cwd=NODE_IMPL, capture_output=True, text=True, check=True
    )
    assert out.stdout == '{"time":1764460800.0}'


def _node_verify(folder: Path) -> dict[str, Any]:
    """Node's verifyDiary on ``folder`` in a child with a time limit (a verifier that blocks
    on a FIFO fails the test instead of hanging it); its failure, or an error with stderr."""
    import subprocess

    from tests.typescript.node_harness import NODE_IMPL, require_node

    script = (
        'const { verifyDiary } = require("./lib/diary");'
        "const r = verifyDiary(process.argv[1]);"
        "process.stdout.write(JSON.stringify({ status: r.status, failure: r.failure },"
        ' (k, v) => (typeof v === "bigint" ? Number(v) : v)));'
    )
    out = subprocess.run(
        [require_node(), "-e", script, str(folder)],
        cwd=NODE_IMPL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


@pytest.mark.parametrize("kind", ["folder", "fifo"])
@pytest.mark.parametrize("name", ["diary.jsonl", "metrics.jsonl", "record.json", "record.sig"])
def test_a_file_that_is_not_a_regular_file_is_a_failure_in_node(
    tmp_path: Path, name: str, kind: str
) -> None:
    """diary.file.regular: Node names the file and what stands there, as Python does,
    instead of throwing EISDIR with a stack trace (a folder) or blocking (a FIFO)."""
    import os

    folder = write_diary(tmp_path / "run", bodies())
    generate_keypair(tmp_path / "k" / "signer")
    write_seal(folder, signing_key=tmp_path / "k" / "signer")
    (folder / name).unlink()
    if kind == "folder":
        (folder / name).mkdir()
    else:
        os.mkfifo(folder / name)
    got = _node_verify(folder)
    expected = python_verify(folder, workers=1)
    assert expected.failure is not None
    assert got["status"] == expected.status == "failed"
    assert got["failure"] == expected.failure.to_json()


def test_node_seal_and_metrics_messages_name_the_field(tmp_path: Path) -> None:
    """A seal or metrics row that breaks its schema: Node's message names the field, as
    Python's does (it said only 'must NOT have additional properties')."""
    folder = write_diary(tmp_path / "run", bodies())
    write_seal(folder)
    seal = json.loads((folder / "record.json").read_text())
    diary = {k: v for k, v in seal["diary"].items() if k != "head_hash"}
    (folder / "record.json").write_text(json.dumps({**seal, "diary": diary}, indent=2))
    got = _node_verify(folder)["failure"]
    assert got["rule"] == "seal.diary.fields"
    assert got["message"].startswith("diary.head_hash: "), got["message"]
    (folder / "record.json").unlink()
    bad = b'{"step":1,"loss":1.0,"grad":{}}\n'
    items = bodies()
    items[2]["metrics_sha256"] = hashlib.sha256(bad).hexdigest()
    got = _node_verify(write_diary(tmp_path / "m", items, metrics=bad))["failure"]
    assert got["rule"] == "diary_metrics.fields.missing"
    assert got["message"].startswith("stuck: "), got["message"]


def _node_verify_fields(folder: Path, key: Path | None = None) -> dict[str, Any]:
    """Node's verifyDiary on ``folder`` (with the public key file ``key``): the fields that
    Python's VerifyResult.to_json() has too."""
    import subprocess

    from tests.typescript.node_harness import NODE_IMPL, require_node

    script = (
        'const { verifyDiary } = require("./lib/diary");'
        'const { loadPublicKey } = require("./lib/keys");'
        "const key = process.argv[2] ? loadPublicKey(process.argv[2]) : null;"
        "const r = verifyDiary(process.argv[1], { publicKey: key });"
        "process.stdout.write(JSON.stringify(r,"
        ' (k, v) => (typeof v === "bigint" ? Number(v) : v)));'
    )
    out = subprocess.run(
        [require_node(), "-e", script, str(folder), str(key or "")],
        cwd=NODE_IMPL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


_SEAL_FIELDS = ("status", "sealed", "signed", "signature", "sealed_at", "sealed_lines")


def test_node_tells_an_unsigned_seal_from_an_unchecked_signature_as_python(
    tmp_path: Path,
) -> None:
    """Tamper probe items 2, 9, 10: signature ("absent", "not checked", "valid"),
    sealed_at and sealed_lines, the warning, and the seal messages (another record's seal
    is not called an append; a key for an unsigned record names the missing record.sig)
    are the same in Node and Python."""
    _, pub, _ = generate_keypair(tmp_path / "k" / "signer")
    items = bodies()
    cases: list[tuple[Path, Path | None]] = []
    unsigned = write_diary(tmp_path / "unsigned", items)
    write_seal(unsigned)
    cases += [(unsigned, None), (unsigned, pub)]
    signed = write_diary(tmp_path / "signed", items)
    write_seal(signed, signing_key=tmp_path / "k" / "signer")
    cases += [(signed, None), (signed, pub)]
    short = write_diary(tmp_path / "short", items[:2])
    write_seal(short)
    appended = write_diary(tmp_path / "appended", items)
    (appended / "record.json").write_bytes((short / "record.json").read_bytes())
    other = write_diary(tmp_path / "other", [*items[:1], {**items[1], "step": 99}, items[2]])
    (other / "record.json").write_bytes((short / "record.json").read_bytes())
    cut = write_diary(tmp_path / "cut", items[:1])
    (cut / "record.json").write_bytes((short / "record.json").read_bytes())
    cases += [(appended, None), (other, None), (cut, None)]
    for folder, key in cases:
        got = _node_verify_fields(folder, key)
        want = python_verify(folder, public_key=key, workers=1).to_json()
        where = (folder.name, key is not None)
        assert {k: got[k] for k in _SEAL_FIELDS} == {k: want[k] for k in _SEAL_FIELDS}, where
        assert got["failure"] == want["failure"], where
        assert got["warnings"] == want["warnings"], where
    assert _node_verify_fields(unsigned)["signature"] == "absent"
    assert "appended to" in str(_node_verify_fields(appended)["failure"])
    assert "appended to" not in str(_node_verify_fields(other)["failure"])


def test_node_ignores_seal_fields_it_does_not_know_as_python(tmp_path: Path) -> None:
    """record.json with fields this version does not name (top level and in its objects)
    verifies in Node as in Python; a named field beside them stays strict (audit F7)."""
    folder = write_diary(tmp_path / "run", bodies())
    write_seal(folder)
    seal = json.loads((folder / "record.json").read_text())
    seal["comment"] = "x"
    seal["diary"]["note"] = 1
    seal["metrics"]["compression"] = None
    (folder / "record.json").write_text(json.dumps(seal, indent=2))
    assert _node_verify(folder)["status"] == python_verify(folder).status == "ok"
    seal["record_version"] = 2
    (folder / "record.json").write_text(json.dumps(seal, indent=2))
    got = _node_verify(folder)["failure"]
    assert got["rule"] == python_verify(folder).failure.rule == "seal.record_version.unsupported"


@pytest.mark.parametrize(
    "change",
    [
        lambda d: b"\xef\xbb\xbf" + d,
        lambda d: d.replace(b"\n", b"\n\n", 1),
        lambda d: d + b"\n",
        lambda d: d.replace(b"\n", b"\r\n"),
    ],
    ids=["bom", "blank-line-between", "blank-line-at-the-end", "crlf"],
)
def test_node_reads_the_diary_bytes_as_python(tmp_path: Path, change: Any) -> None:
    """A BOM and blank lines are diary.file.json on their line; CRLF verifies (audit F9)."""
    folder = write_diary(tmp_path / "run", bodies())
    path = folder / "diary.jsonl"
    path.write_bytes(change(path.read_bytes()))
    expected = python_verify(folder)
    got = _node_verify(folder)
    assert got["status"] == expected.status
    want = expected.failure.to_json() if expected.failure else None
    assert (got["failure"] or {}).get("rule") == (want or {}).get("rule")
    assert (got["failure"] or {}).get("line") == (want or {}).get("line")
