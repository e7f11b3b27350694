"""Mutant: a report builder that sends the job's error message as raised, unscrubbed."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import build_report

BREAKS = "report.privacy.secrets"


def faulty(data: dict[str, Any]) -> dict[str, Any]:
    """Build, then put the raw error back."""
    out = build_report(data)
    if out["report"]["error"] is not None:
        out["report"]["error"] = dict(data["state"]["error"])
    return out


if __name__ == "__main__":
    run_mutant("report_raw_error", {"build_report": faulty})
