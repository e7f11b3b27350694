"""Mutant: a metrics reader that takes a sibling witness without run_record_format for a
witness of another version (its version is not 1) and refuses the metrics."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.errors import RecordRefused
from trainrecord_conformance.operations import read_metrics

BREAKS = "metrics.read.sibling_version"


def missing_is_other(data: dict[str, Any]) -> dict[str, Any]:
    """A sibling observed.attempt*.json whose run_record_format is absent refuses."""
    for sibling in sorted(Path(data["path"]).parent.glob("observed.attempt*.json")):
        try:
            witness = json.loads(sibling.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(witness, dict) and "run_record_format" not in witness:
            raise RecordRefused.one(
                "metrics.read.sibling_version", (), f"{sibling.name} has no version"
            )
    return read_metrics(data)


if __name__ == "__main__":
    run_mutant("metrics_sibling_missing_version", {"read_metrics": missing_is_other})
