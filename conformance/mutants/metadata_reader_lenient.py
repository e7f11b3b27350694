"""Mutant: a job that reads metadata.json with a lenient parser (NaN, Infinity and a name
twice accepted) and starts afresh over a file it cannot parse at all."""

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
from trainrecord_conformance.operations import open_run

BREAKS = "report.metadata.json"


def lenient(data: dict[str, Any]) -> dict[str, Any]:
    """json.loads instead of a strict reader; garbage is replaced by a new run."""
    target = Path(data["dir"]) / "metadata.json"
    if not target.exists():
        return open_run(data)
    try:
        stored = json.loads(target.read_bytes())
    except ValueError:
        stored = None
    if not isinstance(stored, dict):
        record = {"run_id": str(uuid.uuid4())}
        files.replace(target, json.dumps(record).encode("utf-8"))
        return {"run_id": record["run_id"], "created": True}
    if "run_id" in stored:
        return {"run_id": str(stored["run_id"]), "created": False}
    return open_run(data)


if __name__ == "__main__":
    run_mutant("metadata_reader_lenient", {"open_run": lenient})
