"""Mutant: a witness writer whose blank test is Unicode's White_Space property (as an
implementer reading "white space as Unicode defines it" would write it), not Python's
str.isspace: a FOUNDRY_RUN_ID of U+001C..U+001F is refused as not an integer instead of
blank."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.errors import RecordRefused
from trainrecord_conformance.operations import write_witness

BREAKS = "witness.env.foundry_run_id.blank"
SEPARATORS = "\x1c\x1d\x1e\x1f"
"""str.isspace counts them; Unicode White_Space does not."""


def white_space_property(data: dict[str, Any]) -> dict[str, Any]:
    """A run id holding an information separator is not blank, so not an integer."""
    raw = data["env"].get("FOUNDRY_RUN_ID")
    if isinstance(raw, str) and raw.isspace() and any(c in SEPARATORS for c in raw):
        raise RecordRefused.one(
            "witness.env.foundry_run_id.integer", ("FOUNDRY_RUN_ID",), "not an integer", raw
        )
    return write_witness(data)


if __name__ == "__main__":
    run_mutant("witness_run_id_blank_unicode", {"write_witness": white_space_property})
