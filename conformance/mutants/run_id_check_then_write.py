"""Mutant: a job that looks for metadata.json and, when there is none, writes one with
replace instead of creating it exclusively: processes starting one folder at once each
write their own run_id (the window between look and write is a slow disk's 50 ms)."""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.foundry import files
from trainrecord_conformance.operations import open_run

BREAKS = "report.run_id.one_winner"


def look_then_write(data: dict[str, Any]) -> dict[str, Any]:
    """Check, wait, write: the classic lost race."""
    folder = Path(data["dir"])
    target = folder / "metadata.json"
    if target.exists():
        return open_run(data)
    time.sleep(0.05)
    folder.mkdir(parents=True, exist_ok=True)
    record = {"run_id": str(uuid.uuid4()), **(data.get("metadata") or {})}
    files.replace(target, json.dumps(record).encode("utf-8"))
    return {"run_id": record["run_id"], "created": True}


if __name__ == "__main__":
    run_mutant("run_id_check_then_write", {"open_run": look_then_write})
