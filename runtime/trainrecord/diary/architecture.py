"""architecture_sha256: the fingerprint of a model's parameter names and shapes.

The text hashed is ``name:shape`` for every parameter in ``model.named_parameters()`` order,
joined by ``|``, where shape is written as Python writes ``list(tensor.shape)``:
``conv1.weight:[16, 3, 3, 3]|conv1.bias:[16]``; a scalar parameter is ``scale:[]``. The
digest is SHA-256 of the UTF-8 text, in lowercase hex. This module does not import torch:
pass ``(name, shape)`` pairs (``(n, p.shape) for n, p in model.named_parameters()``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence


def architecture_text(named_shapes: Iterable[tuple[str, Sequence[int]]]) -> str:
    """The text whose SHA-256 is architecture_sha256."""
    return "|".join(f"{name}:{[int(d) for d in shape]}" for name, shape in named_shapes)


def architecture_sha256(named_shapes: Iterable[tuple[str, Sequence[int]]]) -> str:
    """SHA-256 (hex) of :func:`architecture_text`."""
    return hashlib.sha256(architecture_text(named_shapes).encode("utf-8")).hexdigest()
