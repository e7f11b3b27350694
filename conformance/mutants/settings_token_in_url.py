"""Mutant: settings that never look for the token in the URL (no check_token_not_in_url)."""

from __future__ import annotations

import os
import sys
from typing import Any
from unittest import mock

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import load_settings

BREAKS = "report.settings.token"


def faulty(data: dict[str, Any]) -> dict[str, Any]:
    """Load the settings with the token-in-URL check skipped (every other check runs)."""
    with mock.patch("trainrecord.report.settings.check_token_not_in_url", lambda url, token: None):
        return load_settings(data)


if __name__ == "__main__":
    run_mutant("settings_token_in_url", {"load_settings": faulty})
