"""Mutant: a sealer that seals without verifying the record first."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.diary import write_seal

BREAKS = "seal.verify"


def faulty(data: dict[str, Any]) -> dict[str, Any]:
    """Seal straight away."""
    return {"seal": write_seal(data["dir"], signing_key=data.get("key"), verify_first=False)}


if __name__ == "__main__":
    run_mutant("seal_unverified", {"seal": faulty})
