"""Mutant: a witness writer that parses FOUNDRY_RUN_ID with Python's int() (takes 1_000, ١٢)."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
import contextlib

from _base import run_mutant

from trainrecord_conformance.operations import write_witness

BREAKS = "witness.env.foundry_run_id.integer"


def lenient(data: dict[str, Any]) -> dict[str, Any]:
    """Rewrite FOUNDRY_RUN_ID through int() before the reference writer sees it."""
    env = dict(data["env"])
    with contextlib.suppress(KeyError, ValueError):
        env["FOUNDRY_RUN_ID"] = str(int(env["FOUNDRY_RUN_ID"]))
    return write_witness({**data, "env": env})


if __name__ == "__main__":
    run_mutant("run_id_python_int", {"write_witness": lenient})
