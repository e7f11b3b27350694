"""Mutant: a witness reader that opens whatever stands at the path (no regular-file check,
no size cap), refusing what it cannot read as witness.file.json: a folder is "not JSON", a
FIFO would block it for good, /dev/zero would fill the memory."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.errors import RecordRefused
from trainrecord_conformance.operations import read_witness

BREAKS = "witness.file.regular"


def any_file(data: dict[str, Any]) -> Any:
    """Read the bytes with no check; refuse an unreadable path as witness.file.json."""
    try:
        with open(data["path"], "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise RecordRefused.one("witness.file.json", (), f"cannot read it: {exc}") from None
    if len(raw) > 1 << 20:
        raise RecordRefused.one("witness.file.json", (), "not JSON")
    return read_witness(data)


if __name__ == "__main__":
    run_mutant("witness_reads_any_file", {"read_witness": any_file})
