"""Reporting API v2: a job's reports over its life (``report_job``).

``report.transport.one_warning``: the receiver answers a job's reports by a pattern of
successes and failures; the job (working ``PAUSE`` seconds between reports, so that few are
dropped for newer ones) must log one warning per run of failures among the reports that
arrived (a failure after a report got through warns again), none while they get through.

``report.seq.increasing`` (§4): seq across resumes and processes.

One run is reported by several calls of ``report_job`` in turn (a job and its resumes), all
with the run's own folder (``seq_dir``) and the run's known last seq (``last_seq``). The
first call is told that an earlier process, whose clock ran a day ahead, already sent a
seq far in the future; the calls after it are told nothing (as a resumed process whose
metadata predates that report). Every report that arrives must carry a seq greater than
every seq sent before it about the run: above the floor, and above the previous call's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from trainrecord_conformance.checks.base import Check, Context, Failed
from trainrecord_conformance.checks.payload import base_state
from trainrecord_conformance.checks.reporting import _vector_reports, receiver, token

JOB = frozenset({"report_job"})
PAUSE = 0.03
"""Seconds the job works between reports in the warning check, so most reports go out."""
AHEAD_MS = 86_400_000
"""How far ahead the earlier process's clock ran: a day."""


@st.composite
def resumes(draw: Callable[..., Any]) -> tuple[dict[str, Any], list[tuple[int, str]]]:
    """A job state and its calls: (progress reports, final event) each."""
    state = base_state(draw(st.sampled_from(_vector_reports())))
    calls = draw(
        st.lists(
            st.tuples(st.integers(0, 3), st.sampled_from(["complete", "interrupted"])),
            min_size=2,
            max_size=3,
        )
    )
    return state, calls


def _seq_of(body: bytes, call: int) -> Any:
    """The seq of a report that arrived (anything else there is a failure naming what
    arrived, never a crash of the check)."""
    try:
        report = json.loads(body)
    except ValueError as exc:
        raise Failed(
            f"[report.transport.body] call {call}: a report arrived that is not JSON ({exc}): "
            f"{body[:200]!r}"
        ) from None
    if not isinstance(report, dict) or not isinstance(report.get("seq"), int):
        raise Failed(
            f"[report.transport.body] call {call}: a report arrived without an integer seq: "
            f"{body[:200]!r}"
        )
    return report["seq"]


def increasing(ctx: Context, case: tuple[dict[str, Any], list[tuple[int, str]]]) -> None:
    """Across the job and its resumes every arriving seq exceeds every earlier one."""
    state, calls = case
    rec = receiver(ctx)
    path = rec.fresh()
    seq_dir = ctx.folder(create=True)
    floor = time.time_ns() // 1_000_000 + AHEAD_MS
    last, seen = floor, 0
    for i, (progress, end) in enumerate(calls):
        data = {
            "url": rec.base + path,
            "token": token(),
            "state": state,
            "progress": progress,
            "end": end,
            "seq_dir": str(seq_dir),
            "last_seq": floor if i == 0 else None,
        }
        out = ctx.ok("report_job", data)
        arrived = rec.arrived(path)[seen:]
        seen += len(arrived)
        if not out["closed"] or not arrived:
            raise Failed(f"call {i}: the final report did not go out ({len(arrived)} arrived)")
        for request in arrived:
            seq = _seq_of(request.body, i)
            if seq <= last:
                raise Failed(
                    f"call {i}: seq {seq} after {last} "
                    f"({'the known floor' if last == floor else 'an earlier report'})"
                )
            last = seq


@st.composite
def patterns(draw: Callable[..., Any]) -> tuple[dict[str, Any], int, str, str]:
    """(state, progress reports, final event, answer pattern of o and f)."""
    state = base_state(draw(st.sampled_from(_vector_reports())))
    progress = draw(st.integers(0, 4))
    end = draw(st.sampled_from(["complete", "interrupted"]))
    return state, progress, end, draw(st.text("of", min_size=1, max_size=6))


def failure_runs(answers: str) -> int:
    """How many runs of consecutive failures a sequence of answers holds."""
    return sum(1 for i, a in enumerate(answers) if a == "f" and (i == 0 or answers[i - 1] == "o"))


def one_warning(ctx: Context, case: tuple[dict[str, Any], int, str, str]) -> None:
    """One warning per run of failed reports; quiet while reports get through."""
    state, progress, end, pattern = case
    rec = receiver(ctx)
    path = rec.fresh(f"/pattern/{pattern}")
    data = {
        "url": rec.base + path,
        "token": token(),
        "state": state,
        "progress": progress,
        "end": end,
        "seq_dir": str(ctx.folder(create=True)),
        "last_seq": None,
        "pause": PAUSE,
    }
    out = ctx.ok("report_job", data)
    tries = len(rec.arrived(path))
    if not tries:
        raise Failed("no report arrived")
    answers = "".join(pattern[min(i, len(pattern) - 1)] for i in range(tries))
    wanted = failure_runs(answers)
    if out["warnings"] != wanted:
        raise Failed(
            f"answers {answers!r} (o: 200, f: 500): {out['warnings']} warnings, not {wanted}"
        )


def checks() -> list[Check]:
    """The seq and warning checks."""
    return [
        Check(
            "report.transport.one_warning",
            "one warning per run of failures",
            JOB,
            lambda t: patterns(),
            one_warning,
            scale="io",
        ),
        Check(
            "report.seq.increasing",
            "seq increases across resumes and processes",
            JOB,
            lambda t: resumes(),
            increasing,
            scale="io",
        ),
    ]
