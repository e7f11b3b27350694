"""The exec harness protocol: newline-delimited JSON between the suite and a harness.

The messages are specified as JSON Schemas in ``spec/schemas/harness/`` (rule ids
``harness.*``) and explained step by step in ``docs/harness-guide.md``::

    suite -> {"cmd": "start", "version": 1}
    harness <- {"version": 1, "implementation": {...}, "operations": [...]}
    suite -> {"cmd": "run", "seq": 0, "op": "config_hash", "input": {"config": {...}}}
    harness <- {"seq": 0, "outcome": "ok", "output": {"canonical": "...", "config_sha": "..."}}
    suite -> {"cmd": "stop"}
    harness <- {"stopped": true}            (then exits with status 0)

This module builds requests, checks responses against the schemas, and turns a
response into a :class:`Result`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from trainrecord.canonical import loads_strict
from trainrecord_conformance.oracle import schema_problems

VERSION = 1
SCHEMAS = "https://trainrecord.dev/schemas/harness/"
START_RESPONSE = SCHEMAS + "start-response.schema.json"
RUN_RESPONSE = SCHEMAS + "run-response.schema.json"
STOP_RESPONSE = SCHEMAS + "stop-response.schema.json"
OUTPUTS = {
    "validate": "ValidateOutput",
    "line_hash": "LineHashOutput",
    "config_hash": "ConfigHashOutput",
    "write_witness": "WriteOutput",
    "write_metrics": "WriteOutput",
    "write_diary": "WriteOutput",
    "read_witness": "ReadWitnessOutput",
    "verify_diary": "VerifyDiaryOutput",
    "send_report": "SendReportOutput",
    "read_metrics": "ReadMetricsOutput",
    "build_report": "BuildReportOutput",
    "report_status": "ReportStatusOutput",
    "load_settings": "LoadSettingsOutput",
    "keygen": "KeyOutput",
    "load_key": "KeyOutput",
    "seal": "SealOutput",
    "report_job": "ReportJobOutput",
    "append_diary": "WriteOutput",
    "architecture": "ArchitectureOutput",
    "open_run": "OpenRunOutput",
    "serve": "ServeOutput",
}
"""Each operation's output shape: a ``$defs`` entry of run-response.schema.json."""
OPERATIONS = tuple(OUTPUTS)


class ProtocolError(Exception):
    """The harness broke the protocol: not JSON, wrong shape, wrong seq, early exit."""

    def __init__(self, message: str, rules: list[str] | None = None) -> None:
        super().__init__(message)
        self.rules = rules or []


@dataclass
class Result:
    """What one run of an operation gave."""

    outcome: str
    output: dict[str, Any] = field(default_factory=dict)
    rules: list[str] = field(default_factory=list)
    message: str = ""

    def describe(self) -> str:
        """One line for a failure report."""
        if self.outcome == "ok":
            return f"ok: {json.dumps(self.output, default=str)[:300]}"
        if self.outcome == "refused":
            return f"refused {self.rules}: {self.message[:300]}"
        return f"{self.outcome}: {self.message[:300]}"


def start_request() -> dict[str, Any]:
    """The start message."""
    return {"cmd": "start", "version": VERSION}


def run_request(seq: int, op: str, data: dict[str, Any]) -> dict[str, Any]:
    """A run message."""
    return {"cmd": "run", "seq": seq, "op": op, "input": data}


def stop_request() -> dict[str, Any]:
    """The stop message."""
    return {"cmd": "stop"}


def encode(message: dict[str, Any]) -> bytes:
    """One message as one line of strict JSON (ASCII, so any harness can read it)."""
    return (json.dumps(message, allow_nan=False) + "\n").encode("ascii")


def decode(line: bytes) -> Any:
    """Parse one response line (strict JSON), or raise :class:`ProtocolError` (which says
    that stdout is for protocol lines only: the usual cause is a harness logging there)."""
    try:
        return loads_strict(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(
            f"response is not one strict JSON value: {line[:200]!r} ({exc}); stdout is "
            "reserved for protocol lines: write logs to stderr",
            ["harness.message.type"],
        ) from exc


def check(message: Any, schema: str) -> None:
    """Raise :class:`ProtocolError` when ``message`` does not follow ``schema``."""
    found = schema_problems(message, schema)
    if found:
        shown = "; ".join(str(p) for p in found[:3])
        raise ProtocolError(
            f"response breaks the protocol: {shown}", sorted({p.rule for p in found})
        )


def check_start(message: Any) -> dict[str, Any]:
    """Check a start response; return it."""
    check(message, START_RESPONSE)
    return message


def to_result(message: Any, seq: int, op: str) -> Result:
    """Check a run response for the run ``seq`` of ``op`` and turn it into a :class:`Result`."""
    check(message, RUN_RESPONSE)
    if message["seq"] != seq:
        raise ProtocolError(
            f"response carries seq {message['seq']}, the run had seq {seq}",
            ["harness.run.seq.echo"],
        )
    outcome = message["outcome"]
    if outcome == "ok":
        if "output" not in message:
            raise ProtocolError("an ok response needs output", ["harness.run.output.type"])
        check(message["output"], f"{RUN_RESPONSE}#/$defs/{OUTPUTS[op]}")
    if outcome == "refused" and not isinstance(message.get("rules"), list):
        raise ProtocolError(
            "a refused response lists the broken rules in rules", ["harness.run.rules.type"]
        )
    return Result(
        outcome,
        message.get("output", {}),
        list(message.get("rules", [])),
        message.get("message", ""),
    )
