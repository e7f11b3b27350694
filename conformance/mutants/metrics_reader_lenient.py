"""Mutant: a metrics reader that parses with Python's json.load (NaN and Infinity
pass, read as null)."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
import json

from _base import run_mutant

BREAKS = "metrics.file.json"


def faulty(data: dict[str, Any]) -> dict[str, Any]:
    """Parse leniently, return the rows."""
    with open(data["path"], encoding="utf-8", errors="replace") as f:
        rows = json.load(f, parse_constant=lambda _: None)
    return {"rows": rows if isinstance(rows, list) else [rows]}


if __name__ == "__main__":
    run_mutant("metrics_reader_lenient", {"read_metrics": faulty})
