"""Mutant: a report builder that copies the job's words_done (and its fraction) into every
word set report, also into a snapshot of an unfinished set, where §5.3 says it is null."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import build_report

BREAKS = "report.consistency.words_done"


def keeps_words_done(data: dict[str, Any]) -> dict[str, Any]:
    """Build as the reference does, then put the job's words_done back."""
    out = build_report(data)
    report, state = out["report"], data["state"]
    if report["kind"] == "wordset" and state.get("words_done") is not None:
        done, total = state["words_done"], state.get("words_total")
        fraction = round(min(1.0, done / total), 4) if total else None
        report["progress"] = {**report["progress"], "words_done": done, "fraction": fraction}
    return out


if __name__ == "__main__":
    run_mutant("report_snapshot_words_done", {"build_report": keeps_words_done})
