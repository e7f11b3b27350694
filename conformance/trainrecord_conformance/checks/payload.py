"""Reporting API v2, the payload builder and ``report_status()`` (§3, §5, §6, §7).

Through ``build_report``: the suite gives a job state (derived from the spec's valid,
consistent report vectors), an event and a status, and judges the report the client would
send: schema-valid, ``report.consistency.*`` (checked here by the suite's own predicates,
not the runtime's), nothing beyond §5 (the job's config holds seeds, git details, word lists
... that must stay home), and no secret (the token, the home folder, the user name, the
process id, an absolute path) even when the job's error message holds them all.
A builder may instead refuse an input that cannot make a consistent report (a complete job
without finished_at, unsorted lesioned units), naming the rule; a consistent input must
build.

Through ``report_status``: a report that does not get through raises with the status code
and the first 300 characters of the response body; a server that echoes the Authorization
header (as sent, percent-encoded, or across the 300-character cut) never gets the token, or
the start of it, into the raised message (:mod:`trainrecord_conformance.checks.echo`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from functools import cache
from typing import Any
from urllib.parse import quote, unquote

from hypothesis import strategies as st

from trainrecord_conformance import strategies as S
from trainrecord_conformance.checks.base import Check, Context, Failed
from trainrecord_conformance.checks.echo import FORMS, EchoServer
from trainrecord_conformance.checks.receiver import answer_body
from trainrecord_conformance.checks.reporting import (
    REPORT,
    _vector_reports,
    receiver,
    token,
    valid_report_vectors,
)
from trainrecord_conformance.checks.settings import _encode
from trainrecord_conformance.targets import Target

BUILD = frozenset({"build_report"})
STATUS = frozenset({"report_status"})

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
"""§3 and §6, as the suite reads them (stopped appears only in a snapshot)."""
ALLOWED = tuple((e, s) for e, ss in EVENT_STATUS.items() for s in ss)
PAIRS = tuple(itertools.product(EVENT_STATUS, STATUSES))

JOB_EXTRAS = (
    "seed",
    "git_commit",
    "git_branch",
    "git_dirty",
    "words",
    "word_list",
    "per_class_accuracy",
    "unit_values",
    "checkpoint_sha256",
)
"""What a job's configuration may hold that §5 never lets a report carry."""

TRAINING_SHARES: dict[str, tuple[float, float]] = {
    "initial_validation": (0.0, 0.0),
    "training": (0.0, 0.95),
    "validation": (0.95, 0.05),
}
"""§5.2 as the suite reads it: the share of an epoch done when each phase starts, and the
phase's weight (training 95 %, validation 5 %, the initial validation nothing)."""
LESION_SHARES: dict[str, tuple[float, float]] = {
    "intact_validation": (0.0, 0.0),
    "intact_selectivity": (0.0, 0.0),
    "initial_validation": (0.0, 0.0),
    "initial_selectivity": (0.0, 0.0),
    "training": (0.0, 0.95),
    "validation": (0.95, 0.04),
    "selectivity": (0.99, 0.01),
}
"""§5.4: training 95 %, validation 4 %, the selectivity measurement 1 %; the phases before
the first epoch nothing."""


def base_state(report: dict[str, Any]) -> dict[str, Any]:
    """A running job's state from a valid report (its progress, config and history)."""
    progress = report.get("progress") or {}
    state = {
        k: report[k] for k in ("kind", "run_id", "name", "group", "host", "started_at", "config")
    }
    state.update(
        {
            k: progress.get(k)
            for k in (
                "epochs_first",
                "epochs_total",
                "phase",
                "batch",
                "batches",
                "words_done",
                "words_total",
            )
        }
    )
    state.update(
        finished_at=None,
        running=True,
        initial_validation=report.get("initial_validation"),
        history=list(report.get("history") or []),
        error=None,
    )
    return state


def secrets_of(draw: Callable[..., Any]) -> dict[str, Any]:
    """Secrets the builder must treat as its own process's (a user name of 2 to 9
    characters: short names are names too)."""
    user = "u" + draw(st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8))
    return {
        "token": "tok" + draw(st.text("0123456789abcdef", min_size=16, max_size=24)),
        "home": draw(st.sampled_from(["/home/", "/Users/", "/srv/homes/"])) + user,
        "user": user,
        "pid": draw(st.integers(1000, 4_000_000)),
    }


def worker_pids(secrets: dict[str, Any]) -> tuple[int, int, int]:
    """Other processes' ids (the job's workers) that an error message names."""
    return secrets["pid"] + 1, secrets["pid"] + 2, secrets["pid"] + 3


def secret_message(secrets: dict[str, Any]) -> str:
    """An exception message holding every secret §7 names, process ids in the forms error
    messages write them (PyTorch's DataLoader: ``pid(s) 1, 2``) and a one-part path."""
    a, b, c = worker_pids(secrets)
    return (
        f"cannot read {secrets['home']}/runs/model.pt as {secrets['user']} in process "
        f"{secrets['pid']} (token {secrets['token']}; scratch /var/tmp/job/cache.bin); "
        f"DataLoader worker (pid(s) {a}, {b}) exited unexpectedly; worker PID={c} "
        "could not open '/model.pt'"
    )


def job_input(
    report: dict[str, Any],
    event: str,
    status: str,
    secrets: dict[str, Any],
    *,
    finished: bool,
    failed: bool,
    history: bool = True,
    seq: int = 0,
    message: str | None = None,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A build_report input: the job of a vector ``report`` under ``event`` and ``status``,
    with a finished_at when ``finished``, an error (``message``, by default
    :func:`secret_message`) when ``failed``, its history kept or emptied, its config
    changed by ``config``."""
    state = base_state(report)
    state["running"] = status == "in progress"
    if finished:
        state["finished_at"] = state["started_at"] or report["sent_at"]
    if failed:
        text = secret_message(secrets) if message is None else message
        state["error"] = {"type": "OSError", "message": text}
    if not history:
        state["history"] = []
    if config:
        state["config"] = {**state["config"], **config}
    return {
        "state": state,
        "event": event,
        "status": status,
        "seq": seq,
        "sent_at": report["sent_at"],
        "secrets": secrets,
    }


@st.composite
def cases(draw: Callable[..., Any], pairs: tuple[tuple[str, str], ...] = ALLOWED) -> dict[str, Any]:
    """A build_report input: a state, an event and status, and the process's secrets (a
    word set has no epoch_end event)."""
    report = draw(st.sampled_from(_vector_reports()))
    kind_pairs = [p for p in pairs if p[0] != "epoch_end" or report["kind"] != "wordset"]
    event, status = draw(st.sampled_from(kind_pairs))
    secrets = secrets_of(draw)
    finished = status == "complete" or (draw(st.booleans()) and status != "in progress")
    failed = status == "failed" or (status != "in progress" and draw(st.booleans()))
    history = not draw(st.booleans())
    seq = draw(st.integers(0, 2**53 - 1))
    return job_input(
        report, event, status, secrets, finished=finished, failed=failed, history=history, seq=seq
    )


EDGE_SECRETS = {"token": "tok0123456789abcdef", "home": "/home/ua", "user": "ua", "pid": 1000}
"""The fixed cases' secrets: the shortest token, user name and pid :func:`secrets_of`
draws."""


def edge_input(
    event: str,
    status: str,
    kind: str = "lesion",
    *,
    finished: bool | None = None,
    failed: bool | None = None,
    **changes: Any,
) -> dict[str, Any]:
    """A fixed build_report input: the first vector job of ``kind`` under ``event`` and
    ``status``, finished exactly when complete and failed exactly when failed unless told
    otherwise; ``changes`` as :func:`job_input` takes them."""
    report = _job_report(kind)
    return job_input(
        report,
        event,
        status,
        EDGE_SECRETS,
        finished=status == "complete" if finished is None else finished,
        failed=status == "failed" if failed is None else failed,
        **changes,
    )


def _job_report(kind: str) -> dict[str, Any]:
    """The first consistent vector report of ``kind``; for training, whose vectors all
    shorten their history as the seed's example does, the seed's progress example itself
    (a state built from it counts epochs_completed from its history, so it is consistent)."""
    for report in _vector_reports():
        if report["kind"] == kind:
            return report
    return _training_report()


@cache
def _training_report() -> dict[str, Any]:
    """The spec's first valid training report vector (the seed's progress example)."""
    for data in valid_report_vectors():
        if isinstance(data, dict) and data.get("kind") == "training":
            return dict(data)
    raise AssertionError("the spec has no valid training report vector")


FRACTION_PROGRESS = (
    ("training", 7, 100),  # the probe's snapshot: 7 of 100 training batches
    ("validation", 3, 4),
    ("selectivity", 1, 2),
    ("initial_validation", 5, 10),
    ("training", 12, 10),  # past the last batch: the share of the phase stops at 1
    ("training", 5, 0),  # no batch count: the phase's start
    ("validation", None, 100),
    (None, None, None),
)
"""Phase, batch and batches of the fraction rule's fixed states (selectivity for lesion
only: a training run has no such phase)."""
FRACTION_PAIRS = (
    ("progress", "in progress"),
    ("snapshot", "in progress"),
    ("snapshot", "stopped"),
    ("failed", "failed"),
    ("complete", "complete"),
)


def _fraction_edges() -> list[dict[str, Any]]:
    """Each kind with epochs (a short and the vector's run) at each point of
    :data:`FRACTION_PROGRESS`, under a report that shows the phase and reports that do not:
    snapshots of a job in progress (the probe) or stopped, a failed and a complete job whose
    state still says it runs; no history, and no or zero epochs_total (fraction null)."""
    out = []
    for kind in ("training", "lesion"):
        shares = LESION_SHARES if kind == "lesion" else TRAINING_SHARES
        for (phase, batch, batches), (event, status) in itertools.product(
            FRACTION_PROGRESS, FRACTION_PAIRS
        ):
            if phase is not None and phase not in shares:
                continue
            case = edge_input(event, status, kind)
            case["state"].update(phase=phase, batch=batch, batches=batches, running=True)
            out.append(case)
        for total, history in ((4, True), (2, False), (1, True), (None, True), (0, True)):
            for event, status in FRACTION_PAIRS[:2]:
                case = edge_input(event, status, kind, history=history)
                case["state"].update(
                    phase="training", batch=7, batches=100, epochs_total=total, running=True
                )
                out.append(case)
    return out


@st.composite
def fraction_cases(draw: Callable[..., Any]) -> dict[str, Any]:
    """A training or lesion job anywhere in an epoch (any phase of its kind or none, any
    batch and batch count), with few or many epochs, under any allowed event and status;
    its state says it runs, or (when the status is not in progress) either way."""
    kind = draw(st.sampled_from(("training", "lesion")))
    event, status = draw(st.sampled_from(ALLOWED))
    case = edge_input(event, status, kind, history=draw(st.booleans()))
    phases = sorted(LESION_SHARES if kind == "lesion" else TRAINING_SHARES)
    count = st.none() | st.integers(0, 300)
    case["state"].update(
        phase=draw(st.none() | st.sampled_from(phases)),
        batch=draw(count),
        batches=draw(count),
        epochs_total=draw(st.none() | st.integers(0, 60)),
        running=status == "in progress" or draw(st.booleans()),
    )
    return case


def shown_fraction(report: dict[str, Any]) -> float | None:
    """The fraction a training or lesion report's own progress fields give, unrounded:
    ``(epochs_completed + share) / epochs_total`` within 0 and 1, the share from the phase,
    batch and batches it shows (0 with no phase); null without epochs_total (or 0)."""
    progress = report.get("progress") or {}
    total, done = progress.get("epochs_total"), progress.get("epochs_completed")
    if not total or not isinstance(done, int):
        return None
    shares = LESION_SHARES if report.get("kind") == "lesion" else TRAINING_SHARES
    start, weight = shares.get(str(progress.get("phase")), (0.0, 0.0))
    batch, batches = progress.get("batch"), progress.get("batches")
    within = min(1.0, max(0.0, batch / batches)) if batch is not None and batches else 0.0
    return min(1.0, max(0.0, (done + start + weight * within) / total))


def _consistency_edges() -> dict[str, list[dict[str, Any]]]:
    """The fixed inputs of each consistency rule (see :func:`consistency_edges`)."""
    epochs = [
        edge_input(event, status, history=history)
        for event, status in (
            ("epoch_end", "in progress"),
            ("progress", "in progress"),
            ("interrupted", "interrupted"),
            ("complete", "complete"),
        )
        for history in (False, True)
    ] + [edge_input("progress", "in progress", "wordset")]
    snapshots = [  # of a running job with finished epochs (words drawn): still no ETA
        edge_input("snapshot", "in progress", kind) for kind in ("lesion", "wordset")
    ]
    lesion = ("epoch_end", "in progress")
    return {
        "report.consistency.event_status": [
            *(edge_input(e, s) for e, s in PAIRS if (e, s) not in ALLOWED),
            edge_input("progress", "in progress", "wordset"),
        ],
        "report.consistency.error": [
            edge_input("failed", "failed"),
            edge_input("snapshot", "failed"),
            edge_input("failed", "failed", failed=False),
            edge_input("interrupted", "interrupted", failed=True),
            edge_input("interrupted", "discarded", failed=True),
            edge_input("snapshot", "stopped", failed=True),
            edge_input("complete", "complete", failed=True),
        ],
        "report.consistency.finished_at": [
            edge_input("complete", "complete"),
            edge_input("complete", "complete", finished=False),
            edge_input("interrupted", "interrupted", finished=True),
            edge_input("failed", "failed", finished=True),
            edge_input("snapshot", "stopped", finished=True),
        ],
        "report.consistency.words_done": [
            edge_input(event, status, "wordset")
            for event, status in ALLOWED
            if event != "epoch_end" and (event == "snapshot" or status == "in progress")
        ],
        "report.consistency.epochs_completed": epochs,
        "report.consistency.eta": epochs + snapshots,
        "report.consistency.fraction": _fraction_edges(),
        "report.consistency.lesioned_units": [
            *(
                _units_input(units)
                for units in ([3, 17, 17, 470], [3, 17, 470, 463], [470, 463, 17, 3], [3], [])
            ),
            *(
                edge_input(*lesion, config={"word_channel": {"first": first, "last": 463}})
                for first in (463, 464)
            ),
        ],
        **_field_rule_edges(),
    }


def _changed(
    case: dict[str, Any],
    *,
    config: dict[str, Any] | None = None,
    entries: dict[str, Any] | None = None,
    epochs: list[int] | None = None,
) -> dict[str, Any]:
    """``case`` with its job's config changed by ``config``, every validation result and
    history entry by ``entries``, and the history's epochs set to ``epochs`` (entries
    copied from the first one as needed)."""
    state = {**case["state"], "config": {**case["state"]["config"], **(config or {})}}
    history = [dict(e) for e in state["history"]]
    if epochs is not None:
        history = [{**history[0], "epoch": n} for n in epochs]
    initial = state["initial_validation"]
    if entries:
        history = [{**e, **entries} for e in history]
        if state["kind"] == "lesion" and isinstance(initial, dict):
            initial = {k: v if v is None else {**v, **entries} for k, v in initial.items()}
        elif isinstance(initial, dict):
            initial = {**initial, **{k: v for k, v in entries.items() if k in initial}}
    state["history"], state["initial_validation"] = history, initial
    return {**case, "state": state}


def _units_input(units: list[int]) -> dict[str, Any]:
    """A lesion job with ``units`` as its lesioned units, its unit counts and means kept
    consistent with them (at most that many word-selective, no mean without units)."""
    case = edge_input("epoch_end", "in progress", config={"lesioned_units": units})
    count = len(set(units))
    entries: dict[str, Any] = {"word_selective_lesioned": min(2, count)}
    if not units:
        entries["mean_word_activation_lesioned"] = None
    return _changed(case, entries=entries)


TRAINING_WORDS = (
    "train_loss_words",
    "train_accuracy_words",
    "val_loss_words",
    "val_accuracy_words",
)


def _field_rule_edges() -> dict[str, list[dict[str, Any]]]:
    """The inputs that define the rules tying a report's fields to its config: a pre and an
    illit job with word results and a literate one with them; a pre job with a pre_name and
    an illit one with it; histories out of order, repeated and with a gap; an unbiased
    lesion with and without a word channel and a biased one without; no lesioned units with
    and without a mean; word-selective counts at and above the lesioned units."""
    training = edge_input("progress", "in progress", "training")
    lesion = edge_input("epoch_end", "in progress")
    words = dict.fromkeys(TRAINING_WORDS, 0.3)
    val_words = {"val_loss_words": 0.3, "val_accuracy_words": 60.0}
    no_units: dict[str, Any] = {"lesioned_units": []}
    return {
        "report.consistency.no_words": [
            _changed(training, entries=words),
            _changed(training, config={"mode": "illit"}, entries=val_words),
            _changed(training, config={"mode": "illit"}, entries={"train_accuracy_words": 5.0}),
            _changed(training, config={"mode": "lit_bias", "pre_name": "pre_s_49"}, entries=words),
            _changed(training, config={"mode": "lit_no_bias"}, entries=val_words),
            training,
        ],
        "report.consistency.pre_name": [
            _changed(training, config={"pre_name": "pre_s_49"}),
            _changed(training, config={"mode": "illit", "pre_name": "pre_s_49"}),
            _changed(training, config={"mode": "illit", "pre_name": None}),
            training,
        ],
        "report.consistency.history_order": [
            _changed(training, epochs=[1, 0]),
            _changed(training, epochs=[0, 0]),
            _changed(training, epochs=[0, 2]),
            _changed(training, epochs=[0, 1, 2]),
            _changed(lesion, epochs=[80, 80]),
            _changed(lesion, epochs=[81, 80]),
            _changed(lesion, epochs=[80, 81]),
        ],
        "report.consistency.word_channel": [
            _changed(lesion, config={"source_mode": "lit_no_bias"}),
            _changed(lesion, config={"source_mode": "lit_no_bias", "word_channel": None}),
            _changed(lesion, config={"word_channel": None}),
            lesion,
        ],
        "report.consistency.mean_word_activation_lesioned": [
            _changed(lesion, config=no_units, entries={"word_selective_lesioned": 0}),
            _changed(
                lesion,
                config=no_units,
                entries={"word_selective_lesioned": 0, "mean_word_activation_lesioned": None},
            ),
            _changed(
                lesion, config={"lesioned_units": [3]}, entries={"word_selective_lesioned": 1}
            ),
        ],
        "report.consistency.word_selective_lesioned": [
            _changed(
                lesion, config={"lesioned_units": [3, 17]}, entries={"word_selective_lesioned": 2}
            ),
            _changed(
                lesion, config={"lesioned_units": [3, 17]}, entries={"word_selective_lesioned": 3}
            ),
            _changed(
                lesion,
                config=no_units,
                entries={"word_selective_lesioned": 1, "mean_word_activation_lesioned": None},
            ),
            lesion,
        ],
    }


def field_rule_breaks(state: dict[str, Any]) -> set[str]:
    """The rules tying fields to the config (§5.2, §5.4) that a job state or a report
    breaks, by the suite's own reading: *_words null for pre and illit, pre_name null for
    pre, word_channel null for lit_no_bias, no mean_word_activation_lesioned without
    lesioned units, word_selective_lesioned at most the lesioned units, history epochs
    increasing."""
    kind, cfg = state.get("kind"), state.get("config") or {}
    out: set[str] = set()
    if kind not in ("training", "lesion"):
        return out
    initial = state.get("initial_validation")
    history = [e for e in state.get("history") or [] if isinstance(e, dict)]
    if kind == "lesion":
        entries = [v for v in (initial or {}).values() if isinstance(v, dict)] + history
    else:
        entries = ([initial] if isinstance(initial, dict) else []) + history
    words = any(e.get(k) is not None for e in entries for k in TRAINING_WORDS)
    if kind == "training" and cfg.get("mode") in ("pre", "illit") and words:
        out.add("report.consistency.no_words")
    if kind == "training" and cfg.get("mode") == "pre" and cfg.get("pre_name") is not None:
        out.add("report.consistency.pre_name")
    if kind == "lesion":
        if cfg.get("source_mode") == "lit_no_bias" and cfg.get("word_channel") is not None:
            out.add("report.consistency.word_channel")
        units = cfg.get("lesioned_units") or []
        if not units and any(e.get("mean_word_activation_lesioned") is not None for e in entries):
            out.add("report.consistency.mean_word_activation_lesioned")
        if any((e.get("word_selective_lesioned") or 0) > len(units) for e in entries):
            out.add("report.consistency.word_selective_lesioned")
    epochs = [e.get("epoch") for e in history]
    if any(
        isinstance(a, int) and isinstance(b, int) and b <= a for a, b in itertools.pairwise(epochs)
    ):
        out.add("report.consistency.history_order")
    return out


FIELD_RULES = (
    "report.consistency.no_words",
    "report.consistency.pre_name",
    "report.consistency.history_order",
    "report.consistency.word_channel",
    "report.consistency.mean_word_activation_lesioned",
    "report.consistency.word_selective_lesioned",
)
"""The rules tying a report's fields to its config and the history's order (§5.2, §5.4)."""


def consistency_edges(rule: str) -> Callable[[Target], list[dict[str, Any]]]:
    """The inputs that define ``rule``: each pair of event and status §3 forbids (the body
    then builds every allowed pair of the job, of each kind); an error and a finished_at in
    the state of a job that did not fail or complete, and a failed or complete job without
    them; no history and one epoch of it, of each kind; units with a repeat or one pair
    swapped, one unit, none, and a word channel of one unit or one past it; a word set
    snapshot under every status (only a complete one keeps words_done) and its progress
    and started reports; a snapshot of a running job of each kind (no ETA); a training and
    a lesion job at points of an epoch, in reports that show the phase and in those that
    do not (:func:`_fraction_edges`)."""
    return lambda target: _consistency_edges()[rule]


def consistent_input(case: dict[str, Any]) -> bool:
    """An input a conforming builder must build (not refuse)."""
    state, status = case["state"], case["status"]
    return (
        (case["event"], status) in ALLOWED
        and (status != "complete" or state["finished_at"] is not None)
        and (status != "failed" or state["error"] is not None)
        and sorted_units(state)
        and not field_rule_breaks(state)
    )


def sorted_units(state: dict[str, Any]) -> bool:
    """The lesion config's units are strictly ascending and the word channel in order."""
    cfg = state["config"]
    units = cfg.get("lesioned_units") or []
    channel = cfg.get("word_channel")
    ordered = all(b > a for a, b in itertools.pairwise(units))
    return ordered and not (isinstance(channel, dict) and channel["first"] > channel["last"])


def _problem(rule: str, report: dict[str, Any], case: dict[str, Any]) -> str | None:
    """What breaks ``rule`` in a built report, by the suite's own reading of the rule."""
    status, event = report.get("status"), report.get("event")
    progress = report.get("progress") or {}
    history = report.get("history")
    training = report.get("kind") in ("training", "lesion")
    if rule == "report.consistency.event_status":
        if (event, status) not in ALLOWED:
            return f"event {event!r} sent with status {status!r}"
        if (event, status) != (case["event"], case["status"]):
            return f"asked for {case['event']}/{case['status']}, built {event}/{status}"
    error, finished = report.get("error"), report.get("finished_at")
    if rule == "report.consistency.error" and isinstance(error, dict) != (status == "failed"):
        return f"error is {error!r} with status {status!r}"
    if rule == "report.consistency.finished_at" and isinstance(finished, str) != (
        status == "complete"
    ):
        return f"finished_at is {finished!r} with status {status!r}"
    done = progress.get("epochs_completed")
    if rule == "report.consistency.epochs_completed" and training and done != len(history or []):
        return f"epochs_completed {done} for {len(history or [])} history entries"
    if rule == "report.consistency.eta" and report.get("eta_seconds") is not None:
        if status != "in progress":
            return f"eta_seconds {report['eta_seconds']} with status {status!r}"
        if event == "snapshot":
            return (
                f"eta_seconds {report['eta_seconds']} in a snapshot (null in every snapshot: "
                "only the training process knows the time per epoch or word)"
            )
        if training and not history:
            return f"eta_seconds {report['eta_seconds']} before the first epoch finished"
    if rule == "report.consistency.fraction" and training:
        fraction, wanted = progress.get("fraction"), shown_fraction(report)
        shown = {k: progress.get(k) for k in ("epochs_completed", "epochs_total", "phase")}
        shown.update(batch=progress.get("batch"), batches=progress.get("batches"))
        if wanted is None and fraction is not None:
            return f"fraction {fraction!r} without epochs_total ({shown})"
        if wanted is not None and (
            not isinstance(fraction, int | float)
            or abs(fraction - wanted) > 0.00005 + 1e-9
            or round(fraction, 4) != fraction
        ):
            return (
                f"fraction {fraction!r}, the report's own progress fields {shown} give "
                f"{round(wanted, 4)} (the share of the current epoch counts only where the "
                f"report shows its phase; the job's state had phase {case['state']['phase']!r}, "
                f"batch {case['state']['batch']!r} of {case['state']['batches']!r})"
            )
    lesion = report.get("kind") == "lesion"
    if rule == "report.consistency.lesioned_units" and lesion and not sorted_units(report):
        return f"lesioned units or word channel out of order: {report['config']}"
    if rule in FIELD_RULES and rule in field_rule_breaks(report):
        return (
            f"the built report breaks {rule}: config {report.get('config')}, "
            f"initial_validation {report.get('initial_validation')}, history "
            f"{report.get('history')}"
        )
    unfinished = event == "snapshot" and status != "complete"
    if rule == "report.consistency.words_done" and report.get("kind") == "wordset":
        known = {k: progress.get(k) for k in ("words_done", "fraction")}
        if unfinished and any(v is not None for v in known.values()):
            return f"a snapshot of an unfinished word set (status {status!r}) has {known}"
        if not unfinished and progress.get("words_done") != case["state"]["words_done"]:
            return (
                f"{event}/{status} sent words_done {progress.get('words_done')!r}, the job's "
                f"is {case['state']['words_done']!r}"
            )
    return None


def consistency(rule: str) -> Callable[[Context, dict[str, Any]], None]:
    """A consistent input builds a valid report that keeps ``rule``; an inconsistent one
    builds such a report or is refused naming ``rule``."""

    def body(ctx: Context, case: dict[str, Any]) -> None:
        result = ctx.run("build_report", case)
        must_build = consistent_input(case)
        if result.outcome == "refused" and not must_build and rule in result.rules:
            return
        if result.outcome != "ok":
            raise Failed(f"build_report gave {result.describe()}")
        report = result.output["report"]
        broken = S.oracle_rules(report, REPORT)
        if broken:
            raise Failed(f"the built report breaks {sorted(broken)}")
        problem = _problem(rule, report, case)
        if problem:
            raise Failed(problem)

    return body


def every_allowed_pair(ctx: Context, case: dict[str, Any]) -> None:
    """The drawn input as :func:`consistency` says, then the same job under every allowed
    event and status (a word set has no epoch_end): each builds, keeping its pair."""
    consistency("report.consistency.event_status")(ctx, case)
    state = case["state"]
    for event, status in ALLOWED:
        if event == "epoch_end" and state["kind"] == "wordset":
            continue
        pair = {
            **case,
            "event": event,
            "status": status,
            "state": {
                **state,
                "running": status == "in progress",
                "finished_at": state["started_at"] or case["sent_at"]
                if status == "complete"
                else None,
                "error": state["error"] or {"type": "ValueError", "message": "bad batch"}
                if status == "failed"
                else None,
            },
        }
        consistency("report.consistency.event_status")(ctx, pair)


def _mixed(rule: str) -> Callable[[Target], st.SearchStrategy[dict[str, Any]]]:
    """Inputs that stress ``rule``: any event with any status (half of them) for event_status,
    shuffled
    units for lesioned_units, otherwise the allowed pairs."""

    def strategy(target: Target) -> st.SearchStrategy[dict[str, Any]]:
        if rule == "report.consistency.event_status":
            return st.one_of(cases(), cases(PAIRS))
        if rule == "report.consistency.lesioned_units":
            return cases().flatmap(_shuffle_units)
        if rule == "report.consistency.words_done":
            return cases().filter(lambda c: c["state"]["kind"] == "wordset")
        if rule == "report.consistency.fraction":
            return st.one_of(cases(), fraction_cases())
        return cases()

    return strategy


def _shuffle_units(case: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    units = case["state"]["config"].get("lesioned_units")
    if case["state"]["kind"] != "lesion" or not units:
        return st.just(case)
    return st.permutations(units).map(
        lambda order: {
            **case,
            "state": {
                **case["state"],
                "config": {**case["state"]["config"], "lesioned_units": list(order)},
            },
        }
    )


# --------------------------------------------------------------------------- privacy

_ABSOLUTE = re.compile(r"(?<![\w.~:/\\-])/[\w.]")
"""A slash that starts an absolute path, one part (``/data``) or more (``/a/b``); not one
after a word character, a dot, ``~``, ``:`` or a slash (``3/4``, ``.../x``, ``~/x``, a
URL's path)."""


def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


def home_forms(message: str, home: str) -> list[str]:
    """What each place of the home folder in ``message`` must become: ``~`` and the path
    after it (``<home>/runs/model.pt``: ``~/runs/model.pt``; a message ending in the home
    folder: ``~``). The home folder followed by a word character or a dot is left out
    (``<home>.bak`` is another folder)."""
    found = re.findall(rf"{re.escape(home)}((?:/[\w.-]+)*)(?![\w.-])", message)
    return ["~" + tail for tail in found]


def no_secrets(ctx: Context, case: dict[str, Any]) -> None:
    """A failed job whose error names every secret: the report holds none of them (nor the
    token percent-encoded), and the home folder in the message became ~."""
    secrets = case["secrets"]
    report = ctx.ok("build_report", case)["report"]
    for text in _strings(report):
        if secrets["token"] in text or secrets["token"] in unquote(text):
            raise Failed(f"the report holds the token: {text!r}")
        if secrets["home"] in text:
            raise Failed(f"the report holds the home folder: {text!r}")
        if _ABSOLUTE.search(text):
            raise Failed(f"the report holds an absolute path: {text!r}")
    message = (report.get("error") or {}).get("message", "")
    if re.search(rf"(?<!\w){re.escape(secrets['user'])}(?!\w)", message):
        raise Failed(f"the error message names the user: {message!r}")
    for pid in (secrets["pid"], *worker_pids(secrets)):
        if re.search(rf"(?<![\d.]){pid}(?![\d.])", message):
            raise Failed(f"the error message holds the process id {pid}: {message!r}")
    for form in home_forms(case["state"]["error"]["message"], secrets["home"]):
        if form not in message:
            raise Failed(f"the home folder did not become {form} in the error message: {message!r}")


def failed_cases(target: Target) -> st.SearchStrategy[dict[str, Any]]:
    """Failed jobs (event failed, or a snapshot with status failed)."""
    return cases((("failed", "failed"), ("snapshot", "failed")))


def edge_messages(secrets: dict[str, Any]) -> list[str]:
    """Error messages with each secret at the rule's boundaries, around
    :func:`secret_message`: at the very start and the very end, and as the whole message;
    the token glued to word characters and percent-encoded (some characters in lower-case
    hex, every one in upper case); the home folder with nothing after it; a one-part path
    at the start and at the end."""
    tok, home, user, pid = (secrets[k] for k in ("token", "home", "user", "pid"))
    base = secret_message(secrets)
    url = "https://reports.example.org/api/runs?t="
    return [
        f"{tok}: {base}",
        f"{base} {tok}",
        tok,
        f"{base} key_{tok}_v2",
        f"{base} ({url}{_encode(tok, 0b101, False)})",
        f"{base} ({url}{_encode(tok, 2**32 - 1, True)})",
        f"{home}/a.txt: {base}",
        f"{base} in {home}",
        home,
        f"{user}: {base}",
        f"{base} as {user}",
        user,
        f"{pid}: {base}",
        f"{base} {pid}",
        str(pid),
        f"/data: {base}",
        f"{base} /data",
    ]


def privacy_edges(target: Target) -> list[dict[str, Any]]:
    """A failed job for each of :func:`edge_messages`; a failed snapshot."""
    failed = [edge_input("failed", "failed", message=m) for m in edge_messages(EDGE_SECRETS)]
    return [*failed, edge_input("snapshot", "failed")]


def with_extras(case: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """The job's config holds fields §5 never sends."""
    values = st.one_of(st.integers(), st.text(max_size=12), st.lists(st.text(max_size=6)))
    return st.dictionaries(st.sampled_from(JOB_EXTRAS), values, min_size=1).map(
        lambda extra: {
            **case,
            "state": {**case["state"], "config": {**case["state"]["config"], **extra}},
        }
    )


def extras_edges(target: Target) -> list[dict[str, Any]]:
    """A job of each kind whose config holds one field §5 never sends, each in turn, or all
    of them (null, or a value of the field's usual type)."""
    values: dict[str, Any] = {
        "seed": 0,
        "git_commit": "0" * 40,
        "git_branch": "main",
        "git_dirty": False,
        "words": ["a"],
        "word_list": "words.txt",
        "per_class_accuracy": [0.5],
        "unit_values": [0.0],
        "checkpoint_sha256": "0" * 64,
    }
    configs = [{k: v} for k, v in values.items()] + [values, dict.fromkeys(values)]
    return [
        edge_input("progress", "in progress", kind, config=config)
        for kind in ("lesion", "wordset")
        for config in configs
    ]


def only_section5(ctx: Context, case: dict[str, Any]) -> None:
    """The report carries the §5 fields only, whatever else the job knows."""
    report = ctx.ok("build_report", case)["report"]
    extra = sorted(set(report["config"]) - set(_vector_config_fields(report["kind"])))
    if extra:
        raise Failed(f"the report's config carries {extra}, which §5 does not send")
    broken = S.oracle_rules(report, REPORT)
    if broken:
        raise Failed(f"the built report breaks {sorted(broken)}")


def _vector_config_fields(kind: str) -> set[str]:
    """The config fields §5 defines for a kind (from the reporting schema)."""
    from trainrecord.schemas import schema_by_id

    definition = schema_by_id(REPORT)["$defs"][f"{kind}_config"]
    return set(definition["properties"])


# --------------------------------------------------------------------------- report_status


@st.composite
def status_cases(draw: Callable[..., Any]) -> tuple[dict[str, Any], str, int, int]:
    """(state, status, HTTP code, body length) for one report_status call."""
    state = base_state(draw(st.sampled_from(_vector_reports())))
    status = draw(st.sampled_from(["in progress", "interrupted", "discarded", "stopped"]))
    state["running"] = False
    code = draw(
        st.sampled_from([200, 301, 302, 307, 308, 400, 401, 403, 404, 413, 422, 500, 502, 503])
    )
    return state, status, code, draw(st.integers(0, 700))


def snapshot_raises(ctx: Context, case: tuple[dict[str, Any], str, int, int]) -> None:
    """A snapshot that does not get through raises with the code and the body's first 300
    characters (no more); one that gets through returns."""
    state, status, code, length = case
    rec = receiver(ctx)
    path = rec.fresh(f"/body/{code}/{length}")
    data = {"url": rec.base + path, "token": token(), "state": state, "status": status}
    out = ctx.ok("report_status", {**data, "ca_file": None})
    if len(rec.arrived(path)) != 1:
        raise Failed(f"{len(rec.arrived(path))} requests arrived for one report_status()")
    if 200 <= code < 300:
        if out["raised"]:
            raise Failed(f"a {code} answer raised: {out['message'][:200]!r}")
        return
    if not out["raised"]:
        raise Failed(f"a {code} answer did not raise")
    message, body = out["message"], answer_body(length)
    if str(code) not in message:
        raise Failed(f"the raised message does not name the status {code}: {message[:200]!r}")
    if body[:300] not in message:
        raise Failed(f"the raised message lacks the body's first 300 characters: {message!r}")
    if length > 300 and body[:301] in message:
        raise Failed("the raised message carries more than the body's first 300 characters")


def _echo_cases(t: Target) -> st.SearchStrategy[tuple[int, str, str]]:
    """(HTTP code, echo form, token) for report_status through the echoing server."""
    codes = st.sampled_from([400, 401, 403, 404, 422, 500, 502, 503])
    tokens = st.text("0123456789abcdef", min_size=16, max_size=16).map(lambda h: f"tok-{h}")
    return st.tuples(codes, st.sampled_from(FORMS), tokens)


ECHO_TOKEN = "s3cr%t-T0k!ab"
"""A token with a ``%`` and a character percent-encoding changes (the edges)."""


def _echo_edges(t: Target) -> list[tuple[int, str, str]]:
    """Every echo form, with a plain and an awkward token, at 401 and 500."""
    return [(code, form, ECHO_TOKEN) for code in (401, 500) for form in FORMS] + [
        (500, form, "tok-0123456789abcdef") for form in FORMS
    ]


def snapshot_hides_the_token(ctx: Context, case: tuple[int, str, str]) -> None:
    """A snapshot answered by a server that echoes the Authorization header raises with a
    message that holds neither the token (as sent or percent-encoded) nor its start."""
    code, form, tok = case
    server = ctx.service("echo-receiver", EchoServer)
    state = base_state(_vector_reports()[0])
    state["running"] = False
    url = f"{server.base}/echo/{code}/{form}/api/runs"
    out = ctx.ok(
        "report_status",
        {"url": url, "token": tok, "state": state, "status": "stopped", "ca_file": None},
    )
    if not out["raised"]:
        raise Failed(f"a {code} answer did not raise")
    message = out["message"]
    leaked = [
        name
        for name, text in (
            ("the token", tok),
            ("the token percent-encoded", quote(tok, safe="")),
            ("the token's first 10 characters", tok[:10]),
        )
        if text in message
    ]
    if leaked:
        raise Failed(
            f"the raised message shows {leaked[0]} a server echoed ({form}): {message[:400]!r}"
        )
    if str(code) not in message:
        raise Failed(f"the raised message does not name the status {code}: {message[:200]!r}")


def checks() -> list[Check]:
    """Every payload and report_status check."""
    rules = (
        "report.consistency.event_status",
        "report.consistency.error",
        "report.consistency.finished_at",
        "report.consistency.epochs_completed",
        "report.consistency.eta",
        "report.consistency.fraction",
        "report.consistency.lesioned_units",
        "report.consistency.words_done",
        *FIELD_RULES,
    )
    out = [
        Check(
            rule,
            f"build_report keeps {rule.rsplit('.', 1)[1]}",
            BUILD,
            _mixed(rule),
            every_allowed_pair if rule.endswith("event_status") else consistency(rule),
            edges=consistency_edges(rule),
        )
        for rule in rules
    ]
    return [
        *out,
        Check(
            "report.privacy.secrets",
            "no token, home, user, pid or absolute path",
            BUILD,
            failed_cases,
            no_secrets,
            edges=privacy_edges,
        ),
        Check(
            "report.privacy.fields",
            "nothing beyond §5 from the job's config",
            BUILD,
            lambda t: cases().flatmap(with_extras),
            only_section5,
            edges=extras_edges,
        ),
        Check(
            "report.transport.snapshot_raises",
            "report_status() raises with the code and the body's start",
            STATUS,
            lambda t: status_cases(),
            snapshot_raises,
            scale="io",
        ),
        Check(
            "report.transport.snapshot_raises",
            "report_status() shows no token a server echoes",
            STATUS,
            _echo_cases,
            snapshot_hides_the_token,
            edges=_echo_edges,
            scale="io",
        ),
    ]
