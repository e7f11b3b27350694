"""Mutant: a diary verifier that reads metrics rows without looking at their order: one
session's rows with the same step twice, or a step going down, verify. A session's checks
run at increasing steps, one row each; the reference fails the row on diary.metrics.order."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.diary import verifier
from trainrecord_conformance.operations import verify_diary

BREAKS = "diary.metrics.order"


def any_order(self: Any, row: int, step: int, last: int) -> None:
    """Every row is in order."""
    return None


if __name__ == "__main__":
    verifier._Segments.disorder = any_order  # type: ignore[method-assign]
    run_mutant("verifier_steps_unordered", {"verify_diary": verify_diary})
