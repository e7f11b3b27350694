"""Mutant: a diary verifier that reads a missing metrics.jsonl as an empty one, so a run_end
whose metrics_sha256 is the SHA-256 of no bytes verifies with no metrics.jsonl at all (the
file deleted, or never copied with the diary). The reference fails it on
diary.metrics.sha256: a run_end names the digest of a file, and a missing file is not an
empty one."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import verify_diary

BREAKS = "diary.metrics.sha256"


def missing_is_empty(data: dict[str, Any]) -> dict[str, Any]:
    """Verify a copy of the folder with an empty metrics.jsonl where there was none."""
    folder = Path(data["dir"])
    metrics = folder / "metrics.jsonl"
    if not folder.is_dir() or metrics.exists() or metrics.is_symlink():
        return verify_diary(data)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "run"
        shutil.copytree(folder, copy, symlinks=True)
        (copy / "metrics.jsonl").write_bytes(b"")
        return verify_diary({**data, "dir": str(copy)})


if __name__ == "__main__":
    run_mutant("verifier_missing_metrics_empty", {"verify_diary": missing_is_empty})
