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

from collections.abc import Iterator
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
