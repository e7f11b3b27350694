"""Mutant: a metrics writer with json.dumps's default ensure_ascii=True: text outside
ASCII is written as \\uXXXX escapes (a surrogate pair beyond the BMP). The file reads back
the same, so every content check passes; spec/README.md says non-ASCII is written as is."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.foundry import metrics

BREAKS = "metrics.write.non_ascii"


def escaping(obj: Any, *, indent: int | None = None) -> str:
    """Strict JSON with every character outside ASCII escaped."""
    return json.dumps(obj, indent=indent, allow_nan=False)


if __name__ == "__main__":
    metrics.dumps_strict = escaping
    run_mutant("metrics_ascii_escaped", {})
