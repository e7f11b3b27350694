"""Mutant: a reporting client that keeps a ``requests`` session's default headers: besides
the three of §2 (which it sets right) every report carries ``Accept: */*`` and
``Connection: keep-alive``, as a session does unless its headers are cleared. spec/README:
exactly the three headers, plus Host and Content-Length."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.report import transport
from trainrecord_conformance.operations import send_report

BREAKS = "report.transport.headers"

_new_session = transport.new_session


def session_with_defaults() -> Any:
    """The reference session, its default headers back."""
    import requests

    session = _new_session()
    session.headers.update(requests.utils.default_headers())
    return session


if __name__ == "__main__":
    transport.new_session = session_with_defaults  # type: ignore[assignment]
    run_mutant("client_default_headers", {"send_report": send_report})
