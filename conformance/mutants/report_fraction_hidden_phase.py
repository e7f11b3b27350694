"""Mutant: a report builder whose fraction counts the share of the current epoch from the
job's state whenever the state says the job runs, also in a report that shows no phase (a
``report_status()`` snapshot of a run in progress, or a failed or complete report built
while the state still says it runs): a snapshot of a job 7 batches of 100 into its
training phase sends (epochs_completed + 0.0665) / epochs_total where its phase, batch and
batches are null. spec/README: fraction is derived from the report's own progress fields,
so a reader can recompute it; the share counts only where the report shows the phase."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.report.payload import LESION_PHASES, TRAINING_PHASES
from trainrecord_conformance.operations import build_report

BREAKS = "report.consistency.fraction"


def _share(state: dict[str, Any]) -> float:
    """The part of the current epoch the state's phase, batch and batches give."""
    phases = LESION_PHASES if state["kind"] == "lesion" else TRAINING_PHASES
    start, weight = phases.get(str(state.get("phase")), (0.0, 0.0))
    batch, batches = state.get("batch"), state.get("batches")
    within = min(1.0, max(0.0, batch / batches)) if batch is not None and batches else 0.0
    return start + weight * within


def hidden_phase_fraction(data: dict[str, Any]) -> dict[str, Any]:
    """Build as the reference does, then count the state's phase in the fraction whenever
    the state says the job runs (the builder before the fix)."""
    out = build_report(data)
    report, state = out["report"], data["state"]
    total = state.get("epochs_total")
    if report["kind"] != "wordset" and state.get("running") and total:
        done = len(state.get("history") or []) + _share(state)
        report["progress"]["fraction"] = round(min(1.0, max(0.0, done / total)), 4)
    return out


if __name__ == "__main__":
    run_mutant("report_fraction_hidden_phase", {"build_report": hidden_phase_fraction})
