"""Mutant: a config hash over compact JSON (no spaces), the diary's form instead of Foundry's."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

BREAKS = "canonical.config"


def compact(data: dict[str, Any]) -> dict[str, Any]:
    """json.dumps with separators=(",", ":")."""
    text = json.dumps(data["config"], sort_keys=True, separators=(",", ":"))
    return {"canonical": text, "config_sha": hashlib.sha256(text.encode()).hexdigest()[:16]}


if __name__ == "__main__":
    run_mutant("config_hash_compact", {"config_hash": compact})
