"""Mutant: a diary verifier that reads diary.jsonl with ``splitlines()``: a last line that
parses counts as complete even without its newline, so a tail cut exactly before its line
break is no torn tail."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.canonical import loads_strict
from trainrecord_conformance.operations import verify_diary

BREAKS = "diary.file.torn"


def lenient(data: dict[str, Any]) -> dict[str, Any]:
    """Verify as the reference does; a torn tail whose last line parses is verified as if
    its newline were there."""
    out = verify_diary(data)
    path = Path(data["dir"]) / "diary.jsonl"
    text = path.read_text(encoding="utf-8", errors="replace")
    if out["rules"] != ["diary.file.torn"] or not text or text.endswith("\n"):
        return out
    try:
        loads_strict(text.rsplit("\n", 1)[-1])
    except ValueError:
        return out
    with tempfile.TemporaryDirectory() as copy:
        shutil.copytree(data["dir"], copy, dirs_exist_ok=True)
        with open(Path(copy) / "diary.jsonl", "a", encoding="utf-8") as f:
            f.write("\n")
        return verify_diary({**data, "dir": copy})


if __name__ == "__main__":
    run_mutant("verifier_newline_optional", {"verify_diary": lenient})
