"""Mutant: a witness writer that does not refuse a results_dir that is a file; it deletes
the file in its way and writes the witness into a new folder there."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import write_witness

BREAKS = "witness.path.results_dir"


def clearing(data: dict[str, Any]) -> dict[str, Any]:
    """Remove whatever file stands at the results_dir or above it, then write."""
    part = os.path.abspath(data["dir"])
    while part != os.path.dirname(part):
        if os.path.lexists(part) and not os.path.isdir(part):
            os.remove(part)
            break
        part = os.path.dirname(part)
    return write_witness(data)


if __name__ == "__main__":
    run_mutant("witness_results_dir_unchecked", {"write_witness": clearing})
