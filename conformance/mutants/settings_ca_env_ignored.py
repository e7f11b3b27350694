"""Mutant: settings that never look at REQUESTS_CA_BUNDLE and CURL_CA_BUNDLE (trusting the
system's CAs), so a variable naming no file is not refused."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import load_settings

BREAKS = "report.settings.ca_bundle"


def ignores_env(data: dict[str, Any]) -> dict[str, Any]:
    """Load with the CA variables taken out of the environment."""
    env = {
        k: v for k, v in data["env"].items() if k not in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
    }
    return load_settings({**data, "env": env})


if __name__ == "__main__":
    run_mutant("settings_ca_env_ignored", {"load_settings": ignores_env})
