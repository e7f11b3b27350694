"""The reference exec harness: this project's runtime behind the harness protocol.

Run it as ``python -m trainrecord_conformance.harness``; the suite drives it with
``--target harness`` (or ``--target "exec:python -m trainrecord_conformance.harness"``).
It is also the base of the mutants in ``conformance/mutants/``: :func:`serve` takes the
operation table, so a mutant replaces one operation with a faulty one.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Mapping
from typing import IO, Any

from trainrecord.canonical import loads_strict
from trainrecord.errors import RecordRefused
from trainrecord_conformance.operations import OPERATIONS, Operation

VERSION = 1


def answer(request: Mapping[str, Any], operations: Mapping[str, Operation]) -> dict[str, Any]:
    """The response to one run request."""
    seq, op = request.get("seq"), request.get("op")
    if not isinstance(op, str) or op not in operations:  # (a list or object is unhashable)
        return {"seq": seq, "outcome": "unsupported", "message": f"operation {op} is not supported"}
    try:
        return {"seq": seq, "outcome": "ok", "output": operations[op](dict(request["input"]))}
    except RecordRefused as exc:
        return {
            "seq": seq,
            "outcome": "refused",
            "rules": list(dict.fromkeys(exc.rules)),
            "message": str(exc),
        }
    except Exception as exc:
        return {
            "seq": seq,
            "outcome": "error",
            "message": "".join(traceback.format_exception(exc))[-2000:],
        }


def serve(
    operations: Mapping[str, Operation] = OPERATIONS,
    *,
    name: str = "trainrecord",
    stdin: IO[str] | None = None,
    stdout: IO[str] | None = None,
) -> int:
    """Speak the protocol on stdin/stdout until stop; return the exit status."""
    from trainrecord import __version__

    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout

    def reply(message: dict[str, Any]) -> None:
        stdout.write(json.dumps(message, allow_nan=False) + "\n")
        stdout.flush()

    for line in stdin:
        if not line.strip():
            continue
        try:
            request = loads_strict(line)
        except ValueError as exc:
            print(f"harness: not a JSON request: {exc}", file=sys.stderr)
            return 2
        cmd = request.get("cmd") if isinstance(request, dict) else None
        if cmd == "start":
            if request.get("version") != VERSION:
                print(
                    f"harness: protocol version {request.get('version')!r}; I speak 1",
                    file=sys.stderr,
                )
                return 2
            reply(
                {
                    "version": VERSION,
                    "implementation": {"name": name, "language": "python", "version": __version__},
                    "operations": sorted(operations),
                }
            )
        elif cmd == "run":
            reply(answer(request, operations))
        elif cmd == "stop":
            reply({"stopped": True})
            return 0
        else:
            print(f"harness: unknown cmd {cmd!r}", file=sys.stderr)
            return 2
    return 0
