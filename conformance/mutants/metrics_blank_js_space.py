"""Mutant: a metrics writer whose blank test is JavaScript's \\s (ECMAScript white space):
it counts U+FEFF as white space and U+001C..U+001F not, so a benchmark " \\ufeff " is
refused as blank and one of U+001C is written."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.errors import RecordRefused
from trainrecord_conformance.operations import write_metrics

BREAKS = "metrics.benchmark.blank"
JS_SPACE = {chr(c) for c in range(0x110000) if chr(c).isspace()} - set("\x1c\x1d\x1e\x1f")
JS_SPACE.add("\ufeff")


def js_blank(data: dict[str, Any]) -> dict[str, Any]:
    """Blank as /^\\s*$/ in JavaScript; otherwise the reference writer (which would then
    refuse U+001C as blank: accept it instead, as the JavaScript test does)."""
    rows = data["rows"]
    for i, row in enumerate(rows if isinstance(rows, list) else []):
        value = row.get("benchmark") if isinstance(row, dict) else None
        if not isinstance(value, str):
            continue
        if all(c in JS_SPACE for c in value):
            raise RecordRefused.one("metrics.benchmark.blank", (i, "benchmark"), "blank", value)
        if value.isspace():
            row["benchmark"] = "x"  # passes the reference writer's check, as JavaScript's would
    return write_metrics(data)


if __name__ == "__main__":
    run_mutant("metrics_blank_js_space", {"write_metrics": js_blank})
