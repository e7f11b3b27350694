"""Mutant: a witness writer that is exclusive but not atomic: it creates the final name
with O_CREAT | O_EXCL (so a second writer is still refused) and writes the witness into it
in two pieces. A reader, or a crash, between the two sees an empty or half witness under
its final name; afterwards the file is complete and every after-the-fact check passes.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _base import in_halves, run_mutant

from trainrecord.foundry import files

BREAKS = "witness.write.atomic_no_overwrite"


if __name__ == "__main__":
    files.create_new = in_halves(os.O_EXCL)
    run_mutant("witness_filled_in_place", {})
