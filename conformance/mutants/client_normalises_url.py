"""Mutant: a reporting client that sends the URL the way an ordinary HTTP library
normalises it (``requests`` on its own, as a WHATWG URL parser does): dot segments removed,
an empty query's ``?`` dropped, ``%7E`` decoded. §2 says the URL is used exactly as
configured."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

BREAKS = "report.transport.post_url"


def normalised(data: dict[str, Any]) -> dict[str, Any]:
    """Check the report as the reference does, then POST it through a plain session."""
    import requests

    from trainrecord.report import ReportSettings, encode_report, post_report

    settings = ReportSettings(
        url=data["url"], every=60, token=data["token"], ca_bundle=data.get("ca_file")
    )
    body = encode_report(data["report"])
    with requests.Session() as session:  # not new_session(): requests' normalised target
        session.trust_env = False
        outcome = post_report(settings, body, session=session)
    return {"delivered": bool(outcome.ok), "status": outcome.status}


if __name__ == "__main__":
    run_mutant("client_normalises_url", {"send_report": normalised})
