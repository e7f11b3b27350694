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
    op: Literal['validate', 'line_hash', 'config_hash', 'write_witness', 'write_metrics', 'read_witness', 'write_diary', 'verify_diary', 'send_report', 'read_metrics', 'build_report', 'report_status', 'load_settings', 'keygen', 'load_key', 'seal', 'report_job', 'append_diary', 'architecture', 'open_run', 'serve']
    """
    The operation: validate (an instance against a schema), line_hash (diary canonical JSON and hash), config_hash (Foundry config hash), write_witness, write_metrics, read_witness, write_diary, verify_diary, send_report, read_metrics, build_report, report_status, load_settings, keygen, load_key, seal, report_job, append_diary, architecture, open_run (start or resume a run folder: its run_id), serve (start a reporting receiver in the harness's process).
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
    env: dict[str, Any]
    """
    The environment variables the writer sees: text, as environment variables are. The suite also sends values that are not text (numbers, null, booleans, arrays, objects): the writer refuses them with witness.env.type.
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


class ReadMetricsInput(StrictModel):
    """
    read_metrics: read and check the metrics.json file at path (a version 1 reader).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    path: str
    """
    The metrics.json file; its folder may hold witnesses.
    """


class Secrets(StrictModel):
    """
    What this process must never send: the report token, the home folder, the user name and the process id (the harness treats these as its own, never its real ones).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    token: str
    """
    The report token.
    """
    home: str
    """
    The home folder, an absolute path.
    """
    user: str
    """
    The user name.
    """
    pid: int
    """
    The process id.
    """


class BuildReportInput(StrictModel):
    """
    build_report: build the report a client would send for state with this event, status, seq and sent_at, as a reporter does, without sending it.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    state: dict[str, Any]
    """
    The job state a report is built from, the fields of the runtime's JobState: kind, run_id, name, group, host, started_at, finished_at, config, running, epochs_first, epochs_total, phase, batch, batches, initial_validation, history, words_done, words_total, and error as the raw exception ({type, message}, unscrubbed) or null. config is the job's whole configuration, which may hold more than a report may carry.
    """
    event: str
    """
    The report's event (started, progress, epoch_end, complete, interrupted, failed, snapshot).
    """
    status: str
    """
    The status the job is in.
    """
    seq: int
    """
    The report's seq.
    """
    sent_at: str
    """
    The report's sent_at.
    """
    secrets: Secrets
    """
    What this process must never send: the report token, the home folder, the user name and the process id (the harness treats these as its own, never its real ones).
    """


class ReportStatusInput(StrictModel):
    """
    report_status: send one snapshot report of state with status to url now, synchronously, as report_status() does; say whether it raised.
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
    state: dict[str, Any]
    """
    The job state, as for build_report (error null).
    """
    status: str
    """
    The status the snapshot reports (any status of section 6).
    """
    ca_file: str | None | MISSING = MISSING
    """
    A PEM file of extra certificate authorities to trust, or null.
    """


class LoadSettingsInput(StrictModel):
    """
    load_settings: load the reporting settings from the paths.toml file at path and the environment env (never the harness's own environment).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    path: str
    """
    The paths.toml file; a relative ca_bundle is relative to its folder.
    """
    env: dict[str, str]
    """
    The environment variables the client sees.
    """


class KeygenInput(StrictModel):
    """
    keygen: write a new Ed25519 key pair: the private key at private, the public key at public.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    private: str
    """
    The private key file to create.
    """
    public: str
    """
    The public key file to create.
    """


class LoadKeyInput(StrictModel):
    """
    load_key: load the key file at path as a private or a public key.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    path: str
    """
    The key file.
    """
    kind: Literal['private', 'public']
    """
    private (for sealing) or public (for verifying).
    """


class SealInput(StrictModel):
    """
    seal: seal the run folder dir (write record.json, and record.sig when key is given), verifying it first.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    dir: str
    """
    The run folder holding diary.jsonl (and metrics.jsonl when present).
    """
    key: str | None | MISSING = MISSING
    """
    A private key file to sign with, or null.
    """


class ReportJobInput(StrictModel):
    """
    report_job: report one job (or one resume of it) from start to end as a running job does: started, then progress reports, then the final report, all to url; then give the last report a bounded time to go out and return.
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
    state: dict[str, Any]
    """
    The job state at its start, as for build_report (error null).
    """
    progress: Annotated[int, Field(ge=0)]
    """
    How many progress reports to queue (each forced, not waiting for every).
    """
    end: Literal['complete', 'interrupted']
    """
    The final event: complete or interrupted.
    """
    seq_dir: str
    """
    A folder that belongs to this run and persists across its calls (as the run's own folder does across resumes); keep there whatever seq needs.
    """
    last_seq: int | None
    """
    The highest seq already sent about this run as its metadata records it (a process whose clock ran ahead may have sent it), or null.
    """
    pause: Annotated[float | MISSING, Field(ge=0.0, le=5.0)] = MISSING
    """
    Seconds the job works (sleeps) after queueing each report, before the next; 0 queues them back to back (the newest-only queue may then drop some).
    """


class AppendDiaryInput(StrictModel):
    """
    append_diary: reopen the diary in dir with a writer using fsync_policy (verifying it first), append events, and close it.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    dir: str
    """
    The run folder holding an existing diary.jsonl.
    """
    events: list[dict[str, Any]]
    """
    Each event's type (event) and fields; a resumed run starts with run_start.
    """
    fsync_policy: Any
    """
    The writer's fsync policy as given by its user (the writer must refuse one it does not define).
    """


class ArchitectureInput(StrictModel):
    """
    architecture: the architecture text and architecture_sha256 of a model whose parameters, in named_parameters() order, have these names and shapes.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    parameters: list[list[Any]]
    """
    [name, shape] pairs; shape is a list of dimension sizes ([] for a scalar).
    """


class OpenRunInput(StrictModel):
    """
    open_run: start or resume the run whose folder is dir, as a job does at every start: on a fresh folder (or a metadata.json without run_id) write a new run_id into dir/metadata.json with the job's metadata; on a resume read and keep the stored one.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    dir: str
    """
    The run folder (models/<group>/<name> or wordsets/<name>); it may not exist yet.
    """
    metadata: dict[str, Any] | None
    """
    The job's own fields for metadata.json (never run_id), written with the new run_id at the first start, or null for none.
    """


class ServeInput(StrictModel):
    """
    serve: start a reporting receiver (Reporting API v2, the server side: §2 status codes, §4 newest seq wins) on a free port of the loopback address 127.0.0.1, in the harness's own process, and keep it serving while the harness runs (the suite then POSTs reports to it between runs). It needs token as its bearer token; dir is a folder of its own for whatever it stores. Answered once the receiver accepts connections.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    dir: str
    """
    A folder for the receiver's store (it may not exist yet).
    """
    token: str
    """
    The bearer token the receiver requires (printable ASCII, at least 16 characters).
    """
