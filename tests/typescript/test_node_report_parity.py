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

import json
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


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    h = Harness()
    yield h
    h.close()


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any]:
    """(CA file, server TLS context) for 127.0.0.1."""
    import ssl

    import trustme

    folder = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    return str(folder / "ca.pem"), context


@pytest.fixture
def servers() -> Iterator[list[TestServer]]:
    started: list[TestServer] = []
    yield started
    for server in started:
        server.stop()


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
