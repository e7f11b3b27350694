"""Non-finite numbers in strict-JSON records.

Diary files are strict JSON (RFC 8259), which has no token for NaN or the infinities. A
writer turns every non-finite float into one of the strings ``"NaN"``, ``"Infinity"`` or
``"-Infinity"`` before checking and writing; the schemas accept those strings only where a
value may be non-finite (``nonfinite_loss.value``, the loss and gradient norms of a
metrics row). See spec/README.md, "Diary".
"""

from __future__ import annotations

import math
from typing import Any

from trainrecord.errors import RecordRefused

NAN = "NaN"
INFINITY = "Infinity"
NEG_INFINITY = "-Infinity"
TOKENS: frozenset[str] = frozenset({NAN, INFINITY, NEG_INFINITY})


def token(value: float) -> str:
    """The string that stands for a non-finite float."""
    if math.isnan(value):
        return NAN
    return INFINITY if value > 0 else NEG_INFINITY


def encode(obj: Any) -> Any:
    """A copy of ``obj`` with every non-finite float replaced by its string token.

    Floats of other types that subclass ``float`` (e.g. numpy.float64) become plain
    floats; dicts, lists and tuples are copied (tuples become lists, as JSON has them). A
    dict key that is not a string is refused (JSON would silently turn it into one).
    """
    if isinstance(obj, float):
        return float(obj) if math.isfinite(obj) else token(obj)
    if isinstance(obj, dict):
        for k in obj:
            if not isinstance(k, str):
                raise RecordRefused.one(
                    "diary.file.json",
                    [repr(k)],
                    "JSON object keys must be strings; convert the key",
                    k,
                )
        # a leaf that encode() would return unchanged is kept without a call per leaf
        return {
            k: v if type(v) in _PLAIN or (type(v) is float and _isfinite(v)) else encode(v)
            for k, v in obj.items()
        }
    if isinstance(obj, (list, tuple)):
        return [
            v if type(v) in _PLAIN or (type(v) is float and _isfinite(v)) else encode(v)
            for v in obj
        ]
    return obj


_PLAIN = frozenset({str, int, bool, type(None)})
_isfinite = math.isfinite


def decode(value: Any) -> Any:
    """A number from a value that may be a non-finite token (for reading tools)."""
    if isinstance(value, str) and value in TOKENS:
        return float("nan") if value == NAN else float(value.replace("Infinity", "inf"))
    return value
