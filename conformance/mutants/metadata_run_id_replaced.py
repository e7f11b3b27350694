"""Mutant: a job that replaces a stored run_id it cannot read as a UUID with a new one,
silently turning the run into another run, instead of refusing."""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.foundry import files
from trainrecord.report.run_folder import is_run_id
from trainrecord_conformance.operations import open_run

BREAKS = "report.metadata.run_id"


def replacing(data: dict[str, Any]) -> dict[str, Any]:
    """Overwrite a bad run_id, then open as the reference does."""
    target = Path(data["dir"]) / "metadata.json"
    try:
        stored = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stored = None
    if isinstance(stored, dict) and "run_id" in stored and not is_run_id(stored["run_id"]):
        files.replace(target, json.dumps({**stored, "run_id": str(uuid.uuid4())}).encode())
    return open_run(data)


if __name__ == "__main__":
    run_mutant("metadata_run_id_replaced", {"open_run": replacing})
