"""Mutant: environment integers read without the signed 64-bit range, so
FOUNDRY_RUN_ID=9223372036854775808 (2**63) is a run id and RANK=-9223372036854775809 a
negative rank instead of not an integer (spec/README.md: the value must fit a signed 64-bit
integer, so that every language can hold it). Random draws stay within 10**9; only the
rule's fixed edge cases reach the bounds."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.foundry import envvars

BREAKS = "witness.env.foundry_run_id.integer"

if __name__ == "__main__":
    envvars.INT64_MIN, envvars.INT64_MAX = -(10**19), 10**19
    run_mutant("env_int_unbounded", {})
