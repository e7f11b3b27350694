# DO NOT EDIT: generated from spec/schemas/harness/run-response.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field
try:
    from pydantic import MISSING
except ImportError:  # pydantic < 2.14 has it under experimental
    from pydantic.experimental.missing_sentinel import MISSING  # type: ignore[no-redef]
from trainrecord_spec._base import StrictModel


class HarnessRunResponse(StrictModel):
    """
    Conformance harness protocol: the harness's answer to one run. outcome ok carries output; refused means the implementation refused the input on purpose and names the rules it broke; error means the implementation failed (the suite reports an error, not a rule failure); unsupported means the operation is not implemented.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    seq: Annotated[int, Field(ge=0)]
    """
    The seq of the run this answers.
    """
    outcome: Literal['ok', 'refused', 'error', 'unsupported']
    """
    ok, refused, error or unsupported.
    """
    output: dict[str, Any] | MISSING = MISSING
    """
    With ok: the operation's result (see $defs).
    """
    rules: list[str] | MISSING = MISSING
    """
    With refused: the rule ids broken, e.g. metrics.horizon.type.
    """
    message: str | MISSING = MISSING
    """
    With refused or error: what went wrong, for people.
    """


class ValidateOutput(StrictModel):
    """
    validate: whether the instance is valid, and the rule ids it breaks.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    valid: bool
    """
    True when the instance is valid.
    """
    rules: list[str]
    """
    The rule ids broken (empty when valid).
    """


class LineHashOutput(StrictModel):
    """
    line_hash: the canonical text and the line hash.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    canonical: str
    """
    json.dumps(body, sort_keys=True, separators=(",", ":")).
    """
    hash: str
    """
    sha256(prev + canonical), 64 lowercase hex characters.
    """


class ConfigHashOutput(StrictModel):
    """
    config_hash: the canonical text and the config hash.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    canonical: str
    """
    json.dumps(config, sort_keys=True).
    """
    config_sha: str
    """
    The first 16 hex characters of sha256(canonical).
    """


class WriteOutput(StrictModel):
    """
    write_witness, write_metrics, write_diary: the file written, or null when nothing was written on purpose (a nonzero rank).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    path: str | None
    """
    The absolute path of the file written, or null.
    """


class ReadWitnessOutput(StrictModel):
    """
    read_witness: the witness as read.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    witness: dict[str, Any]
    """
    The witness's fields.
    """


class VerifyDiaryOutput(StrictModel):
    """
    verify_diary: whether the folder verifies, its status (a torn tail apart from a failure), the rule ids of what failed, and the first failing line.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    ok: bool
    """
    True when everything holds.
    """
    status: Literal['ok', 'torn', 'failed']
    """
    ok (everything holds), torn (the complete lines verify and the last line has no newline: a crash while writing, diary.file.torn; also when there is no complete line at all) or failed (anything else).
    """
    rules: list[str]
    """
    The rule ids broken (empty when ok).
    """
    line: int | None
    """
    The 0-based index of the first failing line of diary.jsonl, or null.
    """


class SendReportOutput(StrictModel):
    """
    send_report: whether the server accepted the report, and the status it answered.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    delivered: bool
    """
    True when the server answered 2xx.
    """
    status: int | None
    """
    The HTTP status received, or null when none (timeout, connection refused).
    """


class ReadMetricsOutput(StrictModel):
    """
    read_metrics: the rows as read.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    rows: list[Any]
    """
    The metrics rows.
    """


class BuildReportOutput(StrictModel):
    """
    build_report: the report the client would send.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    report: dict[str, Any]
    """
    The report.
    """


class ReportStatusOutput(StrictModel):
    """
    report_status: whether it returned (the report got through) or raised, and what the raised error says.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    raised: bool
    """
    True when report_status raised because the report did not get through.
    """
    message: str
    """
    The raised error's message (empty when it returned).
    """
    seq: int | None | MISSING = MISSING
    """
    The seq of the report sent, when it returned.
    """


class LoadSettingsOutput(StrictModel):
    """
    load_settings: the settings as loaded.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    url: str
    """
    The report URL.
    """
    every: float
    """
    Seconds between progress reports.
    """
    ca_bundle: bool
    """
    True when a CA bundle is configured.
    """


class KeyOutput(StrictModel):
    """
    keygen and load_key: the public key's fingerprint (SHA-256 hex of its raw 32 bytes).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    fingerprint: str
    """
    64 lowercase hex characters.
    """


class SealOutput(StrictModel):
    """
    seal: the seal written (the content of record.json).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    seal: dict[str, Any]
    """
    The seal.
    """


class ReportJobOutput(StrictModel):
    """
    report_job: whether the final report went out within the bounded time, and how many warnings the job logged about reporting.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    closed: bool
    """
    True when the last report was sent before return.
    """
    warnings: Annotated[int, Field(ge=0)]
    """
    How many warnings about reports not getting through the job logged (to its log or stderr) during the call.
    """


class ArchitectureOutput(StrictModel):
    """
    architecture: the text hashed and its SHA-256.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    text: str
    """
    name:shape per parameter joined by |.
    """
    sha256: str
    """
    SHA-256 (lowercase hex) of the UTF-8 text.
    """


class OpenRunOutput(StrictModel):
    """
    open_run: the run's run_id and whether this call wrote it (a new run) or found it (a resume).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    run_id: str
    """
    The run_id now stored in metadata.json: a UUID in canonical lowercase form.
    """
    created: bool
    """
    True when this call wrote the run_id (a new run), false when it was already stored (a resume).
    """


class ServeOutput(StrictModel):
    """
    serve: where the receiver listens.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    url: str
    """
    The URL reports are POSTed to, e.g. http://127.0.0.1:41234/api/runs.
    """
    read_url: str | None
    """
    The URL under which GET <read_url>/<run_id> (with the same bearer token) answers the stored report of a run, or null when the receiver has no such read.
    """
