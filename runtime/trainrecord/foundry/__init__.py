"""Foundry run records v1: the witness ``observed.attempt<N>.json`` and ``metrics.json``.

The contract is ``foundry-run-records-v1.txt``; the schemas, vectors and rule ids are in
``spec/`` (``schemas/foundry``, ``vectors/foundry``, ``rules/foundry.json``). Call
:func:`write_witness` from the training entry point's ``finally`` block and
:func:`write_metrics` when the run has results, within :func:`exit_on_sigterm` so that a
SIGTERM (scancel, preemption, the time limit) runs the ``finally`` block too::

    start = time.monotonic()
    with exit_on_sigterm():
        try:
            rows = train(config)
            write_metrics(results_dir, rows)
        finally:
            write_witness(results_dir, config=config, device="cuda",
                          wall_seconds=int(time.monotonic() - start))

Every refusal is a :class:`~trainrecord.errors.RecordRefused` naming the rule, the field
and the offending value; a refused call leaves the filesystem as it was. This package
never imports torch unless a witness is written for an accelerator.
"""

from __future__ import annotations

from trainrecord.foundry.metrics import (
    METRICS_NAME,
    METRICS_SCHEMA,
    metrics_problems,
    read_metrics,
    write_metrics,
)
from trainrecord.foundry.sigterm import exit_on_sigterm
from trainrecord.foundry.witness import (
    RUN_RECORD_FORMAT,
    WITNESS_SCHEMA,
    config_sha,
    read_witness,
    witness_name,
    witness_problems,
    write_witness,
)

__all__ = [
    "METRICS_NAME",
    "METRICS_SCHEMA",
    "RUN_RECORD_FORMAT",
    "WITNESS_SCHEMA",
    "config_sha",
    "exit_on_sigterm",
    "metrics_problems",
    "read_metrics",
    "read_witness",
    "witness_name",
    "witness_problems",
    "write_metrics",
    "write_witness",
]
