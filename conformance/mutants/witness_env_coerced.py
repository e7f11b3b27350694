"""Mutant: a witness writer that turns every environment value into text (``str(v)``)
instead of refusing one that is not text, as a lenient reader of the environment might."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import write_witness

BREAKS = "witness.env.type"


def coercing(data: dict[str, Any]) -> dict[str, Any]:
    """Write with ``{name: str(value)}`` for the given environment."""
    return write_witness({**data, "env": {k: str(v) for k, v in data["env"].items()}})


if __name__ == "__main__":
    run_mutant("witness_env_coerced", {"write_witness": coercing})
