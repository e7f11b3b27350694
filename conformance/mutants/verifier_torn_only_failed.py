"""Mutant: a diary verifier that calls a diary holding only a torn line (no complete line:
a crash while the first line was written) ``failed``, not ``torn``, as the Node verifier
did. It names the rule diary.file.torn and the line the reference names; only the status
differs."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import verify_diary

BREAKS = "diary.file.torn"


def no_line_failed(data: dict[str, Any]) -> dict[str, Any]:
    """Verify as the reference does; a torn tail without a complete line before it fails."""
    out = verify_diary(data)
    path = Path(data["dir"]) / "diary.jsonl"
    if out["status"] == "torn" and path.is_file() and b"\n" not in path.read_bytes():
        return {**out, "status": "failed"}
    return out


if __name__ == "__main__":
    run_mutant("verifier_torn_only_failed", {"verify_diary": no_line_failed})
