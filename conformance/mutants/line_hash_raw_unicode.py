"""Mutant: a line hash over JSON that writes non-ASCII raw (ensure_ascii=False, like orjson)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

BREAKS = "canonical.line"


def raw(data: dict[str, Any]) -> dict[str, Any]:
    """json.dumps(..., ensure_ascii=False)."""
    text = json.dumps(data["body"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256((data["prev"] + text).encode("utf-8", "surrogatepass")).hexdigest()
    return {"canonical": text, "hash": digest}


if __name__ == "__main__":
    run_mutant("line_hash_raw_unicode", {"line_hash": raw})
