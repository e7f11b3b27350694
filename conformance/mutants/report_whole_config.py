"""Mutant: a report builder that sends the job's whole configuration (seeds, git details ...)."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import build_report

BREAKS = "report.privacy.fields"


def faulty(data: dict[str, Any]) -> dict[str, Any]:
    """Build, then add every config field the job has."""
    out = build_report(data)
    out["report"]["config"] = {**data["state"]["config"], **out["report"]["config"]}
    return out


if __name__ == "__main__":
    run_mutant("report_whole_config", {"build_report": faulty})
