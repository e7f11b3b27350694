"""Mutant: a witness writer that is exclusive but not atomic: it creates the final name
with O_CREAT | O_EXCL (so a second writer is still refused) and writes the witness into it
in two pieces. A reader, or a crash, between the two sees an empty or half witness under
its final name; afterwards the file is complete and every after-the-fact check passes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.foundry import files

BREAKS = "witness.write.atomic_no_overwrite"


def create_in_place(target: Path, data: bytes) -> None:
    """Create ``target`` exclusively and fill it in place, half at a time."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        os.write(fd, data[: len(data) // 2])
        os.write(fd, data[len(data) // 2 :])
    finally:
        os.close(fd)


if __name__ == "__main__":
    files.create_new = create_in_place
    run_mutant("witness_filled_in_place", {})
