"""Mutant: a witness reader that takes any observed.attempt<digits>.json as a witness name
and compares the digits with the attempt as text: observed.attempt05.json holding
attempt 5 is refused, while leading zeros make it another name, read without the check."""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.errors import RecordRefused
from trainrecord_conformance.operations import read_witness

BREAKS = "witness.attempt.filename"
NAME = re.compile(r"observed\.attempt([0-9]+)\.json")


def as_text(data: dict[str, Any]) -> dict[str, Any]:
    """The file name's digits against str(attempt)."""
    match = NAME.fullmatch(os.path.basename(data["path"]))
    try:
        with open(data["path"], encoding="utf-8") as f:
            witness = json.load(f)
    except (OSError, ValueError):
        witness = None
    attempt = witness.get("attempt") if isinstance(witness, dict) else None
    if match and type(attempt) is int and str(attempt) != match.group(1):
        raise RecordRefused.one("witness.attempt.filename", ("attempt",), "renamed", attempt)
    return read_witness(data)


if __name__ == "__main__":
    run_mutant("witness_filename_as_text", {"read_witness": as_text})
