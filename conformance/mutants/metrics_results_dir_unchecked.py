"""Mutant: a metrics writer without the results_dir check: a results_dir that is (or sits
under) a file is not refused with metrics.path.results_dir; creating the folder then fails
with a bare OS error, which the harness answers as ``error``: the implementation crashed,
so the suite reports the rule as ERROR (KILLED_AS), not as a rule failure."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.foundry import files
from trainrecord_conformance.operations import write_metrics

BREAKS = "metrics.path.results_dir"
KILLED_AS = "error"


def unchecked(data: dict[str, Any]) -> dict[str, Any]:
    """write_metrics with files.check_folder made a no-op."""
    check, files.check_folder = files.check_folder, lambda *_: None
    try:
        return write_metrics(data)
    finally:
        files.check_folder = check


if __name__ == "__main__":
    run_mutant("metrics_results_dir_unchecked", {"write_metrics": unchecked})
