"""Shared helpers of the Foundry tests: a filesystem snapshot, a valid environment and rows."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

Snapshot = dict[str, tuple[str, bytes | None]]


def snapshot(root: Path) -> Snapshot:
    """Every entry under ``root`` (itself included): kind and, for files, the bytes."""
    out: Snapshot = {}
    if not root.exists():
        return out
    out["."] = ("dir", None)
    for folder, dirs, names in os.walk(root):
        for name in dirs:
            out[os.path.relpath(Path(folder, name), root)] = ("dir", None)
        for name in names:
            path = Path(folder, name)
            out[os.path.relpath(path, root)] = ("file", path.read_bytes())
    return out


def good_env(**extra: str) -> dict[str, str]:
    """An environment a witness can be written from, plus ``extra``."""
    return {"FOUNDRY_RUN_ID": "4217", **extra}


def good_row(**changes: Any) -> dict[str, Any]:
    """A valid metrics row with ``changes`` applied."""
    return {
        "benchmark": "ETTh1",
        "metric": "mse",
        "horizon": 96,
        "seed": 0,
        "value": 0.3861,
        **changes,
    }


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A results directory that does not exist yet, two levels below the test's folder."""
    return tmp_path / "runs" / "r1"
