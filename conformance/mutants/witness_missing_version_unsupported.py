"""Mutant: a witness reader that takes a witness without run_record_format for another
version (witness.run_record_format.unsupported) instead of a version 1 witness missing a
field (witness.fields.missing)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.errors import RecordRefused
from trainrecord_conformance.operations import read_witness

BREAKS = "witness.run_record_format.unsupported"


def absent_is_unsupported(data: dict[str, Any]) -> dict[str, Any]:
    """No run_record_format: refused as an unsupported version, nothing else."""
    try:
        with open(data["path"], encoding="utf-8") as f:
            witness = json.load(f)
    except (OSError, ValueError):
        witness = None
    if isinstance(witness, dict) and "run_record_format" not in witness:
        raise RecordRefused.one(
            "witness.run_record_format.unsupported", ("run_record_format",), "no version"
        )
    return read_witness(data)


if __name__ == "__main__":
    run_mutant("witness_missing_version_unsupported", {"read_witness": absent_is_unsupported})
