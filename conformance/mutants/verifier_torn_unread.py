"""Mutant: a diary verifier that answers ``torn`` as soon as diary.jsonl's last line has no
newline, without verifying the complete lines before it. A record with a tampered line
and a torn tail then passes as a crash, where the reference fails it on the tampered
line (the rule: "the lines before it still verify")."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import verify_diary

BREAKS = "diary.file.torn"


def torn_first(data: dict[str, Any]) -> dict[str, Any]:
    """A torn tail is the verdict before any line is read; otherwise the reference."""
    path = Path(data["dir"]) / "diary.jsonl"
    if path.is_file() and not path.is_symlink():
        raw = path.read_bytes()
        if raw and not raw.endswith(b"\n"):
            complete = raw.count(b"\n")
            return {"ok": False, "status": "torn", "rules": ["diary.file.torn"], "line": complete}
    return verify_diary(data)


if __name__ == "__main__":
    run_mutant("verifier_torn_unread", {"verify_diary": torn_first})
