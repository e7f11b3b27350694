"""Mutant: a diary writer whose prev is the hash of the line two back (an off-by-one)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.canonical import GENESIS, canonical_line, line_hash

BREAKS = "diary.chain.prev"


def off_by_one(data: dict[str, Any]) -> dict[str, Any]:
    """Write the chain with prev pointing one line too far back."""
    os.makedirs(data["dir"], exist_ok=True)
    path = os.path.join(data["dir"], "diary.jsonl")
    hashes = [GENESIS, GENESIS]
    with open(path, "w", encoding="utf-8") as f:
        for seq, event in enumerate(data["events"]):
            prev = hashes[-2]
            body = {**event, "seq": seq, "time": round(time.time(), 3)}
            digest = line_hash(prev, body)
            f.write(canonical_line({**body, "prev": prev, "hash": digest}) + "\n")
            hashes.append(digest)
    return {"path": path}


if __name__ == "__main__":
    run_mutant("diary_wrong_prev", {"write_diary": off_by_one})
