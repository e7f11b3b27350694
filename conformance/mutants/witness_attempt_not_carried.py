"""Mutant: a witness writer that names the file after SLURM_RESTART_COUNT but writes attempt 0 into it."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant, witness_edited

BREAKS = "witness.attempt.filename"


def attempt_zero(witness: dict[str, Any], data: dict[str, Any]) -> None:
    witness["attempt"] = 0


if __name__ == "__main__":
    run_mutant("witness_attempt_not_carried", {"write_witness": witness_edited(attempt_zero)})
