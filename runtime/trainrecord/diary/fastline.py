"""Parse a diary line and produce its canonical body bytes, fast when that is provably exact.

The line hash is ``sha256(prev + json.dumps(body, sort_keys=True, separators=(",", ":")))``.
``json`` is slow; orjson is several times faster but does not write the same bytes in
every case: it writes non-ASCII characters and DEL raw where ``json`` escapes them, spells
some floats differently (``1e-7`` and ``0.00001`` where Python writes ``1e-07`` and
``1e-05``), and parses integers beyond 64 bits as floats. The fast path here uses orjson
and keeps its output only when that output is pure ASCII, holds no DEL byte, no digit
followed by ``e`` (every exponent float and every integer orjson could not hold) and no
``0.0000`` (the small floats it writes positionally). Under those conditions the bytes
are exactly what ``json.dumps`` writes (tested by a differential Hypothesis test and on
every line of the bench). When the only doubt is ``e-`` (floats below 1e-5, which
orjson writes as Python does but for a one-digit exponent: ``1e-7`` for ``1e-07``), the
exponents are padded in place (:func:`pad_exponents`); when other floats are in doubt,
:func:`exact_body` writes them again pre-spelled by ``repr``; otherwise the line is parsed
and canonicalised again with the standard library, which is the definition.
"""

from __future__ import annotations

import json
import re
from typing import Any

from trainrecord.canonical import canonical_line, loads_strict, refusal_reason

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a runtime dependency; json still works
    orjson = None  # type: ignore[assignment]

_BIG_INT = re.compile(rb"[0-9]{19}")
_EXCLUDED = ("prev", "hash")


class LineSyntaxError(ValueError):
    """The line is not one strict JSON object."""


def parse_std(raw: bytes) -> Any:
    """Parse with the standard library (the definition), refusing what strict JSON refuses:
    non-finite tokens and an object with the same name twice (see spec/README.md)."""
    try:
        return loads_strict(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise LineSyntaxError(f"the line is not UTF-8 ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise LineSyntaxError(
            f"the line is not JSON: {refusal_reason(exc, in_line=True)}"
        ) from None
    except ValueError as exc:  # a non-finite token or a duplicate name (loads_strict)
        raise LineSyntaxError(str(exc)) from None


def no_duplicate_names(raw: bytes, out: bytes) -> bool:
    """Proof that ``raw`` names no key twice, given orjson's ``out`` of it without prev and hash.

    orjson keeps the last of duplicate names silently. Every name in ``raw`` is followed by
    a colon, and so is every name in ``out`` (where names are unique); colons inside
    strings are the same in both as long as ``raw`` has no ``\\u`` escape. So when ``raw``
    has no escape and exactly two colons more than ``out`` (the names prev and hash), no
    name was dropped. Otherwise the standard library decides.
    """
    return b"\\u" not in raw and raw.count(b":") - out.count(b":") == 2


def canonical_body_std(line: dict[str, Any]) -> bytes:
    """The definition: ``json.dumps`` of the line without prev and hash, as bytes."""
    body = {k: v for k, v in line.items() if k not in _EXCLUDED}
    return canonical_line(body).encode("utf-8")


def _no_fast_parse(raw: bytes) -> Any:  # pragma: no cover - without orjson
    raise ValueError("orjson is not installed")


def fast_json() -> tuple[Any, Any, Any, int]:
    """(loads, dumps, decode error, sort option) of orjson.

    Without orjson, ``loads`` always fails, so every line takes the standard library's
    path (correct, only slower).
    """
    if orjson is None:  # pragma: no cover
        return _no_fast_parse, None, ValueError, 0
    return orjson.loads, orjson.dumps, orjson.JSONDecodeError, orjson.OPT_SORT_KEYS


_HUGE = float(2**63)  # at and above this, a parsed float may be an integer orjson could not hold


def _python_floats(obj: Any, fragment: Any, huge: list[bool]) -> None:
    """Replace, in place, every float Python spells with an exponent by a pre-spelled
    fragment (``obj`` is a freshly parsed dict or list that nothing else holds)."""
    items: Any = obj.items() if obj.__class__ is dict else enumerate(obj)
    for k, v in items:  # values change, keys do not: safe while iterating
        cls = v.__class__
        if cls is float:
            mag = v if v >= 0.0 else -v
            if mag != 0.0 and (mag < 1e-4 or mag >= 1e16):
                if mag >= _HUGE:
                    huge.append(True)
                obj[k] = fragment(repr(v).encode())
        elif cls is dict or cls is list:
            _python_floats(v, fragment, huge)


def exact_body(body: dict[str, Any], raw: bytes, out: bytes, plain: bool = False) -> bytes | None:
    """Canonical bytes of an orjson-parsed body whose orjson text was not provably exact.

    When the only doubt is float spelling (``out`` is ASCII without DEL; ``plain``: the
    caller has proved that already), the floats Python writes with an exponent (below
    1e-4, from 1e16) are given to orjson pre-spelled by ``repr``, which is how
    ``json.dumps`` spells them. orjson parses an integer it cannot hold (beyond 64 bits) as
    a float of 2**63 or more; when such a float appears and the line holds 19 or more
    digits in a row, the values may not be exact and the answer is None: the caller parses
    again with the standard library.
    """
    if not plain and (not out.isascii() or b"\x7f" in out):
        return None
    if orjson is None:  # pragma: no cover
        return None
    fragment = orjson.Fragment
    huge = False
    # the top level inline (most lines are flat); nested values by _python_floats
    for k, v in body.items():  # values change, keys do not: safe while iterating
        cls = v.__class__
        if cls is float:
            if (-1e-4 < v < 1e-4 and v != 0.0) or v >= 1e16 or v <= -1e16:
                if v >= _HUGE or v <= -_HUGE:
                    huge = True
                body[k] = fragment(repr(v).encode())
        elif cls is dict or cls is list:
            found: list[bool] = []
            _python_floats(v, fragment, found)
            huge = huge or bool(found)
    if huge and _BIG_INT.search(raw) is not None:
        return None
    return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)


def pad_exponents(out: bytes) -> bytes | None:
    """orjson's body ``out`` with Python's two-digit negative exponents: ``1e-7`` as ``1e-07``.

    For an ``out`` whose only doubt is ``e-`` (no ``e+``, no ``0.0000``; the caller checks):
    orjson writes floats below 1e-5 as Python does except that a one-digit exponent is not
    padded to two (``1.5e-7``, where ``repr`` writes ``1.5e-07``); the digits are the same
    shortest round trip that every other float's bytes rest on (see the module docstring;
    tested differentially). With no backslash in ``out``, every ``"`` opens or closes a
    string, so an ``e-`` after an even number of them lies in a number token; one inside a
    string is left alone. None when ``out`` holds a backslash (the caller then asks
    :func:`exact_body`).
    """
    if 92 in out:  # a backslash: a quote may be escaped, so strings cannot be told by count
        return None
    pieces: list[bytes] = []
    done = 0
    find = out.find
    at = find(b"e-")
    while at >= 0:
        digit = at + 2
        if out.count(34, 0, at) % 2 == 0 and not 48 <= out[digit + 1] <= 57:  # 34: '"'
            pieces += (out[done:digit], b"0")
            done = digit
        at = find(b"e-", digit)
    pieces.append(out[done:])
    return b"".join(pieces)
