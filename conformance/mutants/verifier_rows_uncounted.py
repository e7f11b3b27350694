"""Mutant: a diary verifier that never counts metrics rows against run_end.checks: a
session's run_end says 2 checks over 5 rows (or none), its digest pinned to the file, and
the record verifies. The seed has "One JSON object per check"; the reference fails such a
run_end on diary.metrics.rows when its session is the only one since the run_end before."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.diary import verifier
from trainrecord_conformance.operations import verify_diary

BREAKS = "diary.metrics.rows"

_end = verifier._Segments.end


def uncounted(self: Any, whole: str, rows: int) -> Any:
    """The reference's verdict on the digests, without the row count."""
    found = _end(self, whole, rows)
    return None if found is not None and found.rule == BREAKS else found


if __name__ == "__main__":
    verifier._Segments.end = uncounted  # type: ignore[method-assign]
    run_mutant("verifier_rows_uncounted", {"verify_diary": verify_diary})
