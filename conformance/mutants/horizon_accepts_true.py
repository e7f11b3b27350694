"""Mutant: a metrics writer that accepts ``true`` (and other booleans) as a horizon."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import write_metrics

BREAKS = "metrics.horizon.type"


def lenient(data: dict[str, Any]) -> dict[str, Any]:
    """Write rows whose only fault is a boolean horizon as they are."""
    rows = data["rows"]
    if isinstance(rows, list) and any(
        isinstance(r, dict) and isinstance(r.get("horizon"), bool) for r in rows
    ):
        fixed = [
            {**r, "horizon": int(r["horizon"])}
            if isinstance(r, dict) and isinstance(r.get("horizon"), bool)
            else r
            for r in rows
        ]
        write_metrics({**data, "rows": fixed})
        path = os.path.join(data["dir"], "metrics.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(rows, f)
        return {"path": path}
    return write_metrics(data)


if __name__ == "__main__":
    run_mutant("horizon_accepts_true", {"write_metrics": lenient})
