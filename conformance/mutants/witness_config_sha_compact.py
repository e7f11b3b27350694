"""Mutant: a witness writer that hashes the configuration's compact JSON (no spaces, the diary's form) for config_sha, while its config_hash operation is right."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import write_witness

BREAKS = "canonical.config"


def edited(data: dict[str, Any]) -> dict[str, Any]:
    """Write the witness, then replace it with what the faulty writer would have written."""
    out = write_witness(data)
    if out["path"] is None:
        return out
    with open(out["path"], encoding="utf-8") as f:
        witness = json.load(f)
    witness["config_sha"] = hashlib.sha256(
        json.dumps(data["config"], sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()[:16]
    with open(out["path"] + ".tmp", "w", encoding="utf-8") as f:
        f.write(json.dumps(witness, ensure_ascii=False, indent=2) + "\n")
    os.replace(out["path"] + ".tmp", out["path"])  # whole, as a reader may be looking
    return out


if __name__ == "__main__":
    run_mutant("witness_config_sha_compact", {"write_witness": edited})
