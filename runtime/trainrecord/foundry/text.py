"""Text the Foundry records can hold: a ``str`` that UTF-8 can encode.

JSON can carry a lone surrogate (``"\\ud800"``) and Python strings can hold one (file names
decoded with ``surrogateescape``, say), but UTF-8 cannot encode it: such a value is not
text (``spec/README.md``, Foundry run records v1, "Blank"), and it is refused with the
field's ``*.type`` rule by the writers, the readers and ``trainrecord validate`` alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from trainrecord.errors import Problem, safe_value


def is_unicode(value: str) -> bool:
    """Whether UTF-8 can encode ``value`` (it holds no lone surrogate)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text_problems(
    document: Any, fields: Iterable[str], prefix: str, at: tuple[str | int, ...] = ()
) -> list[Problem]:
    """A ``<prefix>.<field>.type`` problem for each of ``fields`` of the object ``document``
    that is a ``str`` with a lone surrogate; ``at`` is the object's own JSON path.

    Anything else (a missing field, a value that is not a str, a document that is not an
    object) is left to the schema.
    """
    if not isinstance(document, dict):
        return []
    found = []
    for field in fields:
        value = document.get(field)
        if isinstance(value, str) and not is_unicode(value):
            found.append(
                Problem(
                    f"{prefix}.{field}.type",
                    (*at, field),
                    f"{field} is not valid Unicode text: it has a lone surrogate, which UTF-8 "
                    "cannot encode; give it as text without unpaired surrogates (decode bytes "
                    "with their real encoding, not surrogateescape)",
                    safe_value(value),
                )
            )
    return found
