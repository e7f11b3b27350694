"""Mutant: a witness writer that leaves cpu_threads out of the witness of a resumed attempt (SLURM_RESTART_COUNT above 0)."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant, witness_edited

BREAKS = "witness.fields.missing"


def drop_on_resume(witness: dict[str, Any], data: dict[str, Any]) -> None:
    if witness["attempt"] > 0:
        del witness["cpu_threads"]


if __name__ == "__main__":
    run_mutant("witness_drops_field_on_resume", {"write_witness": witness_edited(drop_on_resume)})
