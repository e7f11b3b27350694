"""Sentences a person can act on, for the schema rules of the Foundry records.

The oracle's own messages come from jsonschema (``'' does not match '\\S'``); for the
Foundry rules they are replaced by what the rule asks and how to fix it. Problems of other
rules pass through unchanged.
"""

from __future__ import annotations

from dataclasses import replace

from trainrecord.errors import Problem

MESSAGES: dict[str, str] = {
    "witness.type": "a witness must be a JSON object with the ten witness fields",
    "witness.fields.missing": "",  # the oracle's message names the missing field already
    "witness.fields.extra": "",
    "witness.attempt.type": "attempt must be an integer (not 1.0, not true, not text)",
    "witness.attempt.negative": "attempt must be zero or greater",
    "witness.captured_at.type": "captured_at must be text",
    "witness.captured_at.format": (
        "captured_at must be UTC as datetime.now(timezone.utc).isoformat() writes it, "
        "e.g. 2026-11-29T23:05:41.123456+00:00"
    ),
    "witness.config_sha.type": "config_sha must be text",
    "witness.config_sha.format": (
        "config_sha must be the first 16 lowercase hex characters of the configuration's "
        "sha256; compute it with trainrecord.foundry.config_sha"
    ),
    "witness.cpu_threads.type": "cpu_threads must be an integer or null",
    "witness.cpu_threads.range": "cpu_threads must be at least 1",
    "witness.device.type": "device must be text such as 'cpu', 'cuda', 'cuda:1' or 'mps'",
    "witness.device.blank": "device must not be blank; give the device the run requested",
    "witness.device_name.type": "device_name must be text or null",
    "witness.experiment_id.type": (
        "experiment_id must be an integer: the run id from FOUNDRY_RUN_ID"
    ),
    "witness.peak_vram_mb.type": "peak_vram_mb must be an integer number of mebibytes or null",
    "witness.peak_vram_mb.negative": "peak_vram_mb must be zero or greater",
    "witness.run_record_format.unsupported": (
        "run_record_format must be the integer 1: this reader understands version 1 only"
    ),
    "witness.wall_seconds.type": (
        "wall_seconds must be an integer number of whole seconds; pass int(elapsed)"
    ),
    "witness.wall_seconds.negative": "wall_seconds must be zero or greater",
    "metrics.type": "metrics must be a JSON array (a list) of rows",
    "metrics.empty": "metrics must have at least one row; call write_metrics when the run "
    "has results",
    "metrics.row.type": "a row must be an object with benchmark, metric, horizon, seed, value",
    "metrics.row.missing": "",
    "metrics.row.extra": "",
    "metrics.benchmark.type": "benchmark must be text",
    "metrics.benchmark.blank": "benchmark must not be blank; give the benchmark or dataset name",
    "metrics.metric.type": "metric must be text",
    "metrics.metric.blank": "metric must not be blank; give the metric name",
    "metrics.horizon.type": "horizon must be an integer (not 1.0, not true, not text)",
    "metrics.horizon.negative": "horizon must be zero or greater",
    "metrics.seed.type": "seed must be an integer (not 1.0, not true, not text)",
    "metrics.seed.negative": "seed must be zero or greater",
    "metrics.value.type": (
        "value must be a finite number: not a boolean, not text, not NaN or infinity, not an "
        "integer too large for a 64-bit float (beyond about 1.8e308); convert a tensor with "
        ".item()"
    ),
}


APPENDED: dict[str, str] = {
    "metrics.row.extra": " (a row holds only benchmark, metric, horizon, seed, value)",
}
"""What is added to the oracle's message of a rule whose message is kept (it names the field
already): ``field 'split' is not allowed here; remove it`` and the fields a row holds."""


def humane(problems: list[Problem]) -> list[Problem]:
    """``problems`` with the Foundry schema rules' messages made actionable."""
    out = []
    for problem in problems:
        message = MESSAGES.get(problem.rule) or problem.message + APPENDED.get(problem.rule, "")
        out.append(replace(problem, message=message))
    return out
