"""Shared plumbing of the mutants: the reference harness with one operation replaced.

Each mutant is a small program ``python conformance/mutants/<name>.py`` that speaks the
harness protocol exactly like the reference harness, except for one deliberately faulty
operation. ``BREAKS`` in each module names the rule the suite must fail it on.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from trainrecord_conformance.harness import serve
from trainrecord_conformance.operations import OPERATIONS, Operation, write_witness


def run_mutant(name: str, replaced: Mapping[str, Operation]) -> None:
    """Serve the reference operations with ``replaced`` swapped in; exit with its status."""
    sys.exit(serve({**OPERATIONS, **replaced}, name=f"mutant:{name}"))


def witness_edited(edit: Callable[[dict[str, Any], dict[str, Any]], None]) -> Operation:
    """A ``write_witness`` that writes the witness, then replaces it (whole, as a reader may
    be looking) with what a faulty writer would have written: ``edit(witness, request)``
    changes the witness in place."""

    def edited(data: dict[str, Any]) -> dict[str, Any]:
        out = write_witness(data)
        if out["path"] is None:
            return out
        with open(out["path"], encoding="utf-8") as f:
            witness = json.load(f)
        edit(witness, data)
        with open(out["path"] + ".tmp", "w", encoding="utf-8") as f:
            f.write(json.dumps(witness, ensure_ascii=False, indent=2) + "\n")
        os.replace(out["path"] + ".tmp", out["path"])
        return out

    return edited


def in_halves(flags: int) -> Callable[[Any, bytes], None]:
    """A file writer that opens the final name with ``flags`` (O_EXCL: exclusive; O_TRUNC:
    in place) and writes the data into it in two pieces: between them a reader, or a crash,
    sees an empty or half file under the final name."""

    def write(target: Any, data: bytes) -> None:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | flags, 0o666)
        try:
            os.write(fd, data[: len(data) // 2])
            os.write(fd, data[len(data) // 2 :])
        finally:
            os.close(fd)

    return write
