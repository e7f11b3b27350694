"""Mutant: a witness writer that drops the sign of FOUNDRY_RUN_ID (a negative run id is written positive)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import write_witness

BREAKS = "witness.write.fields"


def edited(data: dict[str, Any]) -> dict[str, Any]:
    """Write the witness, then replace it with what the faulty writer would have written."""
    out = write_witness(data)
    if out["path"] is None:
        return out
    with open(out["path"], encoding="utf-8") as f:
        witness = json.load(f)
    witness["experiment_id"] = abs(witness["experiment_id"])
    with open(out["path"] + ".tmp", "w", encoding="utf-8") as f:
        f.write(json.dumps(witness, ensure_ascii=False, indent=2) + "\n")
    os.replace(out["path"] + ".tmp", out["path"])  # whole, as a reader may be looking
    return out


if __name__ == "__main__":
    run_mutant("witness_run_id_unsigned", {"write_witness": edited})
