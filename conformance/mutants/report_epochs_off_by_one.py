"""Mutant: a report builder that counts the epoch in progress as completed."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import build_report

BREAKS = "report.consistency.epochs_completed"


def faulty(data: dict[str, Any]) -> dict[str, Any]:
    """Build, then count one epoch more than history holds."""
    out = build_report(data)
    progress = out["report"]["progress"]
    if "epochs_completed" in progress and data["status"] == "in progress":
        progress["epochs_completed"] += 1
    return out


if __name__ == "__main__":
    run_mutant("report_epochs_off_by_one", {"build_report": faulty})
