"""Mutant: a diary verifier that reads metrics.jsonl only as strict JSON: its rows are never
checked against the metrics row schema, so a row with ``step: -1`` (or no loss, or a list
for a row) verifies ``ok`` when run_end's metrics_sha256 matches the file."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.diary import verifier
from trainrecord.diary.events import METRICS_ROW_SCHEMA
from trainrecord_conformance.operations import verify_diary

BREAKS = "diary_metrics.step.negative"

_checked = verifier.fast_problems


def rows_unchecked(value: Any, schema: Any) -> list[Any]:
    """The reference's schema check, except for metrics rows: nothing found."""
    return [] if schema == METRICS_ROW_SCHEMA else _checked(value, schema)


if __name__ == "__main__":
    verifier.fast_problems = rows_unchecked  # type: ignore[assignment]
    run_mutant("verifier_rows_unchecked", {"verify_diary": verify_diary})
