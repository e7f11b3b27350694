"""The harness operations, implemented with this project's runtime (``trainrecord``).

One function per operation of the harness protocol (``spec/schemas/harness/run.schema.json``):
each takes the run's ``input`` object and returns its ``output`` object, or raises
:class:`~trainrecord.errors.RecordRefused` for a refusal. The in-process ``python`` target
calls them directly; the reference exec harness (:mod:`trainrecord_conformance.harness`)
serves them over the protocol, so both paths run the very same code.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainrecord.canonical import canonical_config, canonical_line, line_hash
from trainrecord.errors import RecordRefused
from trainrecord.schemas import problems

Operation = Callable[[dict[str, Any]], dict[str, Any]]


def validate(data: dict[str, Any]) -> dict[str, Any]:
    """Validate ``instance`` against the schema ``schema`` (an ``$id``, or ``$id#pointer``)."""
    from trainrecord_conformance.oracle import schema_problems

    found = schema_problems(data["instance"], data["schema"])
    return {"valid": not found, "rules": sorted({p.rule for p in found})}


def line_hash_op(data: dict[str, Any]) -> dict[str, Any]:
    """The diary's canonical line and its hash."""
    return {
        "canonical": canonical_line(data["body"]),
        "hash": line_hash(data["prev"], data["body"]),
    }


def config_hash(data: dict[str, Any]) -> dict[str, Any]:
    """The Foundry configuration form and ``config_sha``."""
    from trainrecord.foundry import config_sha

    return {"canonical": canonical_config(data["config"]), "config_sha": config_sha(data["config"])}


def write_witness(data: dict[str, Any]) -> dict[str, Any]:
    """Write a witness into ``dir`` from the given environment only."""
    from trainrecord.foundry import write_witness as write

    path = write(
        data["dir"],
        config=data["config"],
        device=data["device"],
        wall_seconds=data["wall_seconds"],
        env=data["env"],
    )
    return {"path": None if path is None else str(path)}


def write_metrics(data: dict[str, Any]) -> dict[str, Any]:
    """Write ``metrics.json`` into ``dir``."""
    from trainrecord.foundry import write_metrics as write

    return {"path": str(write(data["dir"], data["rows"]))}


def read_witness(data: dict[str, Any]) -> dict[str, Any]:
    """Read and check a witness file."""
    from trainrecord.foundry import read_witness as read

    model = read(data["path"])
    return {"witness": model.model_dump(mode="json")}


def write_diary(data: dict[str, Any]) -> dict[str, Any]:
    """Write a new diary from ``events`` (each with its ``event`` type) and close it."""
    return _append(data["dir"], data["events"], "critical")


def append_diary(data: dict[str, Any]) -> dict[str, Any]:
    """Reopen an existing diary (the writer verifies it first) and append ``events``."""
    return _append(data["dir"], data["events"], data["fsync_policy"])


def _append(folder: str, events: list[Any], fsync_policy: Any) -> dict[str, Any]:
    """Append ``events`` (each with its type in ``event``) with a DiaryWriter on ``folder``;
    an event without its type is refused before the diary is opened."""
    from trainrecord.diary import DiaryWriter

    for i, event in enumerate(events):
        if not isinstance(event, dict) or not isinstance(event.get("event"), str):
            raise RecordRefused.one(
                "diary.event.type",
                ("events", i, "event"),
                "each event needs its type in the field event",
                event,
            )
    writer = DiaryWriter(folder, fsync_policy=fsync_policy)
    try:
        for event in events:
            writer.append(event["event"], {k: v for k, v in event.items() if k != "event"})
    finally:
        writer.close()
    return {"path": str(writer.path)}


def architecture(data: dict[str, Any]) -> dict[str, Any]:
    """architecture_text and architecture_sha256 of (name, shape) pairs."""
    from trainrecord.diary import architecture_sha256, architecture_text

    pairs = [(name, shape) for name, shape in data["parameters"]]
    return {"text": architecture_text(pairs), "sha256": architecture_sha256(pairs)}


def verify_diary(data: dict[str, Any]) -> dict[str, Any]:
    """Verify a run folder; its status, the first failure's rule and line."""
    from trainrecord.diary import load_public_key, verify

    key = load_public_key(data["key"]) if data.get("key") else None
    result = verify(data["dir"], public_key=key, workers=1, progress=False)
    failure = result.failure
    rules: list[str] = []
    line = None
    if failure is not None:
        rules = [failure.rule]
        if failure.file == "diary.jsonl" and failure.line > 0:
            line = failure.line - 1
    elif result.status == "torn":
        rules = ["diary.file.torn"]
        line = result.lines
    return {"ok": result.ok, "status": result.status, "rules": rules, "line": line}


def send_report(data: dict[str, Any]) -> dict[str, Any]:
    """Send one report synchronously, as ``report_status()`` does."""
    from trainrecord.report import ReportSettings, encode_report, post_report

    settings = ReportSettings(
        url=data["url"], every=60, token=data["token"], ca_bundle=data.get("ca_file")
    )
    outcome = post_report(settings, encode_report(data["report"]))
    return {"delivered": bool(outcome.ok), "status": outcome.status}


def read_metrics(data: dict[str, Any]) -> dict[str, Any]:
    """Read and check ``metrics.json`` as a version 1 reader."""
    from trainrecord.foundry import read_metrics as read

    return {"rows": [row.model_dump(mode="json") for row in read(data["path"])]}


STATE_FIELDS = (
    "kind",
    "run_id",
    "name",
    "group",
    "host",
    "started_at",
    "finished_at",
    "running",
    "epochs_first",
    "epochs_total",
    "phase",
    "batch",
    "batches",
    "initial_validation",
    "history",
    "words_done",
    "words_total",
)


def _secrets(data: dict[str, Any] | None) -> Any:
    from trainrecord.report import Secrets

    if data is None:
        return Secrets()
    return Secrets(token=data["token"], home=data["home"], user=data["user"], pid=data["pid"])


def _job_state(state: dict[str, Any], secrets: Any) -> Any:
    """A runtime JobState from the input: the job's config cut to the kind's report config
    (§5), and the raw error turned into the scrubbed error the report carries (§7)."""
    from trainrecord.report import JobState, config
    from trainrecord.report.payload import fields_of

    kind = state["kind"]
    allowed = set(fields_of(f"{kind}_config"))
    cfg = config(kind, **{k: v for k, v in state["config"].items() if k in allowed})
    error = state.get("error")
    if error is not None:
        from trainrecord.report import error_info

        name = str(error.get("type") or "Exception")
        exc_type = type(name if name.isidentifier() else "Exception", (Exception,), {})
        error = error_info(exc_type(str(error.get("message", ""))), secrets)
    fields = {k: state[k] for k in STATE_FIELDS if k in state}
    fields["history"] = list(fields.get("history") or [])
    return JobState(**{**fields, "config": cfg, "error": error})


def build_report(data: dict[str, Any]) -> dict[str, Any]:
    """The report a reporter would send for a job state, checked as before sending."""
    from trainrecord.report import build_report as build
    from trainrecord.report import check_report

    secrets = _secrets(data["secrets"])
    state = _job_state(data["state"], secrets)
    report = build(
        state, event=data["event"], status=data["status"], seq=data["seq"], sent_at=data["sent_at"]
    )
    check_report(report, secrets)
    return {"report": report}


def report_status(data: dict[str, Any]) -> dict[str, Any]:
    """Send one snapshot now with ``report_status()``; say whether it raised and why."""
    from trainrecord.report import ReportNotDelivered, ReportSettings, SeqClock
    from trainrecord.report import report_status as status_now

    settings = ReportSettings(
        url=data["url"], every=60, token=data["token"], ca_bundle=data.get("ca_file")
    )
    state = _job_state(data["state"], _secrets(None))
    try:
        seq = status_now(settings, state, data["status"], seq=SeqClock())
    except ReportNotDelivered as exc:
        return {"raised": True, "message": str(exc), "seq": None}
    return {"raised": False, "message": "", "seq": seq}


def load_settings(data: dict[str, Any]) -> dict[str, Any]:
    """Load the reporting settings from a paths.toml file and the given environment."""
    from trainrecord.report import load_settings as load

    settings = load(data["path"], env=data["env"])
    return {"url": settings.url, "every": settings.every, "ca_bundle": bool(settings.ca_bundle)}


def keygen(data: dict[str, Any]) -> dict[str, Any]:
    """Write a new key pair (never over an existing file)."""
    from trainrecord.diary import generate_keypair

    _, _, fingerprint = generate_keypair(data["private"], data["public"])
    return {"fingerprint": fingerprint}


def load_key(data: dict[str, Any]) -> dict[str, Any]:
    """Load a private or public key file; its public key's fingerprint."""
    from trainrecord.diary import fingerprint, load_private_key, load_public_key

    if data["kind"] == "private":
        return {"fingerprint": fingerprint(load_private_key(data["path"]).public_key())}
    return {"fingerprint": fingerprint(load_public_key(data["path"]))}


def seal(data: dict[str, Any]) -> dict[str, Any]:
    """Seal a run folder (verifying it first)."""
    from trainrecord.diary import write_seal

    return {"seal": write_seal(data["dir"], signing_key=data.get("key"))}


def report_job(data: dict[str, Any]) -> dict[str, Any]:
    """One job (or one resume of it) reported from start to end by a :class:`Reporter`."""
    from trainrecord.report import Reporter, ReportSettings, SeqClock

    # each progress() call is due: the Reporter sends progress at most once every `every`
    # seconds (§3), so the job asks for a tiny every instead of forcing it
    settings = ReportSettings(url=data["url"], every=1e-9, token=data["token"])
    clock = SeqClock(Path(data["seq_dir"]) / "report_seq.json", last_seq=data["last_seq"] or 0)
    state = _job_state(data["state"], _secrets(None))
    state.running, state.finished_at = True, None
    counter = _WarningCounter()
    logger = logging.getLogger("trainrecord.report")
    logger.addHandler(counter)
    try:
        reporter = Reporter(settings, state, seq=clock, flush_timeout=5.0)
        pause = float(data.get("pause") or 0)
        reporter.started()
        for _ in range(data["progress"]):
            time.sleep(pause)
            reporter.progress()
        time.sleep(pause)
        if data["end"] == "complete":
            reporter.complete()
        else:
            reporter.interrupted()
        closed = reporter.close(5.0)
    finally:
        logger.removeHandler(counter)
    return {"closed": closed, "warnings": counter.count}


def open_run(data: dict[str, Any]) -> dict[str, Any]:
    """Start or resume the run in ``dir``: its run_id from metadata.json (made if new)."""
    from trainrecord.report import open_run as start

    run = start(data["dir"], data.get("metadata"))
    return {"run_id": run.run_id, "created": run.created}


_SERVING: list[Any] = []
"""The receivers ``serve`` started: they serve, from daemon threads, until the process ends."""


def serve(data: dict[str, Any]) -> dict[str, Any]:
    """Start the reference receiver (``trainrecord serve``) on a free loopback port, its
    store in ``dir``, and keep it serving in this process; its URL."""
    from trainrecord.report import ReportStore, make_server

    folder = Path(data["dir"])
    folder.mkdir(parents=True, exist_ok=True)
    store = ReportStore(folder / "reports.sqlite")
    server = make_server("127.0.0.1", 0, token=data["token"], store=store)
    server.serve_in_thread()
    _SERVING.append(server)
    return {"url": server.url + "/api/runs", "read_url": server.url + "/api/runs"}


class _WarningCounter(logging.Handler):
    """Counts the warnings the reporter logs (the job's log, kept off stderr here)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


OPERATIONS: dict[str, Operation] = {
    "validate": validate,
    "line_hash": line_hash_op,
    "config_hash": config_hash,
    "write_witness": write_witness,
    "write_metrics": write_metrics,
    "read_witness": read_witness,
    "write_diary": write_diary,
    "verify_diary": verify_diary,
    "send_report": send_report,
    "read_metrics": read_metrics,
    "build_report": build_report,
    "report_status": report_status,
    "load_settings": load_settings,
    "keygen": keygen,
    "load_key": load_key,
    "seal": seal,
    "report_job": report_job,
    "append_diary": append_diary,
    "architecture": architecture,
    "open_run": open_run,
    "serve": serve,
}
"""Every operation of the protocol, by name."""


def problems_of(value: Any, schema_id: str) -> list[str]:
    """Rule ids of ``value`` against a schema (for harness self-checks)."""
    return sorted({p.rule for p in problems(value, schema_id)})


def resolve(path: str) -> Path:
    """A path from a run input, as a :class:`Path`."""
    return Path(path)
