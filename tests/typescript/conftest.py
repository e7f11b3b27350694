"""Fixtures of the Node tests: one harness process per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.typescript.node_harness import Harness


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    """The Node implementation's harness program, shared by a module's tests."""
    h = Harness()
    yield h
    h.close()
