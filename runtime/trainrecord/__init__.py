"""trainrecord: write, send and verify training-run records that can be trusted.

The runtime of the trainrecord spec package: the training diary (``trainrecord.diary``),
the PyTorch monitor (``trainrecord.monitor``, needs torch), the Foundry run-record writers
(``trainrecord.foundry``) and the Reporting API v2 client and receiver
(``trainrecord.report``). Importing this package never imports torch.
"""

from __future__ import annotations

from typing import Any

from trainrecord.errors import Problem, RecordRefused, RecordWriteError

__version__ = "0.1.0"
_LAZY = {
    "Monitor": "trainrecord.monitor",
    "DiaryWriter": "trainrecord.diary",
    "MetricsWriter": "trainrecord.diary",
    "verify": "trainrecord.diary",
    "config_sha": "trainrecord.foundry",
    "write_witness": "trainrecord.foundry",
    "write_metrics": "trainrecord.foundry",
    "read_witness": "trainrecord.foundry",
    "read_metrics": "trainrecord.foundry",
    "Reporter": "trainrecord.report",
    "ReportSettings": "trainrecord.report",
}
"""Names re-exported from their modules on first use, so ``import trainrecord`` stays light
(it never imports torch, jsonschema or requests until one of these is asked for)."""

__all__ = ["Problem", "RecordRefused", "RecordWriteError", "__version__", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'trainrecord' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
