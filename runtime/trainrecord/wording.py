"""How counts read in the messages of trainrecord's commands: ``1 line``, ``2 lines``."""

from __future__ import annotations

from typing import Any


def counted(count: Any, word: str, plural: str | None = None) -> str:
    """``1 step``, ``2 steps`` (``plural`` for a word whose plural is not ``word + 's'``); a
    count that is not a number is shown as it is (a record's field may hold anything)."""
    one = isinstance(count, int) and not isinstance(count, bool) and count == 1
    return f"{count} {word if one else plural or word + 's'}"
