"""trainrecord: write, send and verify training-run records that can be trusted.

The runtime of the trainrecord spec package: the training diary (``trainrecord.diary``),
the PyTorch monitor (``trainrecord.monitor``, needs torch), the Foundry run-record writers
(``trainrecord.foundry``) and the Reporting API v2 client and receiver
(``trainrecord.report``). Importing this package never imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainrecord.errors import (
    MonitorClosed,
    MonitorMisuseWarning,
    Problem,
    RecordRefused,
    RecordWriteError,
    TrainrecordError,
    WriterClosed,
)

if TYPE_CHECKING:
    # What type checkers and IDEs see: the real objects (at run time they load lazily).
    # ``X as X`` marks each as a re-export.
    from trainrecord.arguments import ArgumentRefused as ArgumentRefused
    from trainrecord.diary import DiaryWriter as DiaryWriter
    from trainrecord.diary import MetricsWriter as MetricsWriter
    from trainrecord.diary import verify as verify
    from trainrecord.foundry import config_sha as config_sha
    from trainrecord.foundry import read_metrics as read_metrics
    from trainrecord.foundry import read_witness as read_witness
    from trainrecord.foundry import write_metrics as write_metrics
    from trainrecord.foundry import write_witness as write_witness
    from trainrecord.monitor import Monitor as Monitor
    from trainrecord.report import Reporter as Reporter
    from trainrecord.report import ReportSettings as ReportSettings

__version__ = "0.1.0"
_LAZY = {
    "ArgumentRefused": "trainrecord.arguments",
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

__all__ = [
    "MonitorClosed",
    "MonitorMisuseWarning",
    "Problem",
    "RecordRefused",
    "RecordWriteError",
    "TrainrecordError",
    "WriterClosed",
    "__version__",
    *sorted(_LAZY),
]


if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name is a type error

    def __getattr__(name: str) -> object:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'trainrecord' has no attribute {name!r}")
        import importlib

        return getattr(importlib.import_module(module), name)
