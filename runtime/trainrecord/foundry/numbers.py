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


MAX_INT_DIGITS = 4300
"""The longest integer the records hold, in decimal digits: Python's json reads and writes
no longer one (``sys.get_int_max_str_digits()``'s default), so neither implementation
writes or reads one, whatever the process's own setting (spec/README.md, Foundry)."""

_TOO_LONG = 10**MAX_INT_DIGITS


def too_long(value: Any) -> bool:
    """Whether ``value`` is an int of more than :data:`MAX_INT_DIGITS` decimal digits."""
    return type(value) is int and (value >= _TOO_LONG or value <= -_TOO_LONG)


def long_int_problems(data: Any, fields: tuple[str, ...], kind: str, at: tuple = ()) -> list:
    """The ``<kind>.<field>.type`` problem of each of ``fields`` of the mapping ``data`` that
    holds an integer of more than :data:`MAX_INT_DIGITS` digits."""
    from trainrecord.errors import Problem

    if not isinstance(data, dict):
        return []
    return [
        Problem(
            f"{kind}.{name}.type",
            (*at, name),
            f"an integer of more than {MAX_INT_DIGITS} digits; the records hold integers of "
            f"at most {MAX_INT_DIGITS} digits (no JSON reader of Python takes a longer one)",
            f"an integer of about {int(data[name].bit_length() * 0.30103)} digits",
        )
        for name in fields
        if name in data and too_long(data[name])
    ]


def long_int_in(data: Any) -> bool:
    """Whether ``data`` (parsed JSON) holds an int of more than MAX_INT_DIGITS digits."""
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif too_long(value):
            return True
    return False
