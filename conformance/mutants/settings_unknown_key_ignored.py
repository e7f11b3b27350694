"""Mutant: settings that ignore a key ``[report]`` does not have (``evry = 5`` leaves every
at its default of 60 without a word), as load_settings did before
``report.settings.unknown_key``; a key named like a secret is still refused."""

from __future__ import annotations

import os
import sys
from typing import Any
from unittest import mock

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import load_settings

BREAKS = "report.settings.unknown_key"


def lenient(data: dict[str, Any]) -> dict[str, Any]:
    """Load the settings with unknown keys passed over."""
    from trainrecord.report import settings

    real = settings._key_problem

    def problem(key: str, value: object, token: str) -> Any:
        found = real(key, value, token)
        return None if found is not None and found.rule == "report.settings.unknown_key" else found

    with mock.patch.object(settings, "_key_problem", problem):
        return load_settings(data)


if __name__ == "__main__":
    run_mutant("settings_unknown_key_ignored", {"load_settings": lenient})
