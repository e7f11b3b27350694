"""Mutant: an architecture fingerprint that writes shapes as compact JSON ([16,3,3,3])
instead of the way Python writes a list ([16, 3, 3, 3])."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

BREAKS = "diary.architecture.text"


def faulty(data: dict[str, Any]) -> dict[str, Any]:
    """name:shape with compact shapes."""
    text = "|".join(f"{n}:{json.dumps(s, separators=(',', ':'))}" for n, s in data["parameters"])
    return {"text": text, "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}


if __name__ == "__main__":
    run_mutant("architecture_compact", {"architecture": faulty})
