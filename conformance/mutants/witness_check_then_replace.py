"""Mutant: a witness writer that is atomic but not exclusive: it writes and fsyncs a
temporary file, then checks that the witness does not exist and renames the temporary file
onto its name. Every file it leaves is complete, and a second writer after it is refused;
only two processes that both pass the check before either renames show the fault (both
answer ok, one witness silently replaced). The window between the check and the rename is
a few microseconds: only the race check, with processes started together, finds it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.foundry import files

BREAKS = "witness.write.atomic_no_overwrite"


def check_then_replace(target: Path, data: bytes) -> None:
    """Temporary file first, then exists-check and rename (rename replaces silently)."""
    tmp = files.write_temp(target, data)
    try:
        if os.path.lexists(target):
            raise FileExistsError(target)
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


if __name__ == "__main__":
    files.create_new = check_then_replace
    run_mutant("witness_check_then_replace", {})
