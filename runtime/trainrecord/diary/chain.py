"""Checking a stretch of diary.jsonl line by line: JSON, schema, seq, prev, hash, order.

:func:`scan` checks the complete lines of a byte range and stops at the first line that
fails. It knows only what lies in its range; the caller joins ranges (seq and prev across
the boundary, the first line being run_start, the line after a run_end) and so can run
ranges in parallel processes. Each failure names the rule (``spec/rules/diary.json``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import re
import stat
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from trainrecord.diary.events import NOT_AN_OBJECT, fast_validators, line_problems
from trainrecord.diary.fastline import (
    LineSyntaxError,
    canonical_body_std,
    exact_body,
    fast_json,
    no_duplicate_names,
    pad_exponents,
    parse_std,
)
from trainrecord.diary.relations import relation_problem
from trainrecord.errors import escaped, json_escaped
from trainrecord.folders import not_regular

_HEX64 = re.compile(r"[0-9a-f]{64}")
PREV_BROKEN = (
    "prev is not the hash of the line before (a line was removed, inserted, reordered or changed)"
)
HASH_BROKEN = "hash does not match the line's content: the line was changed after it was written"


@dataclass(frozen=True)
class LineFailure:
    """The first line that failed: its 1-based line number, seq, rule and reason."""

    line: int
    seq: int | None
    rule: str
    message: str
    file: str = "diary.jsonl"

    def __str__(self) -> str:
        where = self.file + (f" line {self.line}" if self.line > 0 else "")
        where += f" (seq {self.seq})" if self.seq is not None else ""
        return f"{where}: [{self.rule}] {self.message}"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "file": self.file,
            "line": self.line,
            "seq": self.seq,
            "rule": self.rule,
            "message": self.message,
        }


class RunEnd(NamedTuple):
    """What the metrics check needs of one run_end line."""

    line: int
    """Its 1-based line number in diary.jsonl."""
    sha: str
    """Its metrics_sha256."""
    checks: int
    errored: bool
    """It names an error (a record that stopped being written may lack rows)."""
    sessions: int
    """run_start lines since the run_end before it (or the first line): 1 when its session
    is the only one, more when a session before it ended without run_end (a crash)."""


@dataclass
class ChunkResult:
    """What one range of lines showed: enough for the caller to join ranges."""

    first_line: int
    lines: int = 0
    first_seq: int | None = None
    first_prev: str | None = None
    first_event: str | None = None
    last_seq: int | None = None
    last_hash: str | None = None
    last_event: str | None = None
    failure: LineFailure | None = None
    events: Counter[str] = field(default_factory=Counter)
    run_ends: list[RunEnd] = field(default_factory=list)
    """Every run_end in the range (its ``sessions`` counts the range's lines only)."""
    trailing_starts: int = 0
    """run_start lines after the range's last run_end (all of them when it has none)."""
    total: int = 0
    """Complete lines in the range, checked or not."""
    colons: int = 0
    """Colons the checked lines must hold when no name appears twice (see :func:`scan`)."""
    last_start: bytes | None = None
    """The raw text of the range's last verified run_start line, None when it has none."""

    def rebase(self, offset: int) -> ChunkResult:
        """The same result with line numbers moved down by ``offset`` lines."""
        if offset:
            self.first_line += offset
            self.run_ends = [end._replace(line=end.line + offset) for end in self.run_ends]
            if self.failure is not None and self.failure.line > 0:  # (0: no line named)
                self.failure = replace(self.failure, line=self.failure.line + offset)
        return self


def in_milliseconds(t: float) -> bool:
    """Whether the float ``t`` has at most three decimals in its shortest form, as
    ``round(t, 3) == t`` says, about five times faster: ``k = round(t * 1000)`` and
    ``k / 1000 == t`` (the division is correctly rounded, so it gives back ``t`` exactly
    when ``t`` is the double nearest to a number of milliseconds; and for such a ``t`` the
    product is within far less than 0.5 of ``k``). Beyond 1e12 seconds, and for a
    non-finite ``t``, ``round(t, 3) == t`` decides."""
    if -1e12 < t < 1e12:
        return round(t * 1000.0) / 1000.0 == t
    return round(t, 3) == t


def time_problem(t: Any) -> str | None:
    """What is wrong with a line's time (``diary.time.precision``), or None: the seed's
    time is a float rounded to milliseconds, so an integer token or a float with more than
    three decimals in its shortest form (``repr``) is refused. (``round(t, 3) == t`` holds
    exactly when ``repr(t)`` has at most three decimals.)"""
    if t.__class__ is float:
        if in_milliseconds(t):
            return None
        return (
            f"time: {t!r} has more than three decimals; time is Unix seconds rounded to "
            "milliseconds: write round(time.time(), 3)"
        )
    if t.__class__ is int:
        return (
            f"time: {t} is an integer token; time is a float (Unix seconds rounded to "
            f"milliseconds): write it as a float, {t}.0, as round(time.time(), 3) gives it"
        )
    return None  # not a number: the schema (diary.time.type) says so


_UNKNOWN: Any = object()
_SHOWN_MAX = 80
_WAS_EXPECTED = " was expected"
_ONE_OF = " is not one of "


class _Token(str):
    """A number as the file writes it (``1e400``, ``3.00``)."""


def _token_at(raw: bytes, path: tuple[str | int, ...]) -> str | None:
    """The number token at ``path`` in the JSON text ``raw``, as written; None when there is
    none (or ``raw`` does not parse)."""
    try:
        doc: Any = json.loads(raw, parse_float=_Token, parse_int=_Token)
        for part in path:
            doc = doc[part]
    except (ValueError, RecursionError, LookupError, TypeError):
        return None
    return str(doc) if doc.__class__ is _Token else None


def _at(document: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        try:
            document = document[part]
        except (LookupError, TypeError):
            return _UNKNOWN
    return document


def _beyond_double(value: Any) -> bool:
    """A JSON number no 64-bit float holds: it reads as infinity (``1e400``, 10**400)."""
    if value.__class__ is float:
        return not math.isfinite(value)
    if value.__class__ is int:
        try:
            float(value)
        except OverflowError:
            return True
    return False


def json_text(value: Any, token: str | None = None) -> str:
    """``value`` spelled as JSON writes it (``true``, ``null``, ``"text"``, ``3.0``), the
    file's own token for a number when known (``1e400``), shortened past 80 characters."""
    if token is not None:
        text = token
    elif _beyond_double(value):
        return "a number too large for a 64-bit float"
    else:
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (ValueError, TypeError, RecursionError):
            text = repr(value)
        text = json_escaped(text)  # C1 controls, bidi controls, lone surrogates
    return text if len(text) <= _SHOWN_MAX else text[: _SHOWN_MAX - 3] + "..."


def _json_words(message: str) -> str:
    """The Python values a schema message names besides the instance (an enum's list, a
    const) in JSON spelling."""
    for sep in (_ONE_OF, _WAS_EXPECTED):
        head, found, tail = message.partition(sep)
        spelled = tail if sep == _ONE_OF else head
        if found:
            try:
                spelled = json.dumps(ast.literal_eval(spelled), ensure_ascii=False)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return message
            return f"{head}{found}{spelled}" if sep == _ONE_OF else f"{spelled}{found}{tail}"
    return message


def problem_text(p: Any, document: Any = _UNKNOWN, raw: bytes | None = None) -> str:
    """A schema problem as a failure's message: the field, what is wrong, the value (the
    failure shows its rule id itself).

    With the parsed ``document`` (and its JSON text ``raw``) the value is shown once, as
    JSON spells it (``seq: true is not of type 'integer'``, not Python's ``True ... (got
    True)``), a number as the file writes it (``1e400``, not Python's ``inf``)."""
    value = _at(document, tuple(p.path)) if p.value is not None else _UNKNOWN
    if value is _UNKNOWN:
        shown = f" (got {p.value})" if p.value is not None else ""
        return f"{p.field}: {p.message}{shown}"
    number = value.__class__ in (int, float)
    token = _token_at(raw, tuple(p.path)) if number and raw is not None else None
    if number and _beyond_double(value):
        text = f"{token} is" if token is not None else "a number"
        return (
            f"{p.field}: {text} too large for a 64-bit float (it reads as infinity); "
            "write a finite number"
        )
    shown = json_text(value, token)
    python = repr(value)
    if p.message.startswith(python + " "):
        return f"{p.field}: {shown}{_json_words(p.message[len(python) :])}"
    return f"{p.field}: {_json_words(p.message)} (got {shown})"


def irregular(path: Path, file: str) -> LineFailure | None:
    """``diary.file.regular`` when ``path`` exists and is not a regular file (a folder, a
    FIFO, a socket, a device: reading one raises or blocks); None otherwise. A link to a
    regular file counts as one."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None  # missing (or a dangling link): the caller's own rule
    if stat.S_ISREG(mode):
        return None
    kind = not_regular(mode)
    return LineFailure(
        0,
        None,
        "diary.file.regular",
        f"{file} is {kind}, not a regular file; a record's {file} is a file: move that "
        f"away and put the record's {file} there",
        file,
    )


CRLF_FIX = (
    "a Windows checkout (git's core.autocrlf) or an editor converted the record's line "
    "ends: convert its files back (dos2unix diary.jsonl metrics.jsonl record.json "
    "record.sig) and keep git from converting them (`*.jsonl -text` and `record.* -text` "
    "in .gitattributes)"
)
"""What to do about a record whose files were converted to CRLF line ends."""


def crlf_note(path: Path, sha256: str | None = None) -> str:
    """``""`` unless ``path`` holds a CRLF line end; then ``"; NAME has CRLF line ends
    ..."``, to follow a digest or signature failure of that file: whether the file with LF
    line ends has SHA-256 ``sha256`` (the digest a writer took of its bytes, written with
    LF; None: not known) and, when it has or may have, what to do. The verdict stays the
    rule's: the bytes are not those pinned (a decision in spec/README.md, "File bytes")."""
    digest, found, held = hashlib.sha256(), False, b""
    try:
        with open(path, "rb") as fh:
            while block := fh.read(1 << 20):
                block = held + block
                held = block[-1:] if block.endswith(b"\r") else b""  # (a CR LF cut in two)
                block = block[: len(block) - len(held)]
                found = found or b"\r\n" in block
                digest.update(block.replace(b"\r\n", b"\n"))
    except OSError:
        return ""
    if not found:
        return ""
    digest.update(held)
    if sha256 is None:
        return f"; {path.name} has CRLF line ends: {CRLF_FIX}"
    if digest.hexdigest() == sha256:
        return f"; {path.name} has CRLF line ends, and with LF line ends it matches: {CRLF_FIX}"
    return (
        f"; {path.name} has CRLF line ends, and with LF line ends it does not match either: "
        "more than its line ends was changed"
    )


def _seq_of(value: Any) -> int | None:
    seq = value.get("seq") if isinstance(value, dict) else None
    return seq if type(seq) is int else None


def _fail_schema(line_no: int, value: dict[str, Any], raw: bytes) -> LineFailure | None:
    found = line_problems(value)
    if not found:
        return None
    p = found[0]
    return LineFailure(line_no, _seq_of(value), p.rule, problem_text(p, value, raw))


def _fail_schema_raw(line_no: int, raw: bytes) -> LineFailure | None:
    """The schema (or strict JSON) failure of a line, parsed afresh by the definition (the
    fast path's copy may hold pre-spelled floats)."""
    try:
        value = parse_std(raw)
    except LineSyntaxError as exc:
        return LineFailure(line_no, None, "diary.file.json", str(exc))
    return _fail_schema(line_no, value, raw) if isinstance(value, dict) else None


def _slow_line(raw: bytes, line_no: int) -> tuple[dict[str, Any], bytes] | LineFailure:
    """The definition, with the standard library: parse, check the schema, canonicalise."""
    try:
        value = parse_std(raw)
    except LineSyntaxError as exc:
        return LineFailure(line_no, None, "diary.file.json", str(exc))
    if not isinstance(value, dict):
        return LineFailure(line_no, None, "diary.file.json", NOT_AN_OBJECT)
    failure = _fail_schema(line_no, value, raw)
    if failure is not None:
        return failure
    try:
        body = canonical_body_std(value)
    except RecursionError:  # parsed, but nested too deeply for json.dumps from this depth
        return LineFailure(
            line_no,
            _seq_of(value),
            "diary.file.json",
            "arrays or objects nested too deeply to write as canonical JSON (no record "
            "nests beyond a few levels)",
        )
    except (ValueError, TypeError):  # a number beyond a 64-bit float (1e400) parses as inf
        return LineFailure(
            line_no,
            _seq_of(value),
            "diary.file.json",
            "the line holds a number too large for a 64-bit float (it reads as infinity, "
            "which canonical JSON cannot write)",
        )
    return value, body


def scan(data: bytes | memoryview, first_line: int) -> ChunkResult:
    """Check every complete line in ``data`` (which ends at a newline or is empty).

    ``first_line`` is the 1-based number of the first line in the file. Within the range,
    seq must increase by one from the first line's seq and each prev must be the hash of
    the line before; the first line's seq and prev are left to the caller.

    Duplicate names are ruled out for the whole range at once: with no ``\\u`` escape in
    it, the range has exactly two colons per line more than the bodies hashed (the names
    prev and hash) only when no name was dropped (see :func:`no_duplicate_names`). When
    that does not hold, or a line fails, the range is checked again line by line, so the
    first failing line and its rule are the line-by-line answer.

    The ASCII half of the fast path's proof is also made for the whole range at once: with
    no ``\\u`` escape, every string a line parses to holds only characters written raw in
    the range or given by a short escape (``\\n``, ``\\"``, ...), so when the range is
    ASCII without DEL, so is orjson's output of every line (see :mod:`.fastline`).
    """
    raw_all = bytes(data)
    # (a backslash is rare: memchr finds there is none far faster than a search for \u)
    if b"\\" not in raw_all or b"\\u" not in raw_all:
        plain = raw_all.isascii() and b"\x7f" not in raw_all
        res = _scan(raw_all, first_line, strict=False, plain=plain)
        if res.failure is None and res.colons == raw_all.count(b":"):
            return res
    return _scan(raw_all, first_line, strict=True)


def _scan(raw_all: bytes, first_line: int, *, strict: bool, plain: bool = False) -> ChunkResult:
    """The range line by line. ``strict``: rule out duplicate names line by line. ``plain``:
    the caller proved every line's orjson output ASCII without DEL (see :func:`scan`)."""
    res = ChunkResult(first_line=first_line)
    lines = raw_all.split(b"\n")
    lines.pop()  # after the final newline
    res.total = len(lines)
    sha256 = hashlib.sha256
    valid = fast_validators()
    common = valid[None]
    check_of = valid.get
    loads, dumps, decode_error, sort = fast_json()
    events: list[str] = []
    seen = events.append
    colons = 0
    prev_hash: str | None = None
    prev_event: str | None = None
    expect_seq: int | None = None
    starts = 0  # run_start lines since the last run_end
    for line_no, raw in enumerate(lines, first_line):
        body = None
        slow_body = False
        try:
            value = loads(raw)
        except decode_error:
            value = None
        if value.__class__ is dict:
            event: Any = value.get("event")  # any JSON value: a str once a validator passed
            t = value.get("time")  # (before exact_body may put spelled floats in value)
            prev = value.pop("prev", None)
            digest_given = value.pop("hash", None)
            # the fast checks leave prev and hash to this code: strings, or the slow path
            if (
                prev.__class__ is str
                and digest_given.__class__ is str
                and (check_of(event, common) if event.__class__ is str else common)(value)
            ):
                try:
                    out = dumps(value, option=sort)
                except TypeError:  # nested deeper than orjson writes (255 levels, while
                    pass  # json and the seed's snippet go on): the slow path decides
                else:
                    # (45 and 43 are "-" and "+": an int is looked up by memchr, at less cost
                    # than a bytes needle, and rules most lines out of the "e-" and "e+" search)
                    if (
                        (plain or (out.isascii() and b"\x7f" not in out))
                        and (43 not in out or b"e+" not in out)
                        and b"0.0000" not in out
                    ):
                        if 45 not in out or b"e-" not in out:
                            body = out
                        else:  # floats below 1e-5: Python pads their exponent to two digits
                            body = pad_exponents(out) or exact_body(value, raw, out, True)
                    else:
                        body = exact_body(value, raw, out, plain)
                    if strict and not no_duplicate_names(raw, out):
                        body = None
        if body is None:
            slow = _slow_line(raw, line_no)
            if slow.__class__ is LineFailure:
                res.failure = slow
                break
            value, body = slow  # type: ignore[misc]
            slow_body = True
            prev = value["prev"]
            digest_given = value["hash"]
            event = value["event"]
            t = value["time"]
        seq = value["seq"]
        # in_milliseconds(t), its common case inline (a call per line costs 5 % of verify)
        if t.__class__ is not float or not (
            (-1e12 < t < 1e12 and round(t * 1000.0) / 1000.0 == t) or in_milliseconds(t)
        ):
            failure = LineFailure(line_no, seq, "diary.time.precision", str(time_problem(t)))
            res.failure = _fail_schema_raw(line_no, raw) or failure
            break
        if expect_seq is None:
            res.first_seq, res.first_prev, res.first_event = seq, prev, event
            # the caller checks this line's seq and prev: make sure their format is checked
            # (the fast check left only the format of prev and hash to check)
            if not (
                prev.__class__ is str
                and digest_given.__class__ is str
                and _HEX64.fullmatch(prev)
                and _HEX64.fullmatch(digest_given)
            ):
                schema_failure = _fail_schema_raw(line_no, raw)
                if schema_failure is not None:
                    res.failure = schema_failure
                    break
            expect_seq, prev_hash = seq, prev
        # the common case first: every check holds
        if (
            seq == expect_seq
            and prev == prev_hash
            and (prev_event != "run_end" or event == "run_start")
        ):
            digest = sha256(prev.encode() + body).hexdigest()
            if digest != digest_given and not slow_body:
                # before reporting a broken hash, the definition's own bytes: should orjson
                # ever spell a value differently from json.dumps, a valid line still verifies
                slow = _slow_line(raw, line_no)
                if slow.__class__ is not LineFailure:
                    digest = sha256(prev.encode() + slow[1]).hexdigest()  # type: ignore[index]
            if digest == digest_given:
                if event == "run_end" or event == "repair":  # fields a schema cannot relate
                    # (a repair's floats as parsed: the fast path may have pre-spelled them)
                    broken = relation_problem(event, value if slow_body else parse_std(raw))
                    if broken is not None:
                        res.failure = LineFailure(line_no, seq, *broken)
                        break
                seen(event)
                colons += body.count(b":")
                if event == "run_end":
                    res.run_ends.append(
                        RunEnd(
                            line_no,
                            value["metrics_sha256"],
                            value["checks"],
                            value.get("error") is not None,
                            starts,
                        )
                    )
                    starts = 0
                elif event == "run_start":
                    res.last_start = raw
                    starts += 1
                prev_hash = digest
                prev_event = event
                expect_seq = seq + 1
                continue
            failure = LineFailure(line_no, seq, "diary.chain.hash", HASH_BROKEN)
        elif seq != expect_seq:
            failure = LineFailure(
                line_no, seq, "diary.chain.seq", f"seq is {seq}, expected {expect_seq}"
            )
        elif prev != prev_hash:
            failure = LineFailure(line_no, seq, "diary.chain.prev", PREV_BROKEN)
        else:
            failure = LineFailure(
                line_no,
                seq,
                "diary.order.run_end",
                f"a {escaped(str(event))} line follows run_end; only a run_start (a resumed "
                "run) may",
            )
        # the schema comes first: prev and hash formats are checked only here
        res.failure = _fail_schema_raw(line_no, raw) or failure
        break
    res.events.update(events)
    res.lines = count = len(events)
    res.trailing_starts = starts
    if res.failure is None:
        # the colons of the hashed bodies, and those of prev and hash (see scan)
        res.colons = colons + 2 * count
        res.last_seq = None if expect_seq is None else expect_seq - 1
        res.last_hash = prev_hash
        res.last_event = prev_event
    return res
