"""Shared plumbing of the mutants: the reference harness with one operation replaced.

Each mutant is a small program ``python conformance/mutants/<name>.py`` that speaks the
harness protocol exactly like the reference harness, except for one deliberately faulty
operation. ``BREAKS`` in each module names the rule the suite must fail it on.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from trainrecord_conformance.harness import serve
from trainrecord_conformance.operations import OPERATIONS, Operation


def run_mutant(name: str, replaced: Mapping[str, Operation]) -> None:
    """Serve the reference operations with ``replaced`` swapped in; exit with its status."""
    sys.exit(serve({**OPERATIONS, **replaced}, name=f"mutant:{name}"))
