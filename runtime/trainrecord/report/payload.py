"""Report payloads (§5 of the seed): the job state, the builders and the checks.

Public API:

* :class:`JobState`: the small, mutable state of one job (kind, identity, config, progress,
  validations, history, error). The job updates it; :func:`build_report` turns a copy of it
  into a report dict.
* :func:`build_report` ``(state, *, event, status, seq, sent_at, now=None) -> dict``: one
  complete report: progress with ``epochs_completed = len(history)``, ``epoch`` (the
  running epoch; also in a snapshot whose status is ``in progress``, null otherwise),
  ``fraction`` (training 95 % / validation 5 %; lesion 95 / 4 / 1) and ``eta_seconds`` as
  §5.2 and §5.3 define them.
* :func:`config`, :func:`validation_entry`, :func:`epoch_entry`: fill a kind's config,
  validation result or history entry with every field (missing ones null); unknown field
  names are refused (``report.*.fields.extra``). Their keyword arguments are typed per kind
  (overloads on ``Literal`` kinds, ``**values: Unpack[...]`` of the TypedDicts that
  ``make generate`` writes from the schema into ``trainrecord_spec.fields``), so an IDE
  completes the field names and mypy flags a misspelt one or a wrong value type.
* :class:`JobStateFields`: the keyword arguments of ``RunFolder.job_state`` (JobState's
  fields other than kind, run_id and config), typed the same way.
* :func:`error_info` ``(exc) -> {"type", "message"}``: the message scrubbed (§7) and at
  most 500 characters.
* :func:`problems` ``(payload) -> list[Problem]`` (schema, judged against the branch that
  ``kind`` selects, so errors are about that kind only), :func:`consistency_problems`
  (the cross-field guarantees ``report.consistency.*``), :func:`check_report` (all of
  them plus §7, raising :class:`~trainrecord.errors.RecordRefused`), and
  :func:`encode_report` (check and serialise to the UTF-8 body that is POSTed).
* :func:`local_time` ``(t=None) -> str``: ISO 8601 with the machine's UTC offset, to the
  second.
"""

from __future__ import annotations

import copy
import itertools
import json
import logging
import math
import numbers
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack, overload

from pydantic import ValidationError

from trainrecord.errors import Problem, RecordRefused
from trainrecord.report.privacy import (
    Secrets,
    exception_text,
    privacy_problems,
    scrub_message,
)

if TYPE_CHECKING:  # only for the type checker: importing trainrecord_spec loads pydantic
    from trainrecord_spec.fields import (
        LesionConfigFields,
        LesionEpochFields,
        LesionValidationFields,
        TrainingConfigFields,
        TrainingEpochFields,
        TrainingValidationFields,
        WordsetConfigFields,
    )

log = logging.getLogger("trainrecord.report")

REPORT_SCHEMA_ID = "https://trainrecord.dev/schemas/reporting/reporting.schema.json"
SCHEMA_VERSION = 2
KINDS = ("training", "lesion", "wordset")
Kind = Literal["training", "lesion", "wordset"]
EVENTS = ("started", "progress", "epoch_end", "complete", "interrupted", "failed", "snapshot")
STATUSES = ("in progress", "complete", "interrupted", "discarded", "failed", "stopped")
EVENT_STATUS: dict[str, tuple[str, ...]] = {
    "started": ("in progress",),
    "progress": ("in progress",),
    "epoch_end": ("in progress",),
    "complete": ("complete",),
    "interrupted": ("interrupted", "discarded"),
    "failed": ("failed",),
    "snapshot": STATUSES,
}
"""§3 and §6: which status each event is sent with."""

# Share of an epoch done at the start of each phase, and the phase's weight (§5.2, §5.4).
TRAINING_PHASES: dict[str, tuple[float, float]] = {
    "initial_validation": (0.0, 0.0),
    "training": (0.0, 0.95),
    "validation": (0.95, 0.05),
}
LESION_PHASES: dict[str, tuple[float, float]] = {
    "intact_validation": (0.0, 0.0),
    "intact_selectivity": (0.0, 0.0),
    "initial_validation": (0.0, 0.0),
    "initial_selectivity": (0.0, 0.0),
    "training": (0.0, 0.95),
    "validation": (0.95, 0.04),
    "selectivity": (0.99, 0.01),
}


@cache
def _schema() -> dict[str, Any]:
    from trainrecord.schemas import schema_by_id

    return schema_by_id(REPORT_SCHEMA_ID)


def fields_of(definition: str) -> tuple[str, ...]:
    """The field names of one ``$defs`` object of reporting.schema.json, in schema order."""
    return tuple(_schema()["$defs"][definition]["properties"])


def local_time(t: float | None = None) -> str:
    """``t`` (default now) as ISO 8601 with the machine's UTC offset, to the second."""
    moment = datetime.now() if t is None else datetime.fromtimestamp(t)
    return moment.astimezone().replace(microsecond=0).isoformat()


def check_kind(kind: Any) -> None:
    """Refuse a kind the report does not have (``report.kind.unknown``) at once, where it is
    given: left to the report's validation, it failed there with every field of a kind it
    could not know (48 problems for ``"train"``), or with a KeyError."""
    if not (isinstance(kind, str) and kind in KINDS):
        raise RecordRefused.one(
            "report.kind.unknown",
            ("kind",),
            f"kind must be one of {', '.join(KINDS)} (got {kind!r}); a training run is "
            '"training", a lesion run "lesion", a word set generation "wordset"',
        )


def _fill(definition: str, rule_prefix: str, values: Mapping[str, Any]) -> dict[str, Any]:
    names = fields_of(definition)
    extra = sorted(set(values) - set(names))
    if extra:
        raise RecordRefused(
            [
                Problem(
                    f"{rule_prefix}.fields.extra",
                    (name,),
                    f"{name!r} is not a field of {definition}; remove it",
                )
                for name in extra
            ]
        )
    return {name: values.get(name) for name in names}


@overload
def config(kind: Literal["training"], **values: Unpack[TrainingConfigFields]) -> dict[str, Any]: ...
@overload
def config(kind: Literal["lesion"], **values: Unpack[LesionConfigFields]) -> dict[str, Any]: ...
@overload
def config(kind: Literal["wordset"], **values: Unpack[WordsetConfigFields]) -> dict[str, Any]: ...
def config(kind: Kind, **values: Any) -> dict[str, Any]:
    """A kind's config with every field; missing ones are null (``lesioned_units`` empty).

    ``lesioned_units`` is a set of unit indices: it is given in ascending order without
    repeats, as the report requires, whatever order the job lists them in.
    """
    check_kind(kind)
    out = _fill(f"{kind}_config", "report.config", values)
    if kind == "lesion":
        units = list(values.get("lesioned_units") or [])
        if all(isinstance(u, int) and not isinstance(u, bool) for u in units):
            units = sorted(set(units))  # anything else is left for the schema to refuse
        out["lesioned_units"] = units
        if out["reset_outgoing"] is None:
            out["reset_outgoing"] = False
        if out["silent_epochs"] is None:
            out["silent_epochs"] = 0
    return out


@overload
def validation_entry(
    kind: Literal["training", "wordset"], **values: Unpack[TrainingValidationFields]
) -> dict[str, Any]: ...
@overload
def validation_entry(
    kind: Literal["lesion"], **values: Unpack[LesionValidationFields]
) -> dict[str, Any]: ...
def validation_entry(kind: Kind, **values: Any) -> dict[str, Any]:
    """One validation result (initial_validation, or lesion intact/lesioned), every field;
    a NaN or infinite value is null (see :func:`epoch_entry`)."""
    check_kind(kind)
    definition = "lesion_validation" if kind == "lesion" else "training_validation"
    return _finite(_fill(definition, "report.initial_validation", values), definition)


@overload
def epoch_entry(
    kind: Literal["training", "wordset"], **values: Unpack[TrainingEpochFields]
) -> dict[str, Any]: ...
@overload
def epoch_entry(kind: Literal["lesion"], **values: Unpack[LesionEpochFields]) -> dict[str, Any]: ...
def epoch_entry(kind: Kind, **values: Any) -> dict[str, Any]:
    """One history entry with every field of the kind; missing ones are null.

    A NaN or infinite value (a diverged epoch's loss) is null, the report's "no number",
    with a warning: kept, it would make every later report of the run, the final one
    included, break the spec (no NaN in JSON), and none of them could be sent."""
    check_kind(kind)
    definition = "lesion_epoch" if kind == "lesion" else "training_epoch"
    return _finite(_fill(definition, "report.history_entry", values), definition)


def mended_entry(
    kind: Kind,
    entry: Any,
    secrets: Secrets | None = None,
    where: str = "epoch_end",
    validation: bool = False,
) -> dict[str, Any] | None:
    """A history entry (``validation``: an initial validation result) as it may go into
    every later report of the run, or None.

    The history is sent whole in every report, so one entry that breaks the spec would make
    every later report of the run unsendable, the final one included. So an entry is mended
    where that keeps its meaning, with a warning naming the rules and fields: a number
    given as a numpy or torch scalar is the plain number; a nullable field with a wrong
    value (an accuracy of 150, NaN) or left out is null; a field that is not the entry's is
    removed. An entry still broken after that (``epoch`` not an integer, a lesion count not
    an integer, not an object at all) is left out of the history, with a warning naming the
    rule, the field and what to do; the job goes on and its reports are sent without it
    (§3: reporting never stops a run). ``where`` names the caller in the warnings. An
    initial validation result is mended the same way (its fields are all nullable)."""
    if validation:
        definition = "lesion_validation" if kind == "lesion" else "training_validation"
    else:
        definition = "lesion_epoch" if kind == "lesion" else "training_epoch"
    schema_id = f"{REPORT_SCHEMA_ID}#/$defs/{definition}"
    from trainrecord.schemas import problems

    if not isinstance(entry, Mapping):
        _left_out(
            where,
            validation,
            [
                Problem(
                    "report.initial_validation.type" if validation else "report.history_entry.type",
                    (),
                    f"{'a validation result' if validation else 'an epoch entry'} is an object "
                    f"(a dict), not {type(entry).__name__}",
                )
            ],
            secrets,
        )
        return None
    fixed = {key: _plain_number(value) for key, value in entry.items()}
    found = problems(fixed, schema_id)
    if not found:
        return fixed
    mended = dict(fixed)
    for problem in found:
        if not problem.path or not isinstance(problem.path[0], str):
            continue
        if problem.rule.endswith(".fields.extra"):
            mended.pop(problem.path[0], None)
        else:
            mended[problem.path[0]] = None
    left = problems(mended, schema_id)
    if left:
        broken = {p.path[:1] for p in left}  # name them by the values given, not the nulls
        _left_out(where, validation, [p for p in found if p.path[:1] in broken] or left, secrets)
        return None
    log.warning(
        "trainrecord report: %s: this entry breaks the spec (%s); those fields are "
        "reported as null (or left out, when they are not fields of an entry) so that the "
        "run's reports can still be sent",
        where,
        "; ".join(f"[{p.rule}] {p.field}" for p in found),
    )
    return {name: mended[name] for name in fields_of(definition)}


def consistent_entry(
    kind: Kind,
    cfg: Mapping[str, Any],
    entry: dict[str, Any] | None,
    secrets: Secrets | None = None,
    where: str = "epoch_end",
    validation: bool = False,
    previous_epoch: int | None = None,
) -> dict[str, Any] | None:
    """A mended entry (from :func:`mended_entry`) as it may go into every later report of a
    run with config ``cfg``, or None: the consistency rules that tie an entry to its run,
    applied as :func:`mended_entry` applies the schema (§3: reporting never stops a run).

    A value §5 says is null for this run is null, with a warning naming the rule and field:
    a ``*_words`` value of a pre or illit run (``report.consistency.no_words``), a
    ``mean_word_activation_lesioned`` without lesioned units
    (``report.consistency.mean_word_activation_lesioned``). An entry that cannot be mended
    is left out of the history (a validation result: reported as null), with a warning: a
    ``word_selective_lesioned`` above the number of lesioned units (an integer, never null:
    ``report.consistency.word_selective_lesioned``), an epoch not after ``previous_epoch``,
    the last entry's (``report.consistency.history_order``: oldest first)."""
    if entry is None:
        return None
    found = entry_problems(kind, cfg, entry)
    if not validation:
        order = epoch_order_problem(previous_epoch, entry.get("epoch"), ("epoch",))
        found += [order] if order is not None else []
    if not found:
        return entry
    fatal = [
        p
        for p in found
        if p.rule
        in ("report.consistency.word_selective_lesioned", "report.consistency.history_order")
    ]
    if fatal:
        _left_out(where, validation, fatal, secrets)
        return None
    mended = dict(entry)
    for problem in found:
        mended[str(problem.path[-1])] = None
    log.warning(
        "trainrecord report: %s: this entry breaks the spec (%s); those fields are "
        "reported as null so that the run's reports can still be sent",
        where,
        "; ".join(f"[{p.rule}] {p.field}: {p.message}" for p in found),
    )
    return mended


def _left_out(where: str, validation: bool, found: list[Problem], secrets: Secrets | None) -> None:
    """Warn that an epoch entry is left out of the history (``validation``: that a
    validation result is reported as null): rule, field, what to do."""
    text = "; ".join(str(p) for p in found)
    token = secrets.token if secrets is not None else None
    if token:
        text = text.replace(token, "<token>")
    if validation:
        log.warning(
            "trainrecord report: %s: the validation result is reported as null, since "
            "every later report carries it and none of them could be sent with it: %s. "
            "Build it with validation_entry(kind, ...): every field a number or None. The "
            "run and its reports go on",
            where,
            text,
        )
        return
    log.warning(
        "trainrecord report: %s: an epoch entry was left out of the run's history, since "
        "every later report carries the whole history and none of them could be sent "
        "with it: %s. Build the entry with epoch_entry(kind, epoch=<int>, ...): epoch "
        "(and a lesion entry's word_selective_* counts) an int, every other field a number "
        "or None. The run and its other reports go on; epochs_completed counts only the "
        "entries kept",
        where,
        text,
    )


def _plain_number(value: Any) -> Any:
    """A numpy or torch scalar (an integer by ``__index__``, or a real number) as the plain
    Python number it stands for; anything else unchanged."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():  # a 0-d array or tensor
        try:
            plain = item()
        except Exception:
            return value
        if isinstance(plain, int | float) and not isinstance(plain, bool):
            return plain
    return value


def _finite(entry: dict[str, Any], definition: str) -> dict[str, Any]:
    """``entry`` with every non-finite float (at the top level) replaced by null."""
    bad = [k for k, v in entry.items() if isinstance(v, float) and not math.isfinite(v)]
    for name in bad:
        log.warning(
            "trainrecord report: %s.%s is %r; it is reported as null (a report holds no "
            "NaN or infinity)",
            definition,
            name,
            entry[name],
        )
        entry[name] = None
    return entry


def error_info(exc: BaseException, secrets: Secrets | None = None) -> dict[str, str]:
    """``{"type": <exception class>, "message": <scrubbed, at most 500 characters>}``.

    Never raises: an exception whose ``str()`` fails (or gives no ``str``) has the message
    ``<str() of the exception failed: ...>``; raising here would replace the job's exception
    with the reporter's, and send no ``failed`` report."""
    return {
        "type": type(exc).__name__[:200] or "Exception",
        "message": scrub_message(exception_text(exc), secrets),
    }


class JobStateFields(TypedDict, total=False):
    """The keyword arguments of :meth:`RunFolder.job_state
    <trainrecord.report.RunFolder.job_state>`: every :class:`JobState` field but ``kind``,
    ``run_id`` and ``config`` (the run folder gives run_id; kind and config are its
    positional arguments), with JobState's types. tests/spec/test_typed_surface.py keeps
    the two in step."""

    name: str
    group: str
    host: str
    started_at: str | None
    finished_at: str | None
    running: bool
    epochs_first: int | None
    epochs_total: int | None
    phase: str | None
    batch: int | None
    batches: int | None
    initial_validation: dict[str, Any] | None
    history: list[dict[str, Any]]
    words_done: int | None
    words_total: int | None
    work_started: float
    words_at_start: int
    error: dict[str, str] | None


@dataclass
class JobState:
    """The state of one job that reports are built from. Mutable; the reporter copies it.

    ``config`` is the kind's config (see :func:`config`). Training and lesion use
    ``epochs_first``, ``epochs_total``, ``phase``, ``batch``, ``batches``,
    ``initial_validation`` and ``history`` (entries are never changed once appended);
    word sets use ``words_done`` and ``words_total``. ``work_started``/``words_at_start``
    (monotonic clock, this process) give the word set's time per word.

    Args:
        kind: ``"training"``, ``"lesion"`` or ``"wordset"``; anything else raises
            :class:`~trainrecord.errors.RecordRefused` (``report.kind.unknown``) at once.
        run_id: the run's UUID (from :func:`~trainrecord.report.open_run`'s metadata.json).
        name: the run's name (``run.job_state`` uses the run folder's name).
        group: the run's group (``run.job_state`` uses the name of the folder the run
            folder is in).
        config: the kind's config, see :func:`~trainrecord.report.config`.
        host: the machine's name (default: ``socket.gethostname()``).
        started_at: when the run first started, ISO 8601 local time with its UTC offset
            (default: now, :func:`~trainrecord.report.local_time`;
            ``run.job_state`` passes the run's first start).
        finished_at: when it finished; set by the Reporter's ``complete()`` and sent only
            with status ``complete`` (default None).
        running: whether the job's process is running it (default True; the Reporter sets
            it, and a snapshot sends false).
        epochs_first: the number of the run's first epoch (training, lesion; default None).
        epochs_total: the run's epoch count (training, lesion; default None).
        phase: the current phase (default None), e.g. ``"training"`` or ``"validation"``
            (§5.2, §5.4 name each kind's phases).
        batch: the current batch within the phase (default None).
        batches: the phase's batch count (default None).
        initial_validation: the result of the validation before training (default None).
        history: the epoch entries reported so far, oldest first (default empty).
        words_done: words generated so far (word set; default None).
        words_total: words to generate (word set; default None).
        work_started: ``time.monotonic()`` when this process started the work (default:
            now); with ``words_at_start``, the base of a word set's ETA.
        words_at_start: ``words_done`` when this process started (default 0; set it to
            ``words_done`` when a resumed word set starts).
        error: ``{"type": ..., "message": ...}`` of the exception that ended the job (see
            :func:`~trainrecord.report.error_info`); set by the Reporter's ``failed()``,
            sent only with status ``failed`` (default None).

    Build it with ``run.job_state(...)``, which fills run_id, name, group, started_at and
    the history a Reporter kept::

        run = open_run("models/pre/pre_s_49")
        state = run.job_state("training", config("training", mode="pre", batch_size=100,
                              lr=0.01), epochs_first=0, epochs_total=50)
    """

    kind: Kind
    run_id: str
    name: str
    group: str
    config: dict[str, Any]
    host: str = field(default_factory=socket.gethostname)
    started_at: str | None = field(default_factory=local_time)
    finished_at: str | None = None
    running: bool = True
    epochs_first: int | None = None
    epochs_total: int | None = None
    phase: str | None = None
    batch: int | None = None
    batches: int | None = None
    initial_validation: dict[str, Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    words_done: int | None = None
    words_total: int | None = None
    work_started: float = field(default_factory=time.monotonic)
    words_at_start: int = 0
    error: dict[str, str] | None = None

    def __post_init__(self) -> None:
        check_kind(self.kind)

    def snapshot(self) -> JobState:
        """A copy that later updates of this state do not change (cheap: history entries are
        shared, never mutated)."""
        out = copy.copy(self)
        out.history = list(self.history)
        return out


def _fraction(state: JobState, share: float) -> float | None:
    """The share of the run done: a word set's words_done of words_total; a training or
    lesion run's ``(epochs_completed + share) / epochs_total``, with ``share`` the part of
    the current epoch that the report shows (:func:`_epoch_share`, or 0 when it shows no
    phase), so a reader recomputes it from the report's own progress fields."""
    if state.kind == "wordset":
        if state.words_done is None or not state.words_total:
            return 0.0 if state.words_total == 0 and state.words_done is not None else None
        return round(min(1.0, state.words_done / state.words_total), 4)
    if not state.epochs_total:
        return None
    done = len(state.history) + share
    return round(min(1.0, max(0.0, done / state.epochs_total)), 4)


def _epoch_share(state: JobState) -> float:
    """The part of the current epoch done by the state's phase, batch and batches (§5.2,
    §5.4). Only for a report that shows them (its ``running``): any other report counts
    the finished epochs alone."""
    if state.phase is None:
        return 0.0
    phases = LESION_PHASES if state.kind == "lesion" else TRAINING_PHASES
    start, weight = phases.get(state.phase, (0.0, 0.0))
    within = 0.0
    if state.batch is not None and state.batches:
        within = min(1.0, max(0.0, state.batch / state.batches))
    return start + weight * within


def _eta(state: JobState, share: float, now: float) -> int | None:
    """Seconds left, for a report of the running process (the only one that shows an ETA);
    ``share`` as for :func:`_fraction`, the part of the current epoch the report shows."""
    if state.kind == "wordset":
        done = (state.words_done or 0) - state.words_at_start
        if state.words_done is None or state.words_total is None or done <= 0:
            return None
        per_word = max(0.0, now - state.work_started) / done
        return max(0, round(per_word * max(0, state.words_total - state.words_done)))
    given = [e.get("duration_seconds") for e in state.history]
    durations = [d for d in given if isinstance(d, int | float) and math.isfinite(d)]
    if not durations or state.epochs_total is None:
        return None
    left = state.epochs_total - len(state.history) - share
    return max(0, round(left * sum(durations) / len(durations)))


def build_report(
    state: JobState, *, event: str, status: str, seq: int, sent_at: str, now: float | None = None
) -> dict[str, Any]:
    """One complete report (all of §5.1 plus the kind's shapes) from a job state."""
    now = time.monotonic() if now is None else now
    running = state.running and status == "in progress" and event != "snapshot"
    # fraction and eta_seconds count the current epoch's share only where the report shows
    # its phase, batch and batches (``running``): a reader recomputes them from the report
    share = _epoch_share(state) if running and state.kind != "wordset" else 0.0
    if state.kind == "wordset":
        # §5.3: words_done is "null in a snapshot of an unfinished set" (and so is fraction,
        # its share of words_total)
        unfinished = event == "snapshot" and status != "complete"
        progress: dict[str, Any] = {
            "words_done": None if unfinished else state.words_done,
            "words_total": state.words_total,
            "fraction": None if unfinished else _fraction(state, share),
        }
        initial, history = None, None
    else:
        completed = len(state.history)
        # epoch is the one running now (§5.2): known inside the training process while it
        # runs, and in a snapshot of a run recorded as in progress (another process).
        in_progress = running or (event == "snapshot" and status == "in progress")
        epoch = (
            state.epochs_first + completed
            if in_progress and state.epochs_first is not None
            else None
        )
        progress = {
            "epochs_first": state.epochs_first,
            "epochs_total": state.epochs_total,
            "epochs_completed": completed,
            "epoch": epoch,
            "phase": state.phase if running else None,
            "batch": state.batch if running else None,
            "batches": state.batches if running else None,
            "fraction": _fraction(state, share),
        }
        initial, history = state.initial_validation, list(state.history)
    return {
        "schema": SCHEMA_VERSION,
        "seq": seq,
        "sent_at": sent_at,
        "run_id": state.run_id,
        "kind": state.kind,
        "name": state.name,
        "group": state.group,
        "host": state.host,
        "event": event,
        "status": status,
        "started_at": state.started_at,
        "finished_at": state.finished_at if status == "complete" else None,
        "config": state.config,
        "progress": progress,
        "eta_seconds": _eta(state, share, now) if running else None,
        "initial_validation": initial,
        "history": history,
        "error": state.error if status == "failed" else None,
    }


def problems(payload: Any) -> list[Problem]:
    """Schema problems of a report, each with its rule id.

    The schema's ``oneOf`` over ``kind`` carries a discriminator, so the oracle judges a
    report of a known kind against that kind's branch only: a bad field is reported once.
    """
    from trainrecord import schemas

    return schemas.problems(payload, REPORT_SCHEMA_ID)


def consistency_problems(payload: Mapping[str, Any]) -> list[Problem]:
    """The cross-field guarantees of a report the client sends (``report.consistency.*``)."""
    out: list[Problem] = []
    event, status = payload.get("event"), payload.get("status")
    allowed = EVENT_STATUS.get(str(event), ())
    if status not in allowed or (status == "stopped" and event != "snapshot"):
        out.append(
            Problem(
                "report.consistency.event_status",
                ("status",),
                f"event {event!r} is sent with status {' or '.join(allowed)}",
                repr(status),
            )
        )
    if (payload.get("error") is not None) != (status == "failed"):
        out.append(
            Problem(
                "report.consistency.error",
                ("error",),
                "error is an object exactly when status is failed",
            )
        )
    if (payload.get("finished_at") is not None) != (status == "complete"):
        out.append(
            Problem(
                "report.consistency.finished_at",
                ("finished_at",),
                "finished_at is set exactly when status is complete",
            )
        )
    progress = payload.get("progress") or {}
    history = payload.get("history")
    if payload.get("kind") in ("training", "lesion"):
        if isinstance(history, list) and progress.get("epochs_completed") != len(history):
            out.append(
                Problem(
                    "report.consistency.epochs_completed",
                    ("progress", "epochs_completed"),
                    "epochs_completed equals the length of history",
                )
            )
        if payload.get("eta_seconds") is not None and not history:
            out.append(
                Problem(
                    "report.consistency.eta",
                    ("eta_seconds",),
                    "eta_seconds is null until the first epoch has finished",
                )
            )
    unfinished = payload.get("event") == "snapshot" and status != "complete"
    if payload.get("kind") == "wordset" and unfinished:
        for name in ("words_done", "fraction"):
            if progress.get(name) is not None:
                out.append(
                    Problem(
                        "report.consistency.words_done",
                        ("progress", name),
                        f"{name} is null in a snapshot of an unfinished word set (§5.3)",
                    )
                )
    if payload.get("eta_seconds") is not None and status != "in progress":
        out.append(
            Problem(
                "report.consistency.eta",
                ("eta_seconds",),
                "eta_seconds is null unless status is in progress",
            )
        )
    elif payload.get("eta_seconds") is not None and event == "snapshot":
        out.append(
            Problem(
                "report.consistency.eta",
                ("eta_seconds",),
                "eta_seconds is null in every snapshot (only the training process knows it)",
            )
        )
    if payload.get("kind") == "lesion":
        cfg = payload.get("config") or {}
        units = cfg.get("lesioned_units") or []
        if any(b <= a for a, b in itertools.pairwise(units)):
            out.append(
                Problem(
                    "report.consistency.lesioned_units",
                    ("config", "lesioned_units"),
                    "units are strictly ascending",
                )
            )
        channel = cfg.get("word_channel")
        if isinstance(channel, dict) and channel.get("first", 0) > channel.get("last", 0):
            out.append(
                Problem(
                    "report.consistency.lesioned_units",
                    ("config", "word_channel"),
                    "word_channel.first is at most word_channel.last",
                )
            )
    return out + _field_rule_problems(payload)


NO_WORDS_MODES = ("pre", "illit")
"""§5.2: "*_words is null for pre and illit, which have no words"."""


def _entries(payload: Mapping[str, Any]) -> list[tuple[tuple[str | int, ...], Mapping[str, Any]]]:
    """Every validation result and history entry of a training or lesion report, with its
    path: initial_validation (a lesion's intact and lesioned), then history in order."""
    out: list[tuple[tuple[str | int, ...], Mapping[str, Any]]] = []
    initial = payload.get("initial_validation")
    if payload.get("kind") == "lesion" and isinstance(initial, Mapping):
        for which in ("intact", "lesioned"):
            if isinstance(initial.get(which), Mapping):
                out.append((("initial_validation", which), initial[which]))
    elif isinstance(initial, Mapping):
        out.append((("initial_validation",), initial))
    history = payload.get("history")
    if isinstance(history, list):
        out += [(("history", n), e) for n, e in enumerate(history) if isinstance(e, Mapping)]
    return out


def entry_problems(
    kind: Any, cfg: Any, entry: Any, path: tuple[str | int, ...] = ()
) -> list[Problem]:
    """What breaks, in one validation result or history ``entry`` of a run with config
    ``cfg``, the rules that tie its fields to the run's config:
    ``report.consistency.no_words`` (no *_words value in a pre or illit run),
    ``report.consistency.mean_word_activation_lesioned`` (null without lesioned units) and
    ``report.consistency.word_selective_lesioned`` (at most the lesioned units)."""
    if not isinstance(entry, Mapping) or not isinstance(cfg, Mapping):
        return []
    out: list[Problem] = []
    if kind == "training" and cfg.get("mode") in NO_WORDS_MODES:
        for name in entry:
            if str(name).endswith("_words") and entry[name] is not None:
                out.append(
                    Problem(
                        "report.consistency.no_words",
                        (*path, str(name)),
                        f"{name} is null for a {cfg.get('mode')} run, which has no words "
                        "(§5.2); report the words' loss and accuracy only for literate runs",
                        repr(entry[name]),
                    )
                )
    if kind == "lesion":
        units = cfg.get("lesioned_units")
        count = len(units) if isinstance(units, list) else None
        mean = entry.get("mean_word_activation_lesioned")
        if count == 0 and mean is not None:
            out.append(
                Problem(
                    "report.consistency.mean_word_activation_lesioned",
                    (*path, "mean_word_activation_lesioned"),
                    "mean_word_activation_lesioned is null without lesioned units (§5.4: "
                    "config.lesioned_units is empty, so there is nothing to average over)",
                    repr(mean),
                )
            )
        selective = entry.get("word_selective_lesioned")
        if (
            count is not None
            and isinstance(selective, int)
            and not isinstance(selective, bool)
            and selective > count
        ):
            out.append(
                Problem(
                    "report.consistency.word_selective_lesioned",
                    (*path, "word_selective_lesioned"),
                    f"word_selective_lesioned counts lesioned units, so it is at most the "
                    f"{count} of config.lesioned_units (§5.4)",
                    repr(selective),
                )
            )
    return out


def epoch_order_problem(previous: Any, epoch: Any, path: tuple[str | int, ...]) -> Problem | None:
    """``report.consistency.history_order``: an entry's epoch after ``previous`` (the entry
    before it), or None when it is in order (or either is not an integer: the schema's
    job)."""
    numbers = [v for v in (previous, epoch) if isinstance(v, int) and not isinstance(v, bool)]
    if len(numbers) < 2 or epoch > previous:
        return None
    return Problem(
        "report.consistency.history_order",
        path,
        f"history is one entry per finished epoch, oldest first (§5.2): epoch {epoch} comes "
        f"after epoch {previous}; each entry's epoch is greater than the one before it",
        repr(epoch),
    )


def _field_rule_problems(payload: Mapping[str, Any]) -> list[Problem]:
    """The consistency rules between a report's config and its other fields (§5.2, §5.4)."""
    kind, cfg = payload.get("kind"), payload.get("config")
    if kind not in ("training", "lesion") or not isinstance(cfg, Mapping):
        return []
    out: list[Problem] = []
    if kind == "training" and cfg.get("mode") == "pre" and cfg.get("pre_name") is not None:
        out.append(
            Problem(
                "report.consistency.pre_name",
                ("config", "pre_name"),
                "pre_name is null for a pre run (§5.2: it names the pre-literate model a "
                "literate or illiterate run starts from)",
                repr(cfg.get("pre_name")),
            )
        )
    if (
        kind == "lesion"
        and cfg.get("source_mode") == "lit_no_bias"
        and cfg.get("word_channel") is not None
    ):
        out.append(
            Problem(
                "report.consistency.word_channel",
                ("config", "word_channel"),
                "word_channel is null for the unbiased model (§5.4: source_mode lit_no_bias)",
            )
        )
    for path, entry in _entries(payload):
        out += entry_problems(kind, cfg, entry, path)
    history = payload.get("history")
    if isinstance(history, list):
        epochs = [e.get("epoch") if isinstance(e, Mapping) else None for e in history]
        for n, (a, b) in enumerate(itertools.pairwise(epochs), start=1):
            problem = epoch_order_problem(a, b, ("history", n, "epoch"))
            if problem is not None:
                out.append(problem)
    return out


def check_report(payload: Any, secrets: Secrets | None = None) -> None:
    """Raise :class:`RecordRefused` unless the report is one the client may send."""
    found = problems(payload)
    if not found:
        found = consistency_problems(payload) + privacy_problems(payload, secrets)
    if found:
        raise RecordRefused(found)


def encode_report(payload: Mapping[str, Any], secrets: Secrets | None = None) -> bytes:
    """Check a report and serialise it as the UTF-8 strict-JSON body that is POSTed.

    The fast path validates the JSON text with the generated strict model; only a refused
    report goes through the oracle, for rule ids.
    """
    import trainrecord_spec

    try:
        text = json.dumps(payload, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except ValueError:
        raise RecordRefused.one(
            "report.transport.body", (), "a number in the report is NaN or infinite; send null"
        ) from None
    try:
        trainrecord_spec.adapter(REPORT_SCHEMA_ID).validate_json(text)
    except ValidationError:
        check_report(payload, secrets)
        raise RecordRefused.one(
            "report.transport.body",
            (),  # pragma: no cover
            "the report was refused by the schema model",
        ) from None
    found = consistency_problems(payload) + privacy_problems(payload, secrets)
    if found:
        raise RecordRefused(found)
    return text.encode("utf-8")
