"""Mutant: a reporting receiver that takes everything after ``Bearer `` as the token, white
space after it included, so ``Authorization: Bearer <token> `` (a trailing space, which
RFC 9110 says is not part of the field value) is answered 401."""

from __future__ import annotations

import hmac
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.report.receiver import ReportHandler
from trainrecord_conformance.operations import serve

BREAKS = "report.server.auth"


def exact(self: ReportHandler) -> bool:
    """The header's value as it arrived, trailing white space kept."""
    scheme, _, credentials = (self.headers.get("Authorization") or "").partition(" ")
    given = credentials.lstrip(" ").encode("utf-8", "replace")
    if hmac.compare_digest(given, self.server.expected) and scheme.lower() == "bearer":
        return True
    self._send(401, {"ok": False, "error": "bad or missing bearer token"}, close=True)
    return False


def strict(data: dict[str, Any]) -> dict[str, Any]:
    """The reference receiver with the exact-header token comparison."""
    ReportHandler._authorised = exact  # type: ignore[method-assign]
    return serve(data)


if __name__ == "__main__":
    run_mutant("server_auth_exact_header", {"serve": strict})
