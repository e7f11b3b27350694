"""Fixtures of the Node tests: one harness process per test module, and TLS test servers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.report.servers import TestServer
from tests.typescript.node_harness import Harness


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    """The Node implementation's harness program, shared by a module's tests."""
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
