"""Mutant: a metrics writer that rewrites metrics.json in place (open without truncating,
write, close) instead of a temporary file and a rename: a shorter new file keeps the tail
of the old one, so the file is no longer one JSON document."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.foundry import files
from trainrecord_conformance.operations import write_metrics

BREAKS = "metrics.write.atomic_replace"


def _in_place(target: Path, data: bytes) -> None:
    fd = os.open(target, os.O_WRONLY | os.O_CREAT, 0o666)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def in_place(data: dict[str, Any]) -> dict[str, Any]:
    """write_metrics with files.replace swapped for a write in place."""
    replace, files.replace = files.replace, _in_place
    try:
        return write_metrics(data)
    finally:
        files.replace = replace


if __name__ == "__main__":
    run_mutant("metrics_rewrites_in_place", {"write_metrics": in_place})
