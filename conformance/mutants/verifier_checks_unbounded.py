"""Mutant: a diary verifier that takes a run_end with more checks than steps: each check
runs at a step of its session, at most one per step, and the reference fails such a line
on diary.run_end.checks."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.diary import chain
from trainrecord_conformance.operations import verify_diary

BREAKS = "diary.run_end.checks"

_related = chain.relation_problem


def unbounded(event: Any, line: dict[str, Any]) -> Any:
    """The reference's relations, but none for a run_end."""
    return None if event == "run_end" else _related(event, line)


if __name__ == "__main__":
    chain.relation_problem = unbounded
    run_mutant("verifier_checks_unbounded", {"verify_diary": verify_diary})
