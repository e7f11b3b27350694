"""Mutant: a reporter whose seq is only the send time: it forgets the run's folder and its
known last seq, so a resume after a process whose clock ran ahead goes backwards."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import report_job

BREAKS = "report.seq.increasing"


def faulty(data: dict[str, Any]) -> dict[str, Any]:
    """Report with a fresh folder and no floor."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        return report_job({**data, "seq_dir": folder, "last_seq": None})


if __name__ == "__main__":
    run_mutant("seq_forgets_resumes", {"report_job": faulty})
