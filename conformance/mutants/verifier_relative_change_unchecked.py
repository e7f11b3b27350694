"""Mutant: a diary verifier that takes any relative_change in a repair (a schema-valid
number or null): 7.0 for delta_norm 1.0 over weight_norm_before 2.0, or null for a weight
that was not 0, verify. The seed defines it as ‖ΔW‖ / ‖W‖, null when ‖W‖ was 0; the
reference fails such a line on diary.repair.relative_change.value."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.diary import chain
from trainrecord_conformance.operations import verify_diary

BREAKS = "diary.repair.relative_change.value"

_related = chain.relation_problem


def unchecked(event: Any, line: dict[str, Any]) -> Any:
    """The reference's relations, but none for a repair."""
    return None if event == "repair" else _related(event, line)


if __name__ == "__main__":
    chain.relation_problem = unchecked
    run_mutant("verifier_relative_change_unchecked", {"verify_diary": verify_diary})
