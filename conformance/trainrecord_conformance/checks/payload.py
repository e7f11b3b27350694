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
and the first 300 characters of the response body.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from trainrecord_conformance import strategies as S
from trainrecord_conformance.checks.base import Check, Context, Failed
from trainrecord_conformance.checks.receiver import answer_body
from trainrecord_conformance.checks.reporting import REPORT, _vector_reports, receiver, token
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


@st.composite
def cases(draw: Callable[..., Any], pairs: tuple[tuple[str, str], ...] = ALLOWED) -> dict[str, Any]:
    """A build_report input: a state, an event and status, and the process's secrets (a
    word set has no epoch_end event)."""
    report = draw(st.sampled_from(_vector_reports()))
    state = base_state(report)
    kind_pairs = [p for p in pairs if p[0] != "epoch_end" or state["kind"] != "wordset"]
    event, status = draw(st.sampled_from(kind_pairs))
    secrets = secrets_of(draw)
    if status != "in progress":
        state["running"] = False
    if status == "complete" or (draw(st.booleans()) and status != "in progress"):
        state["finished_at"] = state["started_at"] or report["sent_at"]
    if status == "failed" or (status != "in progress" and draw(st.booleans())):
        state["error"] = {"type": "OSError", "message": secret_message(secrets)}
    if draw(st.booleans()) and state["history"]:
        state["history"] = []
    return {
        "state": state,
        "event": event,
        "status": status,
        "seq": draw(st.integers(0, 2**53 - 1)),
        "sent_at": report["sent_at"],
        "secrets": secrets,
    }


def consistent_input(case: dict[str, Any]) -> bool:
    """An input a conforming builder must build (not refuse)."""
    state, status = case["state"], case["status"]
    return (
        (case["event"], status) in ALLOWED
        and (status != "complete" or state["finished_at"] is not None)
        and (status != "failed" or state["error"] is not None)
        and sorted_units(state)
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
        if training and not history:
            return f"eta_seconds {report['eta_seconds']} before the first epoch finished"
    lesion = report.get("kind") == "lesion"
    if rule == "report.consistency.lesioned_units" and lesion and not sorted_units(report):
        return f"lesioned units or word channel out of order: {report['config']}"
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


def no_secrets(ctx: Context, case: dict[str, Any]) -> None:
    """A failed job whose error names every secret: the report holds none of them, and the
    home folder in the message became ~."""
    secrets = case["secrets"]
    report = ctx.ok("build_report", case)["report"]
    for text in _strings(report):
        if secrets["token"] in text:
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
    if "~/runs/model.pt" not in message:
        raise Failed(f"the home folder did not become ~ in the error message: {message!r}")


def failed_cases(target: Target) -> st.SearchStrategy[dict[str, Any]]:
    """Failed jobs (event failed, or a snapshot with status failed)."""
    return cases((("failed", "failed"), ("snapshot", "failed")))


def with_extras(case: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """The job's config holds fields §5 never sends."""
    values = st.one_of(st.integers(), st.text(max_size=12), st.lists(st.text(max_size=6)))
    return st.dictionaries(st.sampled_from(JOB_EXTRAS), values, min_size=1).map(
        lambda extra: {
            **case,
            "state": {**case["state"], "config": {**case["state"]["config"], **extra}},
        }
    )


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
    code = draw(st.sampled_from([200, 400, 401, 403, 404, 413, 422, 500, 502, 503]))
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


def checks() -> list[Check]:
    """Every payload and report_status check."""
    rules = (
        "report.consistency.event_status",
        "report.consistency.error",
        "report.consistency.finished_at",
        "report.consistency.epochs_completed",
        "report.consistency.eta",
        "report.consistency.lesioned_units",
    )
    out = [
        Check(
            rule,
            f"build_report keeps {rule.rsplit('.', 1)[1]}",
            BUILD,
            _mixed(rule),
            every_allowed_pair if rule.endswith("event_status") else consistency(rule),
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
        ),
        Check(
            "report.privacy.fields",
            "nothing beyond §5 from the job's config",
            BUILD,
            lambda t: cases().flatmap(with_extras),
            only_section5,
        ),
        Check(
            "report.transport.snapshot_raises",
            "report_status() raises with the code and the body's start",
            STATUS,
            lambda t: status_cases(),
            snapshot_raises,
            scale="io",
        ),
    ]
