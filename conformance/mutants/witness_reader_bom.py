"""Mutant: a witness reader that decodes the file as ``utf-8-sig``, so a byte order mark
before the JSON is skipped (as a WHATWG TextDecoder does by default) instead of refused
as not strict JSON text."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import read_witness

BREAKS = "witness.file.json"


def skips_bom(data: dict[str, Any]) -> dict[str, Any]:
    """Read a copy of the file without its BOM, under the same name."""
    with open(data["path"], "rb") as f:
        raw = f.read()
    if not raw.startswith(b"\xef\xbb\xbf"):
        return read_witness(data)
    with tempfile.TemporaryDirectory() as folder:
        copy = os.path.join(folder, os.path.basename(data["path"]))
        with open(copy, "wb") as f:
            f.write(raw[3:])
        return read_witness({**data, "path": copy})


if __name__ == "__main__":
    run_mutant("witness_reader_bom", {"read_witness": skips_bom})
