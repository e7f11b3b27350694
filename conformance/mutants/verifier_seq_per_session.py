"""Mutant: a diary verifier that counts seq per session: a run_start whose seq is 0 starts
the count again, so a resumed session numbered from 0 (its prev chained on correctly)
verifies. The seed's seq runs "from 0, contiguous" over the whole file; a resume continues
it, and the reference fails the resumed run_start on diary.chain.seq.

It verifies as the reference does; when that fails on seq at a run_start with seq 0, it
verifies instead a copy of the folder in which each later line whose own hash and prev
check out is renumbered to its place in the file (and re-hashed), so every other check
still runs on the rest of the record."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.canonical import canonical_line, line_hash
from trainrecord_conformance.operations import verify_diary

BREAKS = "diary.chain.seq"


def _renumbered(raw: list[bytes], k: int) -> list[bytes]:
    """The complete lines from ``k`` on, each renumbered from the last run_start with seq 0
    as if seq had continued, prev and hash recomputed, up to the first line whose own
    prev or hash is wrong (that one and the rest are left as they are)."""
    out = list(raw[:k])
    given = made = json.loads(raw[k - 1])["hash"]
    offset = 0
    for i in range(k, len(raw)):
        try:
            line = json.loads(raw[i])
            body = {key: v for key, v in line.items() if key not in ("prev", "hash")}
            sound = line["prev"] == given and line["hash"] == line_hash(given, body)
        except (ValueError, TypeError, KeyError, AttributeError):
            sound = False
        if not sound:
            return out + list(raw[i:])
        if body.get("event") == "run_start" and body.get("seq") == 0:
            offset = i
        given = line["hash"]
        body["seq"] = body["seq"] + offset
        made_now = line_hash(made, body)
        out.append(canonical_line({**body, "prev": made, "hash": made_now}).encode())
        made = made_now
    return out


def per_session(data: dict[str, Any]) -> dict[str, Any]:
    """The reference's verdict, unless it is a seq restarted at 0 on a later run_start."""
    out = verify_diary(data)
    k = out["line"]
    if out["rules"] != ["diary.chain.seq"] or not k:
        return out
    folder = Path(data["dir"])
    text = (folder / "diary.jsonl").read_bytes()
    raw = text.split(b"\n")
    try:
        line = json.loads(raw[k])
    except ValueError:
        return out
    if line.get("event") != "run_start" or line.get("seq") != 0:
        return out
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "run"
        shutil.copytree(folder, copy, symlinks=True)
        complete, tail = raw[:-1], raw[-1]
        fixed = _renumbered(complete, k)
        (copy / "diary.jsonl").write_bytes(b"".join(x + b"\n" for x in fixed) + tail)
        return verify_diary({**data, "dir": str(copy)})


if __name__ == "__main__":
    run_mutant("verifier_seq_per_session", {"verify_diary": per_session})
