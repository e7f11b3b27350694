"""Mutant: a diary verifier that compares hashes by their first 12 hex digits (as ``git``
abbreviates them): a hash or a prev off in a later digit passes."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.canonical import GENESIS, line_hash, loads_strict
from trainrecord_conformance.operations import verify_diary

BREAKS = "diary.chain.hash"
SHOWN = 12


def abbreviated(data: dict[str, Any]) -> dict[str, Any]:
    """Verify as the reference does; a broken hash or prev link whose digests agree in
    their first 12 digits is forgiven."""
    out = verify_diary(data)
    if out["rules"] not in (["diary.chain.hash"], ["diary.chain.prev"]):
        return out
    prev = GENESIS
    for text in (Path(data["dir"]) / "diary.jsonl").read_text(encoding="utf-8").splitlines():
        line = loads_strict(text)
        body = {k: v for k, v in line.items() if k not in ("prev", "hash")}
        if line["prev"][:SHOWN] != prev[:SHOWN]:
            return out
        if line["hash"][:SHOWN] != line_hash(line["prev"], body)[:SHOWN]:
            return out
        prev = line["hash"]
    return {"ok": True, "status": "ok", "rules": [], "line": None}


if __name__ == "__main__":
    run_mutant("verifier_short_digest", {"verify_diary": abbreviated})
