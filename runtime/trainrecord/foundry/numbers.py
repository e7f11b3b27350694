"""Numbers as the Foundry writers take them from Python.

The records hold JSON numbers, which Python gives as ``int`` and ``float``. numpy scalars
are taken as the number they hold (``numpy.integer`` as an int, ``numpy.floating`` as a
float; ``numpy.bool_`` stays a boolean and is refused). A torch tensor, even a 0-d one, is
not converted: the caller decides with ``.item()`` (which may wait for the device).
Everything else is passed on unchanged for the schema to judge.
"""

from __future__ import annotations

import numbers
from typing import Any


def plain_number(value: Any) -> Any:
    """``value`` as a plain ``int``/``float`` when it is a numpy number; otherwise as is."""
    if type(value).__module__ != "numpy" or isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return value
