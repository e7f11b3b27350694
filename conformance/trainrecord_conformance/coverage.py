"""Rules the suite does not test through an implementation's interface, and why.

The completeness test (``tests/conformance/test_completeness.py``) fails for any rule of
the registry that has neither a check nor an entry here; an entry here is reported as
*not covered* in every run (``trainrecord-conformance rules`` lists the reason), never as
passed. They are properties of a long-lived process (durability under kill -9, locks,
background threads, timing, a server's clock); the project's own tests cover them for the
Python runtime.
"""

from __future__ import annotations

_PROCESS = (
    "a property of a running process (crash, lock or thread behaviour); the protocol's "
    "operations are single calls. tests/ covers it for the Python runtime"
)
_CLIENT = "a property of the background reporter in a running job, not of one send_report"

NOT_COVERED: dict[str, str] = {
    "diary.writer.durable": _PROCESS,
    "diary.writer.locked": _PROCESS,
    "diary_metrics.writer.locked": _PROCESS,
    "diary.file.changed": "needs the diary cut while one verify_diary call is reading it; "
    "the protocol's operations are single calls. tests/diary covers it for the Python runtime",
    "report.transport.timeout": "needs a server that hangs for over 10 s per example; too "
    "slow for the suite's budget",
    "report.transport.never_slows": _CLIENT,
    "report.status.discarded": "a property of the reporter at Ctrl+C and of the run folder "
    "it deletes; the protocol's report_job has no run folder",
    "report.status.sigterm": "a property of a running job's process when it is sent "
    "SIGTERM; the protocol's report_job is one call",
    "report.server.no_contact": "needs a server clock run past 3 x every + 5 minutes",
    "report.server.plain_http_loopback": "about how a server is started, not what it answers",
}
"""rule id -> why the suite cannot test it through the harness protocol or HTTP."""
