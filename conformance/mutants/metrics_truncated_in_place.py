"""Mutant: a metrics writer that truncates metrics.json and fills it in place, in two
pieces, instead of replacing it whole (unlike metrics_rewrites_in_place it truncates, so
the file it leaves is right). A reader between the steps sees an empty or half file;
afterwards the file holds exactly the rows and every after-the-fact check passes.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _base import in_halves, run_mutant

from trainrecord.foundry import files

BREAKS = "metrics.write.atomic_replace"


if __name__ == "__main__":
    files.replace = in_halves(os.O_TRUNC)
    run_mutant("metrics_truncated_in_place", {})
