"""A Foundry-only exec harness, as an outside implementer writes one from docs/harness-guide.md
("A Foundry-only harness"): it lists config_hash, validate, write_witness, read_witness,
write_metrics and read_metrics, and answers ``unsupported`` to ``validate`` for every schema
outside ``schemas/foundry/``. The operations are this project's runtime.

``FOUNDRY_FAULT`` switches on one fault (for tests/conformance/test_partial_harness.py):

* ``crash_metrics``: write_metrics answers ``error`` ("RuntimeError: disk on fire") for rows
  it would write (the implementation failed: the suite must report an error, not a rule
  failure);
* ``validate_error``: validate answers ``error`` (not ``unsupported``) for another format's
  schema;
* ``validate_flip``: validate answers ``unsupported`` for the metrics schema after it has
  validated it once (a harness must answer one schema the same way all run long).

Run: ``python tests/conformance/foundry_only_harness.py`` (protocol on stdin/stdout).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from trainrecord.canonical import loads_strict
from trainrecord_conformance.harness import answer
from trainrecord_conformance.operations import OPERATIONS

FOUNDRY = "https://trainrecord.dev/schemas/foundry/"
LISTED = (
    "config_hash",
    "validate",
    "write_witness",
    "read_witness",
    "write_metrics",
    "read_metrics",
)
FAULT = os.environ.get("FOUNDRY_FAULT", "")


def main() -> int:
    """Speak the protocol until stop."""
    operations = {op: OPERATIONS[op] for op in LISTED}
    seen: set[str] = set()

    def say(message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(message, allow_nan=False) + "\n")
        sys.stdout.flush()

    for line in sys.stdin:
        request = loads_strict(line)
        if request["cmd"] == "start":
            implementation = {"name": "foundry-only", "language": "python"}
            say({"version": 1, "implementation": implementation, "operations": list(LISTED)})
            continue
        if request["cmd"] == "stop":
            say({"stopped": True})
            return 0
        seq, op, data = request["seq"], request["op"], request["input"]
        if op == "validate" and not str(data["schema"]).startswith(FOUNDRY):
            if FAULT == "validate_error":
                say({"seq": seq, "outcome": "error", "message": "NotImplementedError: schema"})
            else:
                say({"seq": seq, "outcome": "unsupported", "message": "Foundry schemas only"})
            continue
        if op == "validate" and FAULT == "validate_flip" and data["schema"] in seen:
            say({"seq": seq, "outcome": "unsupported", "message": "changed my mind"})
            continue
        if op == "validate":
            seen.add(data["schema"])
        response = answer(request, operations)
        if op == "write_metrics" and FAULT == "crash_metrics" and response["outcome"] == "ok":
            response = {"seq": seq, "outcome": "error", "message": "RuntimeError: disk on fire"}
        say(response)
    return 0


if __name__ == "__main__":
    sys.exit(main())
