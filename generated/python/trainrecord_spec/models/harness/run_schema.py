# DO NOT EDIT: generated from spec/schemas/harness/run.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field
try:
    from pydantic import MISSING
except ImportError:  # pydantic < 2.14 has it under experimental
    from pydantic.experimental.missing_sentinel import MISSING  # type: ignore[no-redef]
from trainrecord_spec._base import StrictModel


class HarnessRunRequest(StrictModel):
    """
    Conformance harness protocol: one operation for the harness to perform, one JSON object on one line. The harness answers each run with exactly one HarnessRunResponse carrying the same seq, in order. Paths in inputs are absolute paths to folders and files the suite created for this run.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    cmd: Literal['run']
    """
    Always "run".
    """
    seq: Annotated[int, Field(ge=0)]
    """
    A number the suite gives each run; the response repeats it.
    """
    op: Literal['validate', 'line_hash', 'config_hash', 'write_witness', 'write_metrics', 'read_witness', 'write_diary', 'verify_diary', 'send_report']
    """
    The operation: validate (an instance against a schema), line_hash (diary canonical JSON and hash), config_hash (Foundry config hash), write_witness, write_metrics, read_witness, write_diary, verify_diary, send_report.
    """
    input: dict[str, Any]
    """
    The operation's input; its shape depends on op (see $defs).
    """


class ValidateInput(StrictModel):
    """
    validate: is instance valid against the schema whose $id is schema?
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    schema_: Annotated[str, Field(alias='schema')]
    """
    The $id of a schema of this spec.
    """
    instance: Any
    """
    Any JSON value.
    """


class LineHashInput(StrictModel):
    """
    line_hash: the diary's canonical JSON of body and sha256(prev + canonical).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    prev: str
    """
    The previous line's hash (64 lowercase hex characters).
    """
    body: dict[str, Any]
    """
    The line without prev and hash.
    """


class ConfigHashInput(StrictModel):
    """
    config_hash: json.dumps(config, sort_keys=True) and its config_sha.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    config: dict[str, Any]
    """
    The run configuration.
    """


class WriteWitnessInput(StrictModel):
    """
    write_witness: write observed.attempt<N>.json into dir, reading the environment from env only (never the harness's own environment).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    dir: str
    """
    The results folder (it may not exist yet).
    """
    env: dict[str, str]
    """
    The environment variables the writer sees.
    """
    config: dict[str, Any]
    """
    The run configuration (hashed into config_sha).
    """
    device: str
    """
    The device the run requested.
    """
    wall_seconds: int
    """
    Elapsed whole seconds.
    """


class WriteMetricsInput(StrictModel):
    """
    write_metrics: write metrics.json into dir from rows (any JSON value: the writer must refuse bad rows).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    dir: str
    """
    The results folder (it may not exist yet).
    """
    rows: Any
    """
    The rows to write.
    """


class ReadWitnessInput(StrictModel):
    """
    read_witness: read and check the witness file at path.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    path: str
    """
    The witness file.
    """


class WriteDiaryInput(StrictModel):
    """
    write_diary: write a new diary into dir, one line per event (the writer adds seq, time, prev and hash), then close it.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    dir: str
    """
    The run folder (it may not exist yet).
    """
    events: list[dict[str, Any]]
    """
    Each event's type (event) and fields, run_start first.
    """


class VerifyDiaryInput(StrictModel):
    """
    verify_diary: verify the diary folder dir.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    dir: str
    """
    The run folder holding diary.jsonl (and metrics.jsonl, record.json, record.sig when present).
    """
    key: str | None | MISSING = MISSING
    """
    A public key file to check record.sig with, or null.
    """


class SendReportInput(StrictModel):
    """
    send_report: configure a reporting client with url and token, and send report once, synchronously, as report_status() does.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    url: str
    """
    The endpoint, exactly as configured.
    """
    token: str
    """
    The bearer token (CORREAD_REPORT_TOKEN).
    """
    report: dict[str, Any]
    """
    The report to send (the client must refuse one the schema rejects).
    """
    ca_file: str | None | MISSING = MISSING
    """
    A PEM file of extra certificate authorities to trust for https URLs, or null.
    """
