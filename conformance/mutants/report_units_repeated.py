"""Mutant: a report builder that orders the lesioned units with sorted() but keeps a unit
given twice (its check compares neighbours with <=): [3, 17, 17, 470] goes out."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import build_report

BREAKS = "report.consistency.lesioned_units"


def faulty(data: dict[str, Any]) -> dict[str, Any]:
    """Build as the reference does, then put the repeated units back."""
    out = build_report(data)
    units = data["state"]["config"].get("lesioned_units")
    if data["state"]["kind"] == "lesion" and isinstance(units, list):
        out["report"]["config"]["lesioned_units"] = sorted(units)
    return out


if __name__ == "__main__":
    run_mutant("report_units_repeated", {"build_report": faulty})
