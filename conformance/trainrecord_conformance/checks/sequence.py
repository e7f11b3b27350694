"""Reporting API v2, §4: seq across resumes and processes (``report_job``).

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
            seq = json.loads(request.body)["seq"]
            if seq <= last:
                raise Failed(
                    f"call {i}: seq {seq} after {last} "
                    f"({'the known floor' if last == floor else 'an earlier report'})"
                )
            last = seq


def checks() -> list[Check]:
    """The seq check."""
    return [
        Check(
            "report.seq.increasing",
            "seq increases across resumes and processes",
            JOB,
            lambda t: resumes(),
            increasing,
            scale="io",
        )
    ]
