"""Mutant: a report_status() that returns quietly when the report does not get through."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import report_status

BREAKS = "report.transport.snapshot_raises"


def faulty(data: dict[str, Any]) -> dict[str, Any]:
    """Send; never say it failed."""
    out = report_status(data)
    return {**out, "raised": False, "message": ""}


if __name__ == "__main__":
    run_mutant("status_swallows", {"report_status": faulty})
