"""Mutant: a reporting receiver whose HTTP parser holds a Content-Length in 64 bits and
answers 400 to a longer one (as node:http did) instead of 413."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.report.receiver import ReportHandler
from trainrecord_conformance.operations import serve

BREAKS = "report.server.too_large"
reference_post = ReportHandler.do_POST


def overflowing(self: ReportHandler) -> None:
    """400 for a Content-Length past 2**64 - 1, the reference otherwise."""
    length = self.headers.get("Content-Length") or ""
    if length.isdigit() and int(length) >= 2**64:
        self._send(400, {"ok": False, "error": "bad request"}, close=True)
        return
    reference_post(self)


def parser_64(data: dict[str, Any]) -> dict[str, Any]:
    """The reference receiver behind a 64-bit Content-Length parser."""
    ReportHandler.do_POST = overflowing  # type: ignore[method-assign]
    return serve(data)


if __name__ == "__main__":
    run_mutant("server_length_overflow", {"serve": parser_64})
