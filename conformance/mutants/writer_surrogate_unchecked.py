"""Mutant: a diary writer that writes text holding surrogate code points (it never checks
for them), as the Python writer did before the tamper probe's F3/F6."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

import trainrecord.diary.writer as writer
from trainrecord_conformance.operations import write_diary

BREAKS = "diary.text.surrogate"

if __name__ == "__main__":
    writer.surrogate_problem = lambda body: None  # type: ignore[assignment]
    run_mutant("writer_surrogate_unchecked", {"write_diary": write_diary})
