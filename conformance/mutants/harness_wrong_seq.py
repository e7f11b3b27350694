"""Mutant: a harness that answers every run with the seq of the run before."""

from __future__ import annotations

import io
import json
import sys

from trainrecord_conformance.harness import serve

BREAKS = "harness.run.seq.echo"


class Shifted(io.TextIOBase):
    """stdout that rewrites each run response's seq to seq - 1."""

    def write(self, text: str) -> int:
        for line in text.splitlines(keepends=True):
            message = json.loads(line)
            if "outcome" in message:
                message["seq"] = max(0, message["seq"] - 1)
            sys.__stdout__.write(json.dumps(message) + "\n")
        sys.__stdout__.flush()
        return len(text)


if __name__ == "__main__":
    sys.exit(serve(name="mutant:harness_wrong_seq", stdout=Shifted()))
