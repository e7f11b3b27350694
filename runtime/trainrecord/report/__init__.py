"""Reporting API v2: the client that never slows a run, and a reference receiver.

Client (see ``reporting-api-v2.txt`` and ``spec/schemas/reporting/reporting.schema.json``):

* run identity: :func:`open_run` (the run folder's ``metadata.json``: a new UUID run_id on
  the first start, the same one on every resume, a new one after the folder was deleted)
  gives a :class:`RunFolder` that builds the job's state and seq clock.
* settings: :func:`load_settings` (``paths.toml`` ``[report] url, every``; token from
  ``CORREAD_REPORT_TOKEN``), :class:`ReportSettings`; unsafe settings raise at once.
* state and payloads: :class:`JobState`, :func:`config`, :func:`validation_entry`,
  :func:`epoch_entry`, :func:`build_report`, :func:`encode_report`, :func:`problems`,
  :func:`consistency_problems`, :func:`check_report`, :func:`error_info`,
  :func:`local_time`.
* sending: :class:`Reporter` (background, newest report only, bounded flush at exit;
  given the run folder, ``run=``, it discards a new training run stopped before its first
  epoch: folder deleted, status ``discarded``; anything else stopped is ``interrupted``),
  :func:`report_status` (synchronous snapshot; raises :class:`ReportNotDelivered`),
  :func:`post_report` (one POST, returns an :class:`Outcome`), :class:`SeqClock`.
* privacy (§7): :func:`scrub_message`, :func:`privacy_problems`, :class:`Secrets`.

Receiver: :func:`make_server` and :class:`ReportStore` (``trainrecord serve``).

Example, sending one report to a URL by hand (what the conformance suite does)::

    settings = ReportSettings(url="https://127.0.0.1:8443/api/runs", every=60, token=token,
                              ca_bundle="ca.pem")
    outcome = post_report(settings, encode_report(report))
"""

from __future__ import annotations

from trainrecord.report.payload import (
    REPORT_SCHEMA_ID,
    JobState,
    build_report,
    check_report,
    config,
    consistency_problems,
    encode_report,
    epoch_entry,
    error_info,
    local_time,
    problems,
    validation_entry,
)
from trainrecord.report.privacy import Secrets, privacy_problems, scrub_message
from trainrecord.report.receiver import MAX_BODY, ReportServer, make_server
from trainrecord.report.reporter import Reporter, report_status
from trainrecord.report.run_folder import RunFolder, open_run
from trainrecord.report.sender import Sender
from trainrecord.report.seq import SeqClock
from trainrecord.report.settings import TOKEN_ENV, ReportSettings, load_settings
from trainrecord.report.store import ReportStore
from trainrecord.report.transport import Outcome, ReportNotDelivered, post_report

__all__ = [
    "MAX_BODY",
    "REPORT_SCHEMA_ID",
    "TOKEN_ENV",
    "JobState",
    "Outcome",
    "ReportNotDelivered",
    "ReportServer",
    "ReportSettings",
    "ReportStore",
    "Reporter",
    "RunFolder",
    "Secrets",
    "Sender",
    "SeqClock",
    "build_report",
    "check_report",
    "config",
    "consistency_problems",
    "encode_report",
    "epoch_entry",
    "error_info",
    "load_settings",
    "local_time",
    "make_server",
    "open_run",
    "post_report",
    "privacy_problems",
    "problems",
    "report_status",
    "scrub_message",
    "validation_entry",
]
