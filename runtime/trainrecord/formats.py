"""The record formats of trainrecord, as a table: how to recognise a file and check it.

Each :class:`Format` names its schema ``$id``, its layout (one JSON document, or JSON Lines
with one schema per line), how to recognise it from the file name or, failing that, from
the parsed content, and the rule a file breaks when it is not strict JSON. A JSON Lines
file whose last line has no newline and does not parse holds an incomplete last line, as a
crash while writing leaves it, and is said so (for the diary by its rule
``diary.file.torn``), with the ``trainrecord verify`` that checks the lines before it.
``trainrecord validate`` walks this table; adding a format is one entry.

Detection: the file name decides first (``observed.attempt<N>.json``, ``metrics.json``,
``diary.jsonl``, ``metrics.jsonl``, ...); a file with another name is recognised from its
content (a witness has ``run_record_format``, a report has ``"schema": 2``, ...).
"""

from __future__ import annotations

import errno
import fnmatch
import shlex
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from trainrecord import schemas
from trainrecord.canonical import loads_strict, refusal_reason
from trainrecord.errors import Problem


@dataclass(frozen=True)
class Format:
    """One record format: its schema, layout, how to recognise it, how to check it."""

    name: str
    schema_id: str
    layout: Literal["json", "jsonl"]
    names: tuple[str, ...]
    """Shell-style patterns (fnmatch, case-sensitive) of its file names; the first is an
    example name."""
    syntax_rule: str
    """The rule a file (or a line) breaks when it is not strict JSON text."""
    content: Callable[[Any], bool] | None = None
    """Recognises the parsed document (for JSON Lines: the first line)."""
    check: Callable[[Any, Path | None], list[Problem]] | None = None
    """Checks one parsed document or line; the default is the schema oracle."""
    torn_rule: str | None = None
    """The rule an incomplete last line of a JSON Lines file breaks (a torn tail, as a crash
    while writing leaves it); None: :attr:`syntax_rule`."""

    @property
    def example_name(self) -> str:
        """A file name this format is recognised by (for writing test files)."""
        return self.names[0].replace("*", "0")

    def matches_name(self, name: str) -> bool:
        """Whether a file called ``name`` is of this format."""
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.names)

    def problems(self, document: Any, path: Path | None = None) -> list[Problem]:
        """Every problem of one parsed document (or one line)."""
        if self.check is not None:
            return self.check(document, path)
        return schemas.problems(document, self.schema_id)


def _witness_check(document: Any, path: Path | None) -> list[Problem]:
    from trainrecord.foundry import witness_problems

    return witness_problems(document, path)


def _metrics_check(document: Any, path: Path | None) -> list[Problem]:
    from trainrecord.foundry.metrics import metrics_problems, sibling_version_problems

    found = sibling_version_problems(path) if path is not None else []
    return found or metrics_problems(document)


def _diary_check(document: Any, path: Path | None) -> list[Problem]:
    """A diary line: one that is JSON but not an object breaks ``diary.file.json``, as verify
    and the readers say (:func:`trainrecord.diary.events.not_an_object`); an object is
    checked against the line schema."""
    from trainrecord.diary.events import SCHEMA_BASE, not_an_object

    if not isinstance(document, dict):
        return [not_an_object(document)]
    return schemas.problems(document, SCHEMA_BASE + "line.schema.json")


def _has(key: str, value: Any = None) -> Callable[[Any], bool]:
    def test(document: Any) -> bool:
        return (
            isinstance(document, dict)
            and key in document
            and (value is None or document[key] == value)
        )

    return test


def _foundry_rows(document: Any) -> bool:
    return (
        isinstance(document, list)
        and bool(document)
        and isinstance(document[0], dict)
        and "benchmark" in document[0]
    )


FORMATS: tuple[Format, ...] = (
    Format(
        "foundry-witness",
        "https://trainrecord.dev/schemas/foundry/witness.schema.json",
        "json",
        ("observed.attempt*.json",),
        "witness.file.json",
        _has("run_record_format"),
        _witness_check,
    ),
    Format(
        "foundry-metrics",
        "https://trainrecord.dev/schemas/foundry/metrics.schema.json",
        "json",
        ("metrics.json",),
        "metrics.file.json",
        _foundry_rows,
        _metrics_check,
    ),
    Format(
        "diary",
        "https://trainrecord.dev/schemas/diary/line.schema.json",
        "jsonl",
        ("diary.jsonl",),
        "diary.file.json",
        _has("event"),
        _diary_check,
        torn_rule="diary.file.torn",
    ),
    Format(
        "diary-metrics",
        "https://trainrecord.dev/schemas/diary/metrics-row.schema.json",
        "jsonl",
        ("metrics.jsonl",),
        "diary.metrics.json",
        _has("grad"),
    ),
    Format(
        "diary-record",
        "https://trainrecord.dev/schemas/diary/record.schema.json",
        "json",
        ("record.json",),
        "seal.file.json",
        _has("sealed_by"),
    ),
    Format(
        "report",
        "https://trainrecord.dev/schemas/reporting/reporting.schema.json",
        "json",
        ("report.json", "*.report.json"),
        "report.transport.body",
        _has("schema", 2),
    ),
)
"""Every format ``trainrecord validate`` knows, in the order detection tries them."""


def available() -> tuple[Format, ...]:
    """The formats whose schema ships with this installation."""
    known = {schema["$id"] for schema in schemas.all_schemas().values()}
    return tuple(f for f in FORMATS if f.schema_id in known)


def by_name(name: str) -> Format:
    """The format called ``name`` (``KeyError`` when there is none)."""
    for fmt in available():
        if fmt.name == name:
            return fmt
    raise KeyError(name)


def by_schema(schema_id: str) -> Format | None:
    """The format whose documents (or lines) the schema ``schema_id`` describes."""
    return next((f for f in available() if f.schema_id == schema_id), None)


def schema_format(schema_id: str) -> Format:
    """An ad-hoc one-document format for any shipped schema (``validate --schema``)."""
    schema = schemas.schema_by_id(schema_id)
    prefix = str(schema.get("x-format", "schema")).split("-")[-1]
    return Format(f"schema:{schema['$id']}", schema["$id"], "json", (), f"{prefix}.file.json")


def _first_document(text: str) -> Any:
    try:
        return loads_strict(text)
    except ValueError:
        pass
    for line in text.splitlines():
        if line.strip():
            try:
                return loads_strict(line)
            except ValueError:
                return None
    return None


def detect(path: Path, text: str | None = None) -> Format | None:
    """The format of the file at ``path``: by its name, else by its content."""
    for fmt in available():
        if fmt.matches_name(path.name):
            return fmt
    if text is None:
        return None
    document = _first_document(text)
    for fmt in available():
        if fmt.content is not None and fmt.content(document):
            return fmt
    return None


def syntax_problem(rule: str, where: tuple[str | int, ...], exc: Exception) -> Problem:
    """The problem (``rule``) of a document or line at ``where`` that ``loads_strict``
    refused with ``exc``: not strict JSON text, and why. ``where`` is empty for a whole
    file (a syntax error is said at its line and column) and names the line of a JSON Lines
    file otherwise (said at its column: the line is in ``where``)."""
    return Problem(
        rule,
        where,
        f"not strict JSON text (RFC 8259, UTF-8, no NaN or Infinity): "
        f"{_reason(exc, in_line=bool(where))}; rewrite it with a JSON writer",
    )


def torn_problem(
    rule: str, where: tuple[str | int, ...], exc: Exception, size: int, path: Path | None
) -> Problem:
    """The problem (``rule``) of the last line of a JSON Lines file at ``where``: ``size``
    bytes without a newline that ``loads_strict`` refused with ``exc``. An incomplete last
    line, as a crash while writing leaves it, not a line to rewrite: ``trainrecord verify``
    on the folder of ``path`` checks the lines before it (and says torn, exit status 3)."""
    run_dir = shlex.quote(str(path.parent)) if path is not None else "RUN_DIR"
    return Problem(
        rule,
        where,
        f"incomplete last line ({size} bytes without a newline), as a crash while writing "
        f"leaves it: not strict JSON text: {_reason(exc, in_line=True)}; "
        f"trainrecord verify {run_dir} checks the lines before it",
    )


def _reason(exc: Exception, *, in_line: bool) -> str:
    """:func:`~trainrecord.canonical.refusal_reason`, an over-long integer said plainly."""
    reason = refusal_reason(exc, in_line=in_line)
    if "Exceeds the limit" in reason:  # Python's int_max_str_digits (4300 by default)
        reason = "an integer token of more than 4300 digits, which no record holds"
    return reason


def _syntax(fmt: Format, where: tuple[str | int, ...], exc: Exception) -> Problem:
    return syntax_problem(fmt.syntax_rule, where, exc)


def check_text(fmt: Format, text: str, path: Path | None = None) -> list[Problem]:
    """Every problem of a file's text in format ``fmt``, each with its rule id.

    For JSON Lines, each problem's field starts with ``line N`` (from 1).
    """
    if fmt.layout == "json":
        try:
            document = loads_strict(text)
        except ValueError as exc:
            return [_syntax(fmt, (), exc)]
        return fmt.problems(document, path)
    return _check_lines(fmt, text.split("\n"), path)


def _check_lines(fmt: Format, lines: Sequence[str | bytes], path: Path | None) -> list[Problem]:
    """Every problem of the lines of a JSON Lines file (text, or bytes decoded a line at a
    time: a line that is not UTF-8 is a problem of that line), each led by ``line N``. A
    last line without a newline that does not parse is said as incomplete
    (:func:`torn_problem`), not as a line to rewrite."""
    found: list[Problem] = []
    torn = bool(lines) and bool(lines[-1])  # no newline at the end
    if lines and not lines[-1]:
        lines = lines[:-1]
    for number, line in enumerate(lines, start=1):
        where = f"line {number}"
        try:
            document = loads_strict(line)
        except ValueError as exc:
            if torn and number == len(lines):
                size = len(line if isinstance(line, bytes) else line.encode("utf-8"))
                rule = fmt.torn_rule or fmt.syntax_rule
                found.append(torn_problem(rule, (where,), exc, size, path))
            else:
                found.append(_syntax(fmt, (where,), exc))
            continue
        found += [
            Problem(p.rule, (where, *p.path), p.message, p.value)
            for p in fmt.problems(document, path)
        ]
    return found


def check_file(path: Path, fmt: Format | None = None) -> tuple[Format | None, list[Problem]]:
    """Detect (unless given) the format of ``path`` and return it with every problem.

    Returns ``(None, [])`` when the format cannot be told. Raises ``OSError`` when the file
    cannot be read, or is no regular file (a FIFO would block the reading for good).
    """
    if not stat.S_ISREG(path.stat().st_mode):
        raise OSError(
            errno.EINVAL, "not a regular file (a FIFO, socket or device): give a record file"
        )
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        fmt = fmt or detect(path)
        if fmt is not None and fmt.layout == "jsonl":  # the lines that are not UTF-8, by number
            return fmt, _check_lines(fmt, raw.split(b"\n"), path)
        return fmt, ([_syntax(fmt, (), exc)] if fmt else [])
    fmt = fmt or detect(path, text)
    if fmt is None:
        return None, []
    return fmt, check_text(fmt, text, path)
