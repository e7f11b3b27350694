"""Checks of the arguments of trainrecord's classes: one place, one wording.

``Monitor(...)``, ``DiaryWriter(...)`` and ``MetricsWriter(...)`` check every option with
these before they create a file or a folder: a flag is ``True`` or ``False`` (not ``"no"``,
which Python takes as true, nor ``1``), a count is an ``int`` (not a bool, not ``1.0``, not
``"5"``), a ratio or an interval is a finite real number in its range, a path is a
non-empty ``str`` or ``os.PathLike``. A wrong argument raises :class:`ArgumentRefused`,
whose message names the call and the argument, says what it must be, shows the value
given (its type too) and what to pass. It is both a ``TypeError`` and a ``ValueError``, so
code that caught either before (these checks were ``ValueError`` for some arguments and
Python's own ``TypeError`` deep inside for others) still does. The module imports neither
torch nor numpy: the diary writers use it too.
"""

from __future__ import annotations

import math
import numbers
import os
from pathlib import Path
from typing import Any

from trainrecord.errors import TrainrecordError, safe_value


class ArgumentRefused(TrainrecordError, TypeError, ValueError):
    """An argument of a trainrecord call is of the wrong type or out of its range.

    ``call``: the call as written in the message (``Monitor``); ``argument``: its name."""

    def __init__(self, call: str, argument: str, message: str) -> None:
        self.call = call
        self.argument = argument
        super().__init__(f"{call}({argument}=...): {message}")


def shown(value: Any) -> str:
    """``value`` for a message: its (shortened) repr and, unless it is None, its type."""
    if value is None:
        return "None"
    try:
        text = safe_value(value)
    except ValueError:  # an int of more digits than str() converts
        text = "(too long to show)"
    return f"{text} (of type {type(value).__name__})"


def refuse(call: str, argument: str, must: str, value: Any, fix: str = "") -> ArgumentRefused:
    """The error for ``argument`` of ``call``: it ``must`` be..., got ``value``; ``fix``."""
    message = f"{argument} must be {must}, got {shown(value)}"
    return ArgumentRefused(call, argument, f"{message}; {fix}" if fix else message)


def flag(call: str, argument: str, value: Any, fix: str = "") -> bool:
    """``value`` when it is ``True`` or ``False``; anything else is refused (a string such
    as ``"no"`` is true to Python, and would turn the option on)."""
    if value is True or value is False:
        return bool(value)
    raise refuse(call, argument, "True or False", value, fix)


def whole(
    call: str, argument: str, value: Any, minimum: int, maximum: int | None = None, fix: str = ""
) -> int:
    """``value`` when it is an ``int`` (not a bool) from ``minimum`` to ``maximum``."""
    span = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise refuse(call, argument, f"a whole number (an int) {span}", value, fix)
    if value < minimum or (maximum is not None and value > maximum):
        raise refuse(call, argument, f"a whole number {span}", value, fix)
    return int(value)


def real(
    call: str,
    argument: str,
    value: Any,
    *,
    minimum: float | None = None,
    below: float | None = None,
    fix: str = "",
) -> float:
    """``value`` as a float when it is a finite real number (an int or a float, not a bool)
    ``>= minimum`` and ``< below`` (each bound only when given)."""
    bounds = [f">= {minimum:g}"] if minimum is not None else []
    bounds += [f"< {below:g}"] if below is not None else []
    must = "a finite number" + (", " + " and ".join(bounds) if bounds else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise refuse(call, argument, must, value, fix)
    try:
        number = float(value)
    except (OverflowError, ValueError):  # an int beyond a float's range
        raise refuse(call, argument, must, value, fix) from None
    if (
        not math.isfinite(number)
        or (minimum is not None and number < minimum)
        or (below is not None and number >= below)
    ):
        raise refuse(call, argument, must, value, fix)
    return number


def path(call: str, argument: str, value: Any, fix: str = "") -> Path:
    """``value`` as a Path when it is a non-empty ``str`` or ``os.PathLike`` (``""`` would be
    the current directory, which nobody means by leaving a path empty)."""
    if not isinstance(value, (str, os.PathLike)):
        raise refuse(call, argument, "a path (a str or a pathlib.Path)", value, fix)
    text = os.fspath(value)
    if not isinstance(text, str):  # a bytes path
        raise refuse(call, argument, "a path given as text (a str or a pathlib.Path)", value, fix)
    if not text:
        raise refuse(call, argument, "a non-empty path ('.' for the current directory)", value, fix)
    return Path(text)
