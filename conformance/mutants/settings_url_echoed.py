"""Mutant: settings whose URL refusal echoes the URL as written, query and fragment
included (``(got 'http://example.org/api?api_key=...')``), as load_settings did before
``redact_url``."""

from __future__ import annotations

import os
import sys
from typing import Any
from unittest import mock

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import load_settings

BREAKS = "report.settings.url_scheme"


def echoed(data: dict[str, Any]) -> dict[str, Any]:
    """Load the settings with URLs shown whole in refusals."""
    with mock.patch("trainrecord.report.settings.redact_url", lambda url: url):
        return load_settings(data)


if __name__ == "__main__":
    run_mutant("settings_url_echoed", {"load_settings": echoed})
