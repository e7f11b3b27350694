"""Subcommands of the ``trainrecord`` command line, one module each (see ``trainrecord.cli``)."""

from __future__ import annotations

import re

_ROLE = re.compile(r":[a-z]+:`([^`]*)`")


def plain(doc: str | None) -> str:
    """A module docstring as ``--help`` text: its reStructuredText markup removed
    (````x```` and ``:mod:`x``` become ``x``), its layout kept."""
    return _ROLE.sub(r"\1", doc or "").replace("``", "").strip() + "\n"
