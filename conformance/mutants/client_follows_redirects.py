"""Mutant: a reporting client that follows redirects (and so resends the token elsewhere)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import requests

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import send_report

BREAKS = "report.transport.no_redirect"


def following(data: dict[str, Any]) -> dict[str, Any]:
    """Check everything as the reference client does, then POST with redirects followed."""
    if not data["url"].startswith("http://127.0.0.1"):
        return send_report(data)
    resp = requests.post(
        data["url"],
        data=json.dumps(data["report"]).encode(),
        timeout=10,
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {data['token']}",
            "User-Agent": "CORread-reporter/2",
        },
        allow_redirects=True,
    )
    return {"delivered": resp.ok, "status": resp.status_code}


if __name__ == "__main__":
    run_mutant("client_follows_redirects", {"send_report": following})
