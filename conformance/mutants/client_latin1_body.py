"""Mutant: a reporting client that sends the report as text with raw non-ASCII characters
(``ensure_ascii=False``) encoded as Latin-1, the encoding ``http.client`` gives a str body:
``naïve`` goes out as the byte 0xE9, not UTF-8, and a character beyond Latin-1 as ``?``."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

BREAKS = "report.transport.body"


def latin1(data: dict[str, Any]) -> dict[str, Any]:
    """Check the report as the reference does, then POST it encoded as Latin-1."""
    from trainrecord.report import ReportSettings, encode_report, post_report

    settings = ReportSettings(
        url=data["url"], every=60, token=data["token"], ca_bundle=data.get("ca_file")
    )
    encode_report(data["report"])  # an invalid report is refused, never sent
    body = json.dumps(data["report"], ensure_ascii=False).encode("latin-1", "replace")
    outcome = post_report(settings, body)
    return {"delivered": bool(outcome.ok), "status": outcome.status}


if __name__ == "__main__":
    run_mutant("client_latin1_body", {"send_report": latin1})
