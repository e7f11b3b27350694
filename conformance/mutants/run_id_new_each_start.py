"""Mutant: a job that writes a new run_id into metadata.json at every start, so a resumed
run becomes another run on the dashboard (its other fields are kept)."""

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

BREAKS = "report.run_id.stable"


def every_start_new(data: dict[str, Any]) -> dict[str, Any]:
    """Read what is there, then store a fresh run_id over it."""
    folder = Path(data["dir"])
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "metadata.json"
    stored = json.loads(target.read_text(encoding="utf-8")) if target.exists() else {}
    record = {**stored, **(data.get("metadata") or {}), "run_id": str(uuid.uuid4())}
    files.replace(target, json.dumps(record).encode("utf-8"))
    return {"run_id": record["run_id"], "created": True}


if __name__ == "__main__":
    run_mutant("run_id_new_each_start", {"open_run": every_start_new})
