"""Canonical JSON and the hashes built on it.

Two canonical forms exist, both defined by the seeds in terms of Python's ``json.dumps``
with its defaults (``ensure_ascii=True``, Python's float ``repr``):

* the diary line form: ``json.dumps(body, sort_keys=True, separators=(",", ":"))``;
* the Foundry configuration form: ``json.dumps(config, sort_keys=True)`` (default
  separators ``", "`` and ``": "``).

The diary line form refuses non-finite floats (``allow_nan=False``): diary lines are
strict JSON (RFC 8259); see ``spec/README.md`` for how non-finite values are written
instead. The configuration form is hashed, never parsed, and the seed defines it as
``json.dumps`` with its defaults: a NaN or an infinity in a configuration is written as
``NaN``, ``Infinity`` or ``-Infinity`` and hashed like everything else.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

GENESIS = "0" * 64
"""The ``prev`` of the first diary line."""


def canonical_line(body: Any) -> str:
    """The diary's canonical JSON of ``body`` (sorted keys, no spaces, ASCII escapes)."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)


def line_hash(prev: str, body: Any) -> str:
    """SHA-256 hex of ``prev`` followed by the canonical JSON of ``body``."""
    return hashlib.sha256((prev + canonical_line(body)).encode("utf-8")).hexdigest()


def canonical_config(config: Any) -> str:
    """The Foundry configuration form: exactly ``json.dumps(config, sort_keys=True)``.

    NaN and infinities are written as json.dumps writes them (``NaN``, ``Infinity``,
    ``-Infinity``); what json.dumps cannot serialize at all raises its ``TypeError``,
    ``ValueError`` (a circular reference) or ``RecursionError``.
    """
    return json.dumps(config, sort_keys=True)


def config_sha(config: Any) -> str:
    """First 16 hex characters of SHA-256 over the UTF-8 bytes of the configuration form."""
    return hashlib.sha256(canonical_config(config).encode("utf-8")).hexdigest()[:16]


def _refuse_constant(token: str) -> Any:
    raise ValueError(f"the non-finite number token {token} is not strict JSON (RFC 8259)")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise ValueError(
            f"duplicate key: the name {dup!r} appears twice in one object (strict JSON: "
            "parsers disagree on which one wins)"
        )
    return out


def loads_strict(text: str | bytes) -> Any:
    """Parse JSON, refusing ``NaN``/``Infinity`` tokens and duplicate object keys.

    Duplicate keys are refused because parsers disagree on which one wins (Python keeps the
    last, others the first): a record that reads differently in two tools cannot be trusted.
    Bytes must be UTF-8 without a byte order mark (RFC 8259): ``json.loads`` alone would
    also take UTF-16 and UTF-32 bytes, and a UTF-8 BOM. Every refusal is a ``ValueError``
    (``UnicodeDecodeError``, ``json.JSONDecodeError``, or a plain one for nesting deeper
    than the parser's recursion allows).
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")  # strict: a BOM then fails as JSON, as it should
    try:
        return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
    except RecursionError:  # [[[[... a thousand deep: no record nests so; never a crash
        raise ValueError(
            "arrays or objects nested too deeply to parse (no record nests beyond a few levels)"
        ) from None


def refusal_reason(exc: Exception, *, in_line: bool) -> str:
    """Why :func:`loads_strict` refused a text, in words for people.

    A JSON syntax error is said by json's message and its column, and by its line too when
    the text is a whole file (``in_line`` false): ``expecting value at column 7``. json's
    own text (``Expecting value: line 1 column 7 (char 6)``) counts lines in the text it
    parsed, which for one line of a JSON Lines file is always line 1, not the file's line
    (the caller names that). Other refusals are said by their first line."""
    if isinstance(exc, json.JSONDecodeError):
        what = exc.msg.removesuffix(" at")  # "Unterminated string starting at"
        at = f"column {exc.colno}" if in_line else f"line {exc.lineno}, column {exc.colno}"
        return f"{what[:1].lower()}{what[1:]} at {at}"
    return str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__


def dumps_strict(obj: Any, *, indent: int | None = None) -> str:
    """Serialise to strict JSON (no non-finite tokens), UTF-8 text kept as is."""
    return json.dumps(obj, allow_nan=False, ensure_ascii=False, indent=indent)
