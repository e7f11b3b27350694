"""Mutant: a metrics writer that creates the results folder before validating the rows."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import write_metrics

BREAKS = "metrics.write.nothing_on_refusal"


def eager(data: dict[str, Any]) -> dict[str, Any]:
    """Make the folder and an empty metrics.json, then validate and write."""
    os.makedirs(data["dir"], exist_ok=True)
    with open(os.path.join(data["dir"], "metrics.json"), "w", encoding="utf-8") as f:
        f.write("[]")
    return write_metrics(data)


if __name__ == "__main__":
    run_mutant("metrics_writes_first", {"write_metrics": eager})
