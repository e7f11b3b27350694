"""Mutant: settings that accept a ca_bundle naming no file."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import load_settings

BREAKS = "report.settings.ca_bundle"


def faulty(data: dict[str, Any]) -> dict[str, Any]:
    """Drop the ca_bundle line before loading, then say one was configured."""
    with open(data["path"], encoding="utf-8") as f:
        lines = f.read().splitlines()
    kept = [line for line in lines if not line.startswith("ca_bundle")]
    path = data["path"] + ".lenient.toml"
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(kept) + "\n")
    out = load_settings({**data, "path": path})
    return {**out, "ca_bundle": len(kept) != len(lines)}


if __name__ == "__main__":
    run_mutant("settings_ca_unchecked", {"load_settings": faulty})
