"""Checks for the server rules (being written)."""

from __future__ import annotations

from trainrecord_conformance.checks.base import Check


def checks() -> list[Check]:
    """None yet."""
    return []
