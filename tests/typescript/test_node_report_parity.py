"""The Node report client, settings, witness reader and receiver against the Python ones, on
real servers over loopback (TLS with a trustme CA where §2 says https) and real files: the
same request target on the wire, the same settings verdicts, the same answers.

Each test here names a split an audit found between the two implementations (the request
target rewritten by the WHATWG parser, loopback spellings and backslashes, a BOM before a
witness, a bearer header with trailing white space, a huge Content-Length, the 422 problem
list, the wire body and headers, the CA variables) and fails on the implementation that
differed.
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.report.conftest import TOKEN, settings_for
from tests.report.servers import Behaviour, TestServer
from tests.typescript.node_harness import Harness
from trainrecord.report import post_report
from trainrecord_conformance.checks.reporting import _vector_reports

pytestmark = pytest.mark.xdist_group("node")


def _report() -> dict[str, Any]:
    return {**_vector_reports()[0], "seq": 1}


TARGETS = [
    ("/a/./b/../c?x=%7E&y=#frag", "/a/./b/../c?x=%7E&y="),
    ("/p?", "/p?"),
    ("/api/%2e%2E/runs", "/api/%2E%2E/runs"),
    ("/api//runs?a=1&b", "/api//runs?a=1&b"),
    ("/%7eteam/runs", "/%7Eteam/runs"),
    ("/caf\u00e9?q=\u00e9", "/caf%C3%A9?q=%C3%A9"),
    ("/a%zz/b%41", "/a%25zz/b%2541"),  # a stray %: every % is encoded (as urllib3 does)
    ("/a{b}|c^", "/a%7Bb%7D%7Cc%5E"),
    ("?only=query", "/?only=query"),
    ("", "/"),
]


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_node_posts_to_the_target_python_posts_to(
    harness: Harness, tls: tuple[str, Any], servers: list[TestServer], scheme: str
) -> None:
    """§2 "POST <url>, exactly as configured": both clients send the path and query as
    written (dot segments, an empty query's "?", escapes kept); the WHATWG parser Node used
    removed dot segments and the "?"."""
    ca, context = tls
    server = TestServer(Behaviour(), context if scheme == "https" else None)
    servers.append(server)
    for tail, wanted in TARGETS:
        url = server.url + tail
        assert post_report(settings_for(url, ca=ca), b'{"x":1}').ok
        got = harness.run("send_report", url=url, token=TOKEN, report=_report(), ca_file=ca)
        assert got == {"delivered": True, "status": 200}, tail
        python, node = server.requests[-2:]
        assert (python.path, node.path) == (wanted, wanted), tail


URL_VERDICTS = [
    # loopback as written: localhost, a dotted-decimal 127.0.0.0/8 address, ::1
    ("http://localhost/r", []),
    ("http://LocalHost:8080/r", []),
    ("http://127.0.0.1:8080/r", []),
    ("http://127.255.255.254/r", []),
    ("http://[::1]:9000/r", []),
    ("http://[0:0:0:0:0:0:0:1]/r", []),
    ("http://[::0:1]/r", []),
    # other spellings a resolver (or the WHATWG parser) reads as 127.0.0.1: refused
    ("http://127.1/api/runs", ["report.settings.url_scheme"]),
    ("http://0x7f.0.0.1:1/x", ["report.settings.url_scheme"]),
    ("http://2130706433:1/x", ["report.settings.url_scheme"]),
    ("http://0177.0.0.1/r", ["report.settings.url_scheme"]),
    ("http://127.000.0.1/r", ["report.settings.url_scheme"]),
    ("http://127.0.0.%31/r", ["report.settings.url_scheme"]),
    ("http://[::ffff:127.0.0.1]/r", ["report.settings.url_scheme"]),
    ("http://[::1%25lo]/r", ["report.settings.url_scheme"]),
    ("http://localhost./r", ["report.settings.url_scheme"]),
    # a backslash (the WHATWG parser reads it as /), an escape in the host
    ("https://example.org\\x", ["report.settings.url_scheme"]),
    ("https://example.org\\@evil.example/x", ["report.settings.url_credentials"]),
    ("http://127.0.0.1\\@evil.example/x", ["report.settings.url_credentials"]),
    ("https://exa%6Dple.org/x", ["report.settings.url_scheme"]),
    ("http://@127.0.0.1/r", ["report.settings.url_credentials"]),
    ("https://b\u00fccher.example/x", []),
]


@pytest.mark.parametrize(("url", "rules"), URL_VERDICTS)
def test_python_and_node_agree_on_a_url(
    harness: Harness, tmp_path: Path, url: str, rules: list[str]
) -> None:
    """§2: "plain http:// is refused unless the host is localhost or a loopback IP". The
    host is judged as written, in both (spec/README.md, Settings): Node judged the host the
    WHATWG parser made of it (127.1 -> 127.0.0.1, a backslash -> /) and took four URLs
    Python refused."""
    from trainrecord.errors import RecordRefused
    from trainrecord.report import load_settings

    (tmp_path / "paths.toml").write_text(f"[report]\nurl = {json.dumps(url)}\n", encoding="utf-8")
    env = {"CORREAD_REPORT_TOKEN": TOKEN}
    try:
        load_settings(tmp_path / "paths.toml", env)
        python: list[str] = []
    except RecordRefused as exc:
        python = sorted({p.rule for p in exc.problems})
    got = harness.run("load_settings", path=str(tmp_path / "paths.toml"), env=env)
    node = sorted(got["rules"]) if got.get("refused") else []
    assert (python, node) == (rules, rules)


def test_a_witness_after_a_bom_is_refused_by_both(harness: Harness, tmp_path: Path) -> None:
    """spec/README.md: readers take strict JSON only, no BOM (``witness.file.json``). Node's
    witness reader decoded with a TextDecoder that drops a BOM and read the witness."""
    from trainrecord.errors import RecordRefused
    from trainrecord.foundry import read_witness
    from trainrecord_conformance.checks.foundry import _vector_witness

    witness = _vector_witness()
    path = tmp_path / f"observed.attempt{witness['attempt']}.json"
    path.write_text(json.dumps(witness), encoding="utf-8")
    read_witness(path)
    assert "witness" in harness.run("read_witness", path=str(path))
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    with pytest.raises(RecordRefused) as exc:
        read_witness(path)
    assert {p.rule for p in exc.value.problems} == {"witness.file.json"}
    assert harness.run("read_witness", path=str(path)) == {
        "refused": True,
        "rules": ["witness.file.json"],
    }


@pytest.mark.parametrize("status", ["in progress", "stopped", "interrupted", "complete"])
def test_report_status_of_a_word_set_as_python(
    harness: Harness, tls: tuple[str, Any], servers: list[TestServer], status: str
) -> None:
    """report.consistency.words_done: a snapshot of an unfinished word set has words_done
    and fraction null (§5.3), a complete one keeps them, in Python's report_status() and
    Node's alike (both copied the job's words_done before)."""
    from trainrecord_conformance import operations as python_ops
    from trainrecord_conformance.checks.payload import base_state

    ca, context = tls
    server = TestServer(Behaviour(), context)
    servers.append(server)
    report = next(r for r in _vector_reports() if r["kind"] == "wordset")
    state = {**base_state(report), "running": status == "in progress"}
    if status == "complete":
        state["finished_at"] = state["started_at"]
    sent = {"url": server.url + "/api/runs", "token": TOKEN, "state": state, "status": status}
    assert python_ops.report_status({**sent, "ca_file": ca})["raised"] is False
    assert harness.run("report_status", **sent, ca_file=ca)["raised"] is False
    python, node = (json.loads(r.body)["progress"] for r in server.requests[-2:])
    done = state["words_done"] if status == "complete" else None
    fraction = round(done / state["words_total"], 4) if done is not None else None
    wanted = {"words_done": done, "words_total": state["words_total"], "fraction": fraction}
    assert (python, node) == (wanted, wanted)


@pytest.fixture(scope="module")
def receivers(
    harness: Harness, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, tuple[str, int]]]:
    """The Python reference receiver and the Node one (the harness's serve): host, port."""
    from urllib.parse import urlsplit

    from trainrecord.report import ReportStore, make_server

    folder = tmp_path_factory.mktemp("receivers")
    python = make_server("127.0.0.1", 0, token=TOKEN, store=ReportStore(folder / "r.sqlite"))
    python.serve_in_thread()
    node = urlsplit(harness.run("serve", dir=str(folder / "node"), token=TOKEN)["url"])
    try:
        yield {
            "python": ("127.0.0.1", python.server_address[1]),
            "node": (node.hostname, node.port),
        }
    finally:
        python.close()


def _raw(address: tuple[str, int], head: str, body: bytes = b"") -> tuple[int, Any]:
    """One request written byte for byte on a fresh connection: (status, JSON body)."""
    import socket

    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n" + body)
        raw = b""
        while chunk := sock.recv(65536):
            raw += chunk
            if b"\r\n\r\n" in raw:
                top, _, rest = raw.partition(b"\r\n\r\n")
                length = [
                    int(line.split(b":", 1)[1])
                    for line in top.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ]
                if length and len(rest) >= length[0]:
                    break
    top, _, rest = raw.partition(b"\r\n\r\n")
    return int(top.split(b" ", 2)[1]), json.loads(rest) if rest else None


def _head(
    auth: str | None = f"Bearer {TOKEN}", length: str | None = None, body: bytes = b""
) -> str:
    lines = ["POST /api/runs HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    if auth is not None:
        lines.append(f"Authorization: {auth}")
    lines.append(f"Content-Length: {len(body) if length is None else length}")
    return "\r\n".join(lines) + "\r\n"


RAW_CASES = [
    ("trailing space", _head(f"Bearer {TOKEN} "), (200,)),
    ("trailing tab", _head(f"Bearer {TOKEN}\t"), (200,)),
    ("huge length", _head(length="99999999999999999999999"), (413,)),
    ("length past 2**64", _head(length=str(2**64)), (413,)),
    ("huge length, no token", _head(None, length="99999999999999999999999"), (401,)),
    ("length not a number", _head(length="abc"), (400,)),
]


@pytest.mark.parametrize(("case", "head", "wanted"), RAW_CASES, ids=[c[0] for c in RAW_CASES])
def test_the_receivers_answer_alike(
    receivers: dict[str, tuple[str, int]], case: str, head: str, wanted: tuple[int]
) -> None:
    """spec/README.md, Receiver: white space after the token is not part of the header
    (RFC 9110; Python answered 401, Node 200); a Content-Length over the limit is 413
    however large (Node's parser refused one past 2**64 - 1 with an empty 400)."""
    body = json.dumps({**_report(), "run_id": str(uuid.uuid4())}).encode()
    if "length" in case:
        body = b""
    else:
        head = head.replace("Content-Length: 0", f"Content-Length: {len(body)}")
    got = {name: _raw(address, head, body) for name, address in receivers.items()}
    assert got["python"][0] == got["node"][0] == wanted[0], got
    assert got["python"][1] == got["node"][1], got


@pytest.mark.parametrize(
    "doc", [{"schema": 2, "kind": "x"}, [], {"schema": 2}, {"schema": 2, "kind": "x", "seq": "a"}]
)
def test_the_422_lists_each_problem_once_kind_first(
    receivers: dict[str, tuple[str, int]], doc: Any
) -> None:
    """spec/README.md: without a known kind its problem is listed first (the receiver's 422
    too) and each broken field once. Node listed every missing field three times (once per
    oneOf branch) and report.kind.unknown 17th."""
    body = json.dumps(doc).encode()
    got = {}
    for name, address in receivers.items():
        status, answer = _raw(address, _head(body=body), body)
        assert status == 422, (name, answer)
        got[name] = [(p["rule"], p["path"]) for p in answer["problems"]]
    assert got["node"] == got["python"]
    assert len(set(map(str, got["node"]))) == len(got["node"])
    if isinstance(doc, dict):
        assert got["node"][0] == (
            ("report.kind.unknown", ["kind"])
            if "kind" in doc
            else ("report.fields.missing", ["kind"])
        )


def test_node_progress_goes_out_at_most_once_every_every_seconds(tmp_path: Path) -> None:
    """§3: progress at most once every every seconds. Node's Reporter took progress({force:
    true}) and queued a report on every call; the option is gone (ignored if passed)."""
    import subprocess

    from tests.typescript.node_harness import NODE_IMPL, require_node

    script = """
const { Reporter } = require("./lib/reporter");
const { reportSettings } = require("./lib/settings");
const { jobState } = require("./lib/payload");
const settings = reportSettings({ url: "https://127.0.0.1:9/api/runs", every: 0.4, token: "tok-0123456789" });
const state = jobState(require("./lib/pyjson").parse(process.argv[1]));
const r = new Reporter(settings, state, { warn: () => {} });
r.started();
const queued = [];
const start = performance.now();
const tick = () => {
  if (r.progress({ phase: "training", batch: 1, batches: 10, force: true })) queued.push(performance.now());
  if (performance.now() - start < 1200) setTimeout(tick, 10);
  else { console.log(JSON.stringify(queued)); r.close(0).then(() => process.exit(0), () => process.exit(0)); }
};
tick();
"""
    from trainrecord_conformance.checks.payload import base_state

    state = base_state(next(r for r in _vector_reports() if r["kind"] == "lesion"))
    out = subprocess.run(
        [require_node(), "-e", script, json.dumps(state)],
        cwd=NODE_IMPL,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    queued = json.loads(out.stdout.splitlines()[0])
    assert 2 <= len(queued) <= 3, queued
    # at least every seconds apart, measured from outside the call (the gate reads the clock
    # inside it: a busy machine can put a few ms between the two; the ticks are 10 ms apart)
    assert all(b - a >= 390 for a, b in itertools.pairwise(queued)), queued


def test_node_sends_the_bytes_and_headers_python_sends(
    harness: Harness, tls: tuple[str, Any], servers: list[TestServer]
) -> None:
    """spec/README.md, Transport: exactly the three headers plus Host and Content-Length,
    the body compact UTF-8 JSON with text outside ASCII as it is. Node wrote ", "/": "
    separators, \\uXXXX escapes and added Connection: close."""
    from trainrecord.report import encode_report

    ca, context = tls
    server = TestServer(Behaviour(), context)
    servers.append(server)
    report = {**_report(), "name": "naïve ✓ 😀", "host": 'lab\\gpu "01"'}
    url = server.url + "/api/runs"
    assert post_report(settings_for(url, ca=ca), encode_report(report)).ok
    assert harness.run("send_report", url=url, token=TOKEN, report=report, ca_file=ca)["delivered"]
    python, node = server.requests[-2:]
    assert node.body == python.body
    assert b"\\u" not in node.body and "😀".encode() in node.body
    names = {"host", "content-length", "content-type", "authorization", "user-agent"}
    assert {k.lower() for k, _ in python.headers} == names
    assert {k.lower() for k, _ in node.headers} == names


def test_the_ca_variables_are_read_and_checked_alike(
    harness: Harness, tls: tuple[str, Any], servers: list[TestServer], tmp_path: Path
) -> None:
    """spec/README.md, Settings: without ca_bundle, REQUESTS_CA_BUNDLE (else CURL_CA_BUNDLE)
    from the environment load_settings is given names the CAs to trust; one naming no file
    or folder is refused (report.settings.ca_bundle). Node ignored both variables."""
    import subprocess

    from tests.typescript.node_harness import NODE_IMPL, require_node
    from trainrecord.errors import RecordRefused
    from trainrecord.report import load_settings

    ca, context = tls
    server = TestServer(Behaviour(), context)
    servers.append(server)
    toml = tmp_path / "paths.toml"
    toml.write_text(f'[report]\nurl = "{server.url}/api/runs"\n', encoding="utf-8")
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        env = {"CORREAD_REPORT_TOKEN": TOKEN, name: str(tmp_path / "missing.pem")}
        with pytest.raises(RecordRefused) as exc:
            load_settings(toml, env)
        assert {p.rule for p in exc.value.problems} == {"report.settings.ca_bundle"}
        got = harness.run("load_settings", path=str(toml), env=env)
        assert got == {"refused": True, "rules": ["report.settings.ca_bundle"]}
    env = {"CORREAD_REPORT_TOKEN": TOKEN, "CURL_CA_BUNDLE": ca}
    assert post_report(load_settings(toml, env), b'{"x":1}').ok
    script = """
const { loadSettings } = require("./lib/settings");
const { postReport } = require("./lib/report");
const [toml, env] = [process.argv[1], JSON.parse(process.argv[2])];
postReport(loadSettings(toml, env), Buffer.from('{"x":1}')).then((o) => console.log(JSON.stringify(o)));
"""
    for given in (env, {"CORREAD_REPORT_TOKEN": TOKEN}):
        out = subprocess.run(
            [require_node(), "-e", script, str(toml), json.dumps(given)],
            cwd=NODE_IMPL,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
            env={"PATH": "/usr/bin:/bin"},
        )
        outcome = json.loads(out.stdout)
        trusted = "CURL_CA_BUNDLE" in given
        assert (outcome["ok"], outcome["category"]) == (
            (True, "accepted") if trusted else (False, "tls")
        )
