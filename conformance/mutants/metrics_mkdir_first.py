"""Mutant: a metrics writer that creates the results folder (only the folder) before it
validates the rows: a refused call leaves an empty folder behind."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import write_metrics

BREAKS = "metrics.write.nothing_on_refusal"


def mkdir_first(data: dict[str, Any]) -> dict[str, Any]:
    """os.makedirs(dir) first, then validate and write."""
    if not os.path.lexists(data["dir"]):
        os.makedirs(data["dir"])
    return write_metrics(data)


if __name__ == "__main__":
    run_mutant("metrics_mkdir_first", {"write_metrics": mkdir_first})
