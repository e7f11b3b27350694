"""trainrecord: write, send and verify training-run records that can be trusted.

The runtime of the trainrecord spec package: the training diary (``trainrecord.diary``),
the PyTorch monitor (``trainrecord.monitor``, needs torch), the Foundry run-record writers
(``trainrecord.foundry``) and the Reporting API v2 client and receiver
(``trainrecord.report``). Importing this package never imports torch.
"""

from __future__ import annotations

from typing import Any

from trainrecord.errors import Problem, RecordRefused

__version__ = "0.1.0"
__all__ = ["Monitor", "Problem", "RecordRefused", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Monitor":  # lazy: importing trainrecord must not import torch
        from trainrecord.monitor import Monitor

        return Monitor
    raise AttributeError(f"module 'trainrecord' has no attribute {name!r}")
