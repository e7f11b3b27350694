"""Mutant: a report_status() that raises with the start of the server's answer as it came,
so a server or proxy echoing the Authorization header puts the token into the message (as
the client did before the answer was scrubbed)."""

from __future__ import annotations

import os
import sys
from typing import Any
from unittest import mock

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import report_status

BREAKS = "report.transport.snapshot_raises"


def unscrubbed(data: dict[str, Any]) -> dict[str, Any]:
    """Send; keep the answer's start unscrubbed."""
    with mock.patch("trainrecord.report.transport.scrub_token", lambda text, token: text):
        return report_status(data)


if __name__ == "__main__":
    run_mutant("status_echo_unscrubbed", {"report_status": unscrubbed})
