"""Mutant: a witness writer that replaces an existing witness instead of refusing."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import write_witness

BREAKS = "witness.path.exists"


def overwriting(data: dict[str, Any]) -> dict[str, Any]:
    """Delete any witness of the attempt first, then write."""
    attempt = data["env"].get("SLURM_RESTART_COUNT", "0").strip() or "0"
    target = os.path.join(data["dir"], f"observed.attempt{attempt}.json")
    if os.path.exists(target):
        os.remove(target)
    return write_witness(data)


if __name__ == "__main__":
    run_mutant("witness_overwrites", {"write_witness": overwriting})
