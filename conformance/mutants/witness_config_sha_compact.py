"""Mutant: a witness writer that hashes the configuration's compact JSON (no spaces, the diary's form) for config_sha, while its config_hash operation is right."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant, witness_edited

BREAKS = "canonical.config"


def compact_sha(witness: dict[str, Any], data: dict[str, Any]) -> None:
    witness["config_sha"] = hashlib.sha256(
        json.dumps(data["config"], sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()[:16]


if __name__ == "__main__":
    run_mutant("witness_config_sha_compact", {"write_witness": witness_edited(compact_sha)})
