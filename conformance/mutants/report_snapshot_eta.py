"""Mutant: a report builder that estimates the time left in a snapshot too (a
``report_status()`` of a run recorded as in progress, from another process): its
eta_seconds is the mean history duration times the epochs left, or the time per word
since the job started times the words left. spec/README: eta_seconds is null in every
snapshot, since only the training process knows it."""

from __future__ import annotations

import os
import sys
from datetime import datetime
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import build_report

BREAKS = "report.consistency.eta"


def _estimate(state: dict[str, Any], sent_at: str) -> int | None:
    if state["kind"] == "wordset":
        done, total = state.get("words_done"), state.get("words_total")
        if not done or total is None or not state.get("started_at"):
            return None
        spent = (
            datetime.fromisoformat(sent_at) - datetime.fromisoformat(state["started_at"])
        ).total_seconds()
        return max(0, round(spent / done * max(0, total - done)))
    history = state.get("history") or []
    durations = [e["duration_seconds"] for e in history if e.get("duration_seconds") is not None]
    if not durations or state.get("epochs_total") is None:
        return None
    return max(0, round((state["epochs_total"] - len(history)) * sum(durations) / len(durations)))


def snapshot_eta(data: dict[str, Any]) -> dict[str, Any]:
    """Build as the reference does, then give an in-progress snapshot an estimate."""
    out = build_report(data)
    report = out["report"]
    if report["event"] == "snapshot" and report["status"] == "in progress":
        report["eta_seconds"] = _estimate(data["state"], data["sent_at"])
    return out


if __name__ == "__main__":
    run_mutant("report_snapshot_eta", {"build_report": snapshot_eta})
