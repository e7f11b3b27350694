"""The reference receiver: 401/415/411/413/400/422/200 as the contract says, newest seq wins
per run_id whatever the order or concurrency, a JSON read API with "no contact", and plain
HTTP only on loopback."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests
from hypothesis import given
from hypothesis import strategies as st

from tests.report.conftest import TOKEN, TLSFiles, training_state
from trainrecord.errors import RecordRefused
from trainrecord.report import (
    MAX_BODY,
    ReportServer,
    ReportStore,
    build_report,
    local_time,
    make_server,
)
from trainrecord.report.receiver import DRAIN_LIMIT
from trainrecord.report.store import NO_CONTACT_GRACE_S

AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


def report(run_id: str | None = None, seq: int = 1, **over: Any) -> dict[str, Any]:
    state = training_state()
    if run_id:
        state.run_id = run_id
    out = build_report(state, event="progress", status="in progress", seq=seq, sent_at=local_time())
    out.update(over)
    return out


def post(
    server: ReportServer, body: bytes | dict, headers: dict[str, str] | None = None, **kw: Any
) -> requests.Response:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return requests.post(
        server.url + "/api/runs",
        data=data,
        headers=AUTH if headers is None else headers,
        timeout=10,
        **kw,
    )


def test_a_valid_report_is_stored(receiver: ReportServer) -> None:
    doc = report()
    resp = post(receiver, doc)
    assert resp.status_code == 200 and resp.json() == {"ok": True, "stored": True}
    assert receiver.store.latest(doc["run_id"]) == doc


@pytest.mark.parametrize("auth", [f"Bearer {TOKEN} ", f"Bearer {TOKEN}\t", f"Bearer {TOKEN}  "])
def test_white_space_after_the_token_is_not_part_of_it(
    https_receiver: ReportServer, tls: TLSFiles, auth: str
) -> None:
    """RFC 9110 §5.5: white space around a field value is not part of it (spec/README.md,
    Receiver). The Python receiver answered 401 where node:http's receiver answered 200."""
    doc = report()
    resp = requests.post(
        https_receiver.url + "/api/runs",
        data=json.dumps(doc).encode(),
        headers={"Content-Type": "application/json", "Authorization": auth},
        timeout=10,
        verify=tls.ca,
    )
    assert resp.status_code == 200, resp.text
    assert https_receiver.store.latest(doc["run_id"]) == doc


@pytest.mark.parametrize(
    "auth",
    [
        None,
        "",
        "Bearer",
        "Bearer wrong",
        f"Basic {TOKEN}",
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN} x",
        f"Bearer{TOKEN}",
        f"Token {TOKEN}",
        TOKEN,
    ],
)
def test_a_missing_or_bad_token_is_401(receiver: ReportServer, auth: str | None) -> None:
    headers = {"Content-Type": "application/json"}
    if auth is not None:
        headers["Authorization"] = auth
    resp = post(receiver, report(), headers)
    assert resp.status_code == 401
    assert resp.headers["WWW-Authenticate"].startswith("Bearer")
    assert receiver.store.runs() == []


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "BeArEr", "Bearer "])
def test_the_bearer_scheme_is_case_insensitive(receiver: ReportServer, scheme: str) -> None:
    """HTTP auth schemes are case-insensitive (RFC 9110 §11.1), and one or more spaces
    separate the scheme from the token; the token itself is compared exactly."""
    auth = {"Authorization": f"{scheme} {TOKEN}"}
    doc = report()
    resp = post(receiver, doc, {"Content-Type": "application/json", **auth})
    assert resp.status_code == 200 and resp.json() == {"ok": True, "stored": True}
    read = requests.get(f"{receiver.url}/api/runs/{doc['run_id']}", headers=auth, timeout=10)
    assert read.status_code == 200 and read.json() == doc
    wrong = {"Authorization": f"{scheme} {TOKEN.upper()}"}
    assert requests.get(receiver.url + "/api/runs", headers=wrong, timeout=10).status_code == 401


def test_reads_need_the_token_too(receiver: ReportServer) -> None:
    assert requests.get(receiver.url + "/api/runs", timeout=10).status_code == 401


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", ""])
def test_a_wrong_content_type_is_415(receiver: ReportServer, ctype: str) -> None:
    resp = post(receiver, report(), {"Authorization": AUTH["Authorization"], "Content-Type": ctype})
    assert resp.status_code == 415


def test_a_body_over_256_kb_is_413_before_it_is_read(receiver: ReportServer) -> None:
    with socket.create_connection(receiver.server_address[:2], timeout=10) as sock:
        sock.sendall(
            (
                f"POST /api/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                "Content-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n"
            ).encode()
        )
        answer = sock.recv(4096).decode()  # answered without the server waiting for the body
    assert answer.startswith("HTTP/1.1 413")


def test_exactly_256_kb_is_not_413(receiver: ReportServer) -> None:
    doc = report()
    text = json.dumps(doc)
    padded = (text[:-1] + " " * (MAX_BODY - len(text)) + "}").encode()
    assert len(padded) == MAX_BODY
    assert post(receiver, padded).status_code == 200
    assert post(receiver, padded + b" ").status_code == 413


def _padded(size: int) -> bytes:
    text = json.dumps(report())
    return (text[:-1] + " " * (size - len(text)) + "}").encode()


@pytest.mark.parametrize("size", [300 * 1024, DRAIN_LIMIT])
def test_a_client_sending_a_body_over_256_kb_over_tls_reads_the_413(
    https_receiver: ReportServer, tls: TLSFiles, size: int
) -> None:
    """requests sends the whole body before it reads the answer; a receiver that answered
    413 and closed without reading left it an SSLEOFError (or a reset) instead of the 413.
    A body up to DRAIN_LIMIT is read and dropped, then 413, then the connection closed."""
    for _ in range(3):
        resp = requests.post(
            https_receiver.url + "/api/runs",
            headers=AUTH,
            data=_padded(size),
            timeout=10,
            verify=tls.ca,
        )
        assert resp.status_code == 413
        assert resp.json() == {"ok": False, "error": f"body over {MAX_BODY} bytes"}
        assert resp.headers["Connection"] == "close"
    assert https_receiver.store.runs() == []


@pytest.mark.parametrize("status", [401, 415])
def test_other_refusals_over_tls_reach_a_client_sending_300_kb(
    https_receiver: ReportServer, tls: TLSFiles, status: int
) -> None:
    headers = (
        {"Content-Type": "application/json", "Authorization": "Bearer wrong"}
        if status == 401
        else {"Authorization": AUTH["Authorization"], "Content-Type": "text/plain"}
    )
    resp = requests.post(
        https_receiver.url + "/api/runs",
        headers=headers,
        data=_padded(300 * 1024),
        timeout=10,
        verify=tls.ca,
    )
    assert resp.status_code == status


def test_a_content_length_far_over_the_drain_limit_is_413_without_reading_it(
    https_receiver: ReportServer, tls: TLSFiles
) -> None:
    """Over TLS too: a Content-Length of 1 GB is answered at once from the headers, with
    no body sent, and the connection is closed (the body is never waited for)."""
    ctx = ssl.create_default_context(cafile=tls.ca)
    host, port = https_receiver.server_address[:2]
    with (
        socket.create_connection((host, port), timeout=10) as raw,
        ctx.wrap_socket(raw, server_hostname="127.0.0.1") as sock,
    ):
        sock.sendall(
            (
                f"POST /api/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                "Content-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n"
            ).encode()
            + b" " * 1024
        )
        answer = b""
        while chunk := sock.recv(4096):  # the server closes: recv ends, no 10 s timeout
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413")
    assert b"Connection: close" in answer


def test_a_missing_content_length_is_411(receiver: ReportServer) -> None:
    conn = http.client.HTTPConnection(*receiver.server_address[:2], timeout=10)
    conn.putrequest("POST", "/api/runs")
    conn.putheader("Authorization", AUTH["Authorization"])
    conn.putheader("Content-Type", "application/json")
    conn.endheaders()
    assert conn.getresponse().status == 411
    conn.close()


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b'{"a": NaN}',
        b"\xff\xfe{}",
        b"",
        b'{"a": 1',
        b'{"a": 1, "a": 2}',
        b"[" * 50_000 + b"]" * 50_000,  # a RecursionError in the handler dropped the connection
    ],
)
def test_a_body_that_is_not_strict_json_is_400(receiver: ReportServer, body: bytes) -> None:
    assert post(receiver, body).status_code == 400


@pytest.mark.parametrize(
    ("over", "rule"),
    [
        ({"seq": -1}, "report.seq.range"),
        ({"schema": 1}, "report.schema.unsupported"),
        ({"kind": "nope"}, "report.kind.unknown"),
        ({"pid": 1}, "report.fields.extra"),
        ({"sent_at": "2026-10-05T21:48:05Z"}, "report.sent_at.format"),
    ],
)
def test_a_report_that_fails_the_schema_is_422_with_the_problems(
    receiver: ReportServer, over: dict, rule: str
) -> None:
    resp = post(receiver, report(**over))
    assert resp.status_code == 422
    found = resp.json()["problems"]
    assert rule in {p["rule"] for p in found}
    assert all({"rule", "path", "message", "value"} <= set(p) for p in found)
    assert receiver.store.runs() == []


@pytest.mark.parametrize(
    "missing, broken",
    [
        (["schema", "seq"], {}),
        (["run_id"], {"pid": 1, "name": 7}),
        (["sent_at", "host"], {"schema": 1}),
        ([], {}),
    ],
)
def test_a_report_without_kind_lists_the_missing_kind_first(
    receiver: ReportServer, missing: list[str], broken: dict
) -> None:
    body = report(**broken)
    for name in ["kind", *missing]:
        del body[name]
    resp = post(receiver, body)
    assert resp.status_code == 422
    found = resp.json()["problems"]
    assert (found[0]["rule"], found[0]["path"]) == ("report.fields.missing", ["kind"]), found
    assert "'kind' is missing" in found[0]["message"]
    assert sum(p["path"] == ["kind"] for p in found) == 1


def test_a_json_array_is_422(receiver: ReportServer) -> None:
    assert post(receiver, b"[1, 2]").status_code == 422


def test_old_and_duplicate_reports_are_200_and_not_stored(receiver: ReportServer) -> None:
    run_id = str(uuid.uuid4())
    newer = report(run_id, seq=20, event="epoch_end")
    assert post(receiver, newer).json() == {"ok": True, "stored": True}
    assert post(receiver, report(run_id, seq=10)).json() == {"ok": True, "stored": False}
    assert post(receiver, report(run_id, seq=20)).json() == {"ok": True, "stored": False}
    assert receiver.store.latest(run_id) == newer
    assert [r["stored"] for r in receiver.store.receipts(run_id)] == [True, False, False]


def test_other_methods_are_405(receiver: ReportServer) -> None:
    resp = requests.put(receiver.url + "/api/runs", headers=AUTH, data=b"{}", timeout=10)
    assert resp.status_code == 405


def test_the_read_api_lists_runs_and_serves_the_latest_report(receiver: ReportServer) -> None:
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    post(receiver, report(a, seq=5))
    post(receiver, report(b, seq=7, event="complete", status="complete", finished_at=local_time()))
    runs = requests.get(receiver.url + "/api/runs", headers=AUTH, timeout=10).json()["runs"]
    assert {(r["run_id"], r["state"]) for r in runs} == {(a, "in progress"), (b, "complete")}
    got = requests.get(f"{receiver.url}/api/runs/{a}", headers=AUTH, timeout=10)
    assert got.status_code == 200 and got.json()["seq"] == 5
    receipts = requests.get(f"{receiver.url}/api/runs/{a}/receipts", headers=AUTH, timeout=10)
    assert [r["seq"] for r in receipts.json()["receipts"]] == [5]
    missing = requests.get(f"{receiver.url}/api/runs/{uuid.uuid4()}", headers=AUTH, timeout=10)
    assert missing.status_code == 404


def test_a_silent_run_in_progress_shows_no_contact(tmp_path: Path) -> None:
    store = ReportStore(tmp_path / "r.sqlite")
    running, done = (
        report(seq=1),
        report(seq=1, event="complete", status="complete", finished_at=local_time()),
    )
    store.put(running, received_at=1000.0)
    store.put(done, received_at=1000.0)
    limit = 1000.0 + 3 * 60 + NO_CONTACT_GRACE_S
    states = {r["run_id"]: r["state"] for r in store.runs(every=60, now=limit)}
    assert states == {running["run_id"]: "in progress", done["run_id"]: "complete"}
    states = {r["run_id"]: r["state"] for r in store.runs(every=60, now=limit + 1)}
    assert states == {running["run_id"]: "no contact", done["run_id"]: "complete"}
    assert store.latest(running["run_id"])["status"] == "in progress"  # stored status unchanged
    store.put(report(running["run_id"], seq=0), received_at=limit)  # an old report is contact
    states = {r["run_id"]: r["state"] for r in store.runs(every=60, now=limit + 1)}
    assert states[running["run_id"]] == "in progress"


@given(st.lists(st.integers(min_value=0, max_value=2**53 - 1), min_size=1, max_size=12))
def test_out_of_order_and_duplicate_delivery_ends_at_the_max_seq(seqs: list[int]) -> None:
    server = _SHARED["server"]
    run_id = str(uuid.uuid4())
    for seq in seqs:
        resp = post(server, report(run_id, seq=seq, host=f"h{seq}"))
        assert resp.status_code == 200
    latest = server.store.latest(run_id)
    assert latest["seq"] == max(seqs) and latest["host"] == f"h{max(seqs)}"
    stored = [r["seq"] for r in server.store.receipts(run_id) if r["stored"]]
    assert stored == sorted(set(stored)) and stored[-1] == max(seqs)


_SHARED: dict[str, ReportServer] = {}


@pytest.fixture(autouse=True)
def _share(receiver: ReportServer) -> None:
    _SHARED["server"] = receiver


def test_concurrent_posts_never_let_an_older_report_win(receiver: ReportServer) -> None:
    run_ids = [str(uuid.uuid4()) for _ in range(3)]
    import random

    plan = [(run_id, seq) for run_id in run_ids for seq in range(1, 41)]
    random.Random(7).shuffle(plan)
    chunks = [plan[i::8] for i in range(8)]
    errors: list[int] = []

    def worker(items: list[tuple[str, int]]) -> None:
        with requests.Session() as session:
            for run_id, seq in items:
                resp = session.post(
                    receiver.url + "/api/runs",
                    headers=AUTH,
                    timeout=30,
                    data=json.dumps(report(run_id, seq=seq)).encode(),
                )
                if resp.status_code != 200:
                    errors.append(resp.status_code)

    threads = [threading.Thread(target=worker, args=(c,)) for c in chunks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for run_id in run_ids:
        assert receiver.store.latest(run_id)["seq"] == 40
        assert len(receiver.store.receipts(run_id)) == 40


def test_https_receiver_serves_a_trusting_client(
    https_receiver: ReportServer, tls: TLSFiles
) -> None:
    assert https_receiver.url.startswith("https://")
    resp = requests.post(
        https_receiver.url + "/api/runs",
        headers=AUTH,
        timeout=10,
        data=json.dumps(report()).encode(),
        verify=tls.ca,
    )
    assert resp.status_code == 200
    with pytest.raises(requests.exceptions.SSLError):
        requests.post(
            https_receiver.url + "/api/runs", headers=AUTH, timeout=10, data=b"{}", verify=True
        )


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1", "example.org"])
def test_plain_http_is_refused_off_loopback(tmp_path: Path, host: str) -> None:
    with pytest.raises(RecordRefused) as info:
        make_server(host, 0, token=TOKEN, store=ReportStore(tmp_path / "r.sqlite"))
    assert info.value.rule == "report.server.plain_http_loopback"


def test_plain_http_on_ipv6_loopback(tmp_path: Path) -> None:
    try:
        server = make_server("::1", 0, token=TOKEN, store=ReportStore(tmp_path / "r.sqlite"))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    server.serve_in_thread()
    try:
        assert server.url.startswith("http://[::1]:")
        assert post(server, report()).status_code == 200
    finally:
        server.close()
