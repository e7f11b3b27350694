"""Mutant: a witness writer that refuses the whole environment when any value in it is
not text, also variables it never reads (PATH=None beside a valid FOUNDRY_RUN_ID)."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.errors import RecordRefused
from trainrecord_conformance.operations import write_witness

BREAKS = "witness.env.type"


def all_text(data: dict[str, Any]) -> dict[str, Any]:
    """Every value of env must be text, read or not."""
    for name, value in data["env"].items():
        if not isinstance(value, str):
            raise RecordRefused.one("witness.env.type", (name,), "must be text", value)
    return write_witness(data)


if __name__ == "__main__":
    run_mutant("witness_env_all_text", {"write_witness": all_text})
