"""Mutant: a witness writer that drops the sign of FOUNDRY_RUN_ID (a negative run id is written positive)."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant, witness_edited

BREAKS = "witness.write.fields"


def unsigned(witness: dict[str, Any], data: dict[str, Any]) -> None:
    witness["experiment_id"] = abs(witness["experiment_id"])


if __name__ == "__main__":
    run_mutant("witness_run_id_unsigned", {"write_witness": witness_edited(unsigned)})
