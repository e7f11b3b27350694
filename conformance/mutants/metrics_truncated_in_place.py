"""Mutant: a metrics writer that truncates metrics.json and fills it in place, in two
pieces, instead of replacing it whole (unlike metrics_rewrites_in_place it truncates, so
the file it leaves is right). A reader between the steps sees an empty or half file;
afterwards the file holds exactly the rows and every after-the-fact check passes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.foundry import files

BREAKS = "metrics.write.atomic_replace"


def rewrite_in_place(target: Path, data: bytes) -> None:
    """Open ``target`` truncated and write ``data`` into it, half at a time."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        os.write(fd, data[: len(data) // 2])
        os.write(fd, data[len(data) // 2 :])
    finally:
        os.close(fd)


if __name__ == "__main__":
    files.replace = rewrite_in_place
    run_mutant("metrics_truncated_in_place", {})
