"""What PyTorch reports about the accelerator a run used: its name and peak allocation.

torch is imported only here, only when the requested device is not the CPU, and only if
it is installed: the Foundry writer works without torch. Whatever goes wrong while asking
(no torch, the backend is not available, a driver error) gives null values: a witness
written from a ``finally`` block must not fail because the accelerator cannot be queried.
"""

from __future__ import annotations

import importlib
from typing import Any

MEBIBYTE = 1024 * 1024


def device_kind(device: str) -> str:
    """The device type of a device string: ``"cuda"`` for ``"cuda:1"``."""
    return device.split(":", 1)[0].strip().lower()


def _index(device: str, backend: Any) -> int:
    _, _, tail = device.partition(":")
    tail = tail.strip()
    if tail.isascii() and tail.isdigit():
        return int(tail)
    return int(backend.current_device())


def accelerator_info(device: str) -> tuple[str | None, int | None]:
    """(device_name, peak_vram_mb) for ``device``; (None, None) on the CPU or when unknown.

    For a backend with PyTorch's CUDA-style API (``cuda``, which ROCm builds share, and
    ``xpu``): ``get_device_name(index)`` and ``max_memory_allocated(index)`` in whole
    mebibytes (rounded down). ``mps`` reports no name and no peak, so both are null.
    """
    kind = device_kind(device)
    if kind == "cpu":
        return None, None
    try:
        torch = importlib.import_module("torch")
    except Exception:  # torch missing, broken, or the query failed: report nothing
        return None, None
    backend = getattr(torch, kind, None)
    name: str | None = None
    peak: int | None = None
    try:
        if backend is None or not backend.is_available():
            return None, None
        index = _index(device, backend)
        if hasattr(backend, "get_device_name"):
            name = str(backend.get_device_name(index))
        if hasattr(backend, "max_memory_allocated"):
            peak = int(backend.max_memory_allocated(index)) // MEBIBYTE
    except Exception:  # torch missing, broken, or the query failed: report nothing
        return name, None
    return name, peak
