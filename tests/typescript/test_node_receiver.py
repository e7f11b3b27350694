"""The Node implementation's reporting receiver (the harness's ``serve``) against the Python
reference receiver: the same raw requests get the same status codes, in the order of checks
spec/README.md fixes (401, 415, 411, 413, 400, 422, 200), the same ``stored`` verdicts
(newest seq wins) and the same rule ids in a 422, and the stored report reads back."""

from __future__ import annotations

import http.client
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.typescript.node_harness import Harness
from trainrecord.report import ReportStore, make_server
from trainrecord_conformance.checks.reporting import _vector_reports

pytestmark = pytest.mark.xdist_group("node")
TOKEN = "receiver-test-token-0123456789"
RUN_ID = str(uuid.uuid4())


@pytest.fixture(scope="module")
def urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(Node receiver URL, Python receiver URL), each ending in /api/runs."""
    folder = tmp_path_factory.mktemp("receivers")
    harness = Harness()
    python = make_server("127.0.0.1", 0, token=TOKEN, store=ReportStore(folder / "r.sqlite"))
    python.serve_in_thread()
    try:
        served = harness.run("serve", dir=str(folder / "node"), token=TOKEN)
        assert served["read_url"] == served["url"]
        yield served["url"], python.url + "/api/runs"
    finally:
        python.close()
        harness.close()


def request(
    url: str,
    method: str = "POST",
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    path: str = "",
    chunked: bool = False,
) -> tuple[int, Any]:
    """One request on a fresh connection: (status, JSON body or None)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        conn.putrequest(method, parts.path + path, skip_accept_encoding=True)
        for key, value in (headers or {}).items():
            conn.putheader(key, value)
        if chunked:
            conn.putheader("Transfer-Encoding", "chunked")
        elif body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders()
        if body is not None:
            conn.send(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body) if chunked else body)
        resp = conn.getresponse()
        raw = resp.read()
        return resp.status, json.loads(raw) if raw else None
    finally:
        conn.close()


def report(seq: int, **change: Any) -> bytes:
    base = {**_vector_reports()[0], "run_id": RUN_ID, "seq": seq, **change}
    return json.dumps(base).encode("utf-8")


JSON = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
CASES: list[tuple[str, dict[str, Any]]] = [
    ("first", {"body": report(10)}),
    ("duplicate", {"body": report(10)}),
    ("older", {"body": report(5)}),
    ("newer", {"body": report(20)}),
    ("no token", {"body": report(30), "headers": {"Content-Type": "application/json"}}),
    ("wrong token", {"body": report(30), "headers": {**JSON, "Authorization": "Bearer nope"}}),
    ("basic", {"body": report(30), "headers": {**JSON, "Authorization": f"Basic {TOKEN}"}}),
    ("token twice", {"body": report(30), "headers": {**JSON, "Authorization": f"Bearer {TOKEN}x"}}),
    (
        "lower scheme",
        {"body": report(31), "headers": {**JSON, "Authorization": f"bearer  {TOKEN}"}},
    ),
    ("text/plain", {"body": report(32), "headers": {**JSON, "Content-Type": "text/plain"}}),
    (
        "charset",
        {
            "body": report(33),
            "headers": {**JSON, "Content-Type": "Application/JSON; charset=utf-8"},
        },
    ),
    ("no length", {"body": report(34), "chunked": True}),
    ("too large", {"body": report(35)[:-1] + b" " * (256 * 1024) + b"}"}),
    ("at the limit", {"body": report(36)[:-1] + b" " * (256 * 1024 - len(report(36))) + b"}"}),
    ("bom", {"body": b"\xef\xbb\xbf" + report(37)}),
    ("nan", {"body": report(38).replace(b'"schema": 2', b'"schema": NaN')}),
    ("duplicate name", {"body": report(39)[:-1] + b', "seq": 1}'}),
    ("not utf-8", {"body": b'{"a": "\xff"}'}),
    ("schema", {"body": report(40, host=5, eta_seconds=-1)}),
    ("float seq", {"body": report(41).replace(b'"seq": 41', b'"seq": 41.0')}),
    ("missing field", {"body": json.dumps({"schema": 2}).encode()}),
    ("put", {"body": report(42), "method": "PUT"}),
    ("read", {"method": "GET", "path": f"/{RUN_ID}"}),
    ("read unknown", {"method": "GET", "path": f"/{uuid.uuid4()}"}),
    ("read without token", {"method": "GET", "path": f"/{RUN_ID}", "headers": {}}),
    ("receipts", {"method": "GET", "path": f"/{RUN_ID}/receipts"}),
]


def _answer(url: str, case: dict[str, Any]) -> tuple[int, Any]:
    status, doc = request(url, **{"headers": JSON, **case})
    if status == 422:
        return status, sorted({p["rule"] for p in doc["problems"]})
    if isinstance(doc, dict) and "receipts" in doc:
        return status, [(r["seq"], r["stored"]) for r in doc["receipts"]]
    if isinstance(doc, dict) and "seq" in doc:
        return status, doc["seq"]
    if isinstance(doc, dict):
        return status, doc.get("stored")
    return status, doc


def test_node_receiver_answers_as_the_python_one(urls: tuple[str, str]) -> None:
    node, python = urls
    got = [(name, _answer(node, case)) for name, case in CASES]
    want = [(name, _answer(python, case)) for name, case in CASES]
    assert got == want
    answers = dict(want)
    assert answers["first"] == (200, True) and answers["older"] == (200, False)
    assert answers["no token"][0] == 401 and answers["too large"][0] == 413
    assert answers["no length"][0] == 411 and answers["text/plain"][0] == 415
    assert answers["bom"][0] == answers["nan"][0] == 400 and answers["schema"][0] == 422
    assert answers["read"] == (200, 36)


def test_serve_refuses_a_token_unusable_in_a_header(tmp_path: Path) -> None:
    harness = Harness()
    try:
        got = harness.run("serve", dir=str(tmp_path), token="has space")
        assert got == {"refused": True, "rules": ["report.settings.token"]}
    finally:
        harness.close()
