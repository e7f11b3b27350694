"""Mutant: settings that refuse the token in paths.toml only under the key ``token``: an
``api_token`` or ``Auth`` key, or another key holding the token's value, is passed over (as
load_settings did before; the misuse probe found ``api_token`` accepted)."""

from __future__ import annotations

import os
import sys
from typing import Any
from unittest import mock

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import load_settings

BREAKS = "report.settings.token"


def exact(data: dict[str, Any]) -> dict[str, Any]:
    """Load the settings with only a key named exactly ``token`` taken for the token."""
    from trainrecord.report import settings

    real = settings._key_problem

    def problem(key: str, value: object, token: str) -> Any:
        if key in settings.REPORT_KEYS:
            return None
        return real(key, value, token) if key == "token" else None

    with mock.patch.object(settings, "_key_problem", problem):
        return load_settings(data)


if __name__ == "__main__":
    run_mutant("settings_token_key_exact", {"load_settings": exact})
