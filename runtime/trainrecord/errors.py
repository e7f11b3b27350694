"""Problems and refusals: the error family of trainrecord.

trainrecord's refusals are :class:`TrainrecordError` subclasses. Each also keeps the
builtin base that suits it (``ValueError``, ``TypeError``, ``OSError``, ``RuntimeError``),
so code that catches those still does. A file or folder that is not there is Python's own
``FileNotFoundError`` (``NotADirectoryError`` for a file where a folder must be), as
``open()`` raises it: ``verify()`` on a path that is no directory, ``read_witness`` on a
missing file.

Every refusal of bad input is a :class:`RecordRefused` (a ``ValueError``) carrying one or
more :class:`Problem` objects. A problem names the rule it breaks (a stable id from the
rule registry in ``spec/rules/``), the field (a JSON path), the offending value (made safe
for display: never a secret) and a sentence a person can act on. Validators collect every
problem rather than stopping at the first, in the manner of python-jsonschema.

Beside them: :class:`MonitorMisuseWarning`, a warning and no error (``step()`` called more
often than the optimizer steps), and what makes text from a file or a client safe to
show: :func:`safe_value` (a value in a message: one short line), :func:`printable`
(surrogates escaped: text UTF-8 can write) and :func:`escaped` (control characters,
bidirectional formatting characters and surrogates escaped: text a terminal or a log
shows as it is, ``show``'s lines, a problem's field path, the receiver's log), with
:func:`json_escaped`, its form for JSON text (a value quoted as JSON spells it).
"""

from __future__ import annotations

import errno as errnos
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

_MAX_VALUE_REPR = 80
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
"""What text from a record never reaches a terminal or a log as it is: control characters
(C0, DEL, C1: a terminal acts on them, an escape sequence can move the cursor over an
earlier line or a newline fake one), Unicode's bidirectional formatting characters (U+061C,
U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069: they reorder the text shown around
them) and surrogate code points (no output encoding can write them)."""


def safe_value(value: Any) -> str:
    """Return a short, display-safe rendering of ``value`` for error messages: one line
    (a repr that spans lines, as an optimizer's does, has each run of white space made one
    space; a JSON value's repr never spans lines, so it is shown as is), at most
    ``_MAX_VALUE_REPR`` characters."""
    try:
        text = repr(value)
    except ValueError:  # an int past sys.get_int_max_str_digits() has no repr
        text = f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    if text.splitlines() != [text]:  # a line break anywhere in it
        text = " ".join(text.split())
    if len(text) > _MAX_VALUE_REPR:
        text = text[: _MAX_VALUE_REPR - 3] + "..."
    return text


def printable(text: str) -> str:
    """``text`` with each surrogate code point (U+D800 to U+DFFF) as its escape
    (``\\ud800``): text UTF-8 can encode, so printing or logging it never raises."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def printable_tree(value: Any) -> Any:
    """``value`` (JSON-ready) with every string, keys too, :func:`printable`: a surrogate
    code point (a field name read as ``"\\ud800"``, a file name that is not UTF-8) shown as
    its escape, so ``--json`` prints JSON text any reader takes (RFC 8259 leaves a lone
    surrogate's ``\\u`` escape to each reader: a strict one refuses the document)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(str(k)): printable_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable_tree(v) for v in value]
    return value


def escaped(text: str) -> str:
    """``text`` with each character of :data:`_UNSAFE` as its Python escape (``\\x1b``,
    ``\\n``, ``\\u202e``, ``\\ud800``): what a file or a client wrote, safe to print or log."""
    return _UNSAFE.sub(lambda m: ascii(m.group())[1:-1], text)


def json_escaped(text: str) -> str:
    """JSON text (as ``json.dumps(..., ensure_ascii=False)`` writes it: such characters
    stand only inside its strings) with each character :func:`escaped` escapes as JSON's
    ``\\u`` escape (``\\u0085``, ``\\u202e``, ``\\ud800``; ``escaped`` writes ``\\x85``,
    which JSON has not): the same JSON value, safe to print, to paste as JSON."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def format_path(path: Sequence[str | int]) -> str:
    """Render a JSON path such as ``("rows", 0, "horizon")`` as ``rows[0].horizon``; the empty
    path (the whole document) as ``(top level)``.

    A name is shown :func:`escaped`: a field name read from a file (``"\\u001b[2J"``,
    ``"\\u202e"``, ``"\\ud800"``) can neither act on the terminal nor fail to print."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            part = escaped(str(part))
            out += f".{part}" if out else part
    return out or "(top level)"


class TrainrecordError(Exception):
    """The base of trainrecord's refusals (a missing file or folder is Python's own
    ``FileNotFoundError``: see the module docstring).

    Its subclasses: :class:`RecordRefused` (bad input, a ``ValueError``),
    :class:`trainrecord.arguments.ArgumentRefused` (a bad argument, a ``TypeError`` and a
    ``ValueError``), :class:`WriterClosed` (a write after ``close()``, a ``ValueError``),
    :class:`MonitorClosed` (``Monitor.step()`` after ``close()``, a ``RuntimeError``),
    :class:`RecordWriteError` (a write that failed or was refused, as through a symbolic
    link planted in a run folder, an ``OSError``),
    ``trainrecord.report.ReportNotDelivered`` (a ``RuntimeError``) and
    ``trainrecord.monitor.UnsupportedModel`` (a ``TypeError``)."""


@dataclass(frozen=True)
class Problem:
    """One broken rule: which rule, where, what value, and what to do about it."""

    rule: str
    path: tuple[str | int, ...]
    message: str
    value: str | None = None

    @property
    def field(self) -> str:
        """The JSON path of the offending field, rendered for people."""
        return format_path(self.path)

    def __str__(self) -> str:
        shown = f" (got {self.value})" if self.value is not None else ""
        return printable(f"[{self.rule}] {self.field}: {self.message}{shown}")

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form for ``--json`` output and the harness protocol."""
        return {
            "rule": self.rule,
            "path": list(self.path),
            "message": self.message,
            "value": self.value,
        }


@dataclass
class RecordRefused(TrainrecordError, ValueError):
    """Bad input was refused; nothing was written. Carries every problem found."""

    problems: list[Problem] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.problems:
            raise TypeError("RecordRefused needs at least one Problem")
        super().__init__(str(self))

    @classmethod
    def one(
        cls,
        rule: str,
        path: Iterable[str | int],
        message: str,
        value: Any = None,
        *,
        show_value: bool = True,
    ) -> RecordRefused:
        """Build a refusal for a single problem; ``show_value=False`` hides a secret."""
        shown = safe_value(value) if (show_value and value is not None) else None
        return cls([Problem(rule, tuple(path), message, shown)])

    @property
    def rule(self) -> str:
        """The rule id of the first problem."""
        return self.problems[0].rule

    @property
    def rules(self) -> list[str]:
        """Every rule id broken, in the order found."""
        return [p.rule for p in self.problems]

    @property
    def field(self) -> str:
        """The field of the first problem."""
        return self.problems[0].field

    def __str__(self) -> str:
        if len(self.problems) == 1:
            return str(self.problems[0])
        lines = [f"{len(self.problems)} problems:"] + [f"  {p}" for p in self.problems]
        return "\n".join(lines)

    def __hash__(self) -> int:  # exceptions must stay hashable for traceback machinery
        return id(self)


class RecordWriteError(TrainrecordError, OSError):
    """A record file could not be written (a full disk, a file-size limit, an I/O error).

    An ``OSError`` (``errno`` is the cause's, ``filename`` the file), so code that handles
    ``OSError`` still does; its message names the file, the cause, what the file holds now
    and what to do, on its own (the low-level error is not chained: its text is in it)."""

    def __init__(self, errno: int | None, message: str, filename: str) -> None:
        super().__init__(errno, message)
        self.message = message
        self.filename = filename

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:  # keep it picklable (multiprocessing, logging)
        return (type(self), (self.errno, self.message, self.filename))


class MonitorClosed(TrainrecordError, RuntimeError):
    """``Monitor.step()`` after the Monitor's ``close()`` (a ``RuntimeError``): its run has
    ended (run_end written). Make a new Monitor on a new run folder for a new run."""


class MonitorMisuseWarning(UserWarning):
    """The Monitor is called in a way that makes its record count wrong: ``step()`` twice
    per optimizer step, or once per micro-batch of gradient accumulation. Issued with
    :func:`warnings.warn` (once per Monitor, pointing at the ``monitor.step()`` call), so it
    can be filtered (``warnings.filterwarnings("error", category=MonitorMisuseWarning)``
    fails a test run on it), caught with ``pytest.warns`` or routed to logging with
    :func:`logging.captureWarnings`. Not an error: training and the record go on."""


class WriterClosed(TrainrecordError, ValueError):
    """A write to a diary or metrics writer after its ``close()`` (a ``ValueError``, as a
    write to a closed file is); nothing was written. Open a new writer on the folder to
    continue the record."""


def cause_text(exc: OSError) -> str:
    """An OSError's cause in words: its text and errno name ("No space left on device (ENOSPC)")."""
    name = errnos.errorcode.get(exc.errno or 0)
    text = exc.strerror or str(exc) or type(exc).__name__
    return f"{text} ({name})" if name else text


def write_advice(code: int | None, *, elsewhere: str | None = "run_dir") -> str:
    """What to do about a failed write, by its errno; ``elsewhere`` names the folder argument
    the run could give instead ("or give the run a run_dir on another one"; None: no such
    hint)."""
    if code in (errnos.ENOSPC, getattr(errnos, "EDQUOT", -1)):
        return "Free space on that disk" + (
            f" (or give the run a {elsewhere} on another one)" if elsewhere else ""
        )
    if code == errnos.EFBIG:
        return (
            "The file reached the largest size allowed (the process's file-size limit, "
            "ulimit -f, or the filesystem's): raise that limit"
            + (f" or start a new {elsewhere}" if elsewhere else "")
        )
    if code == errnos.EROFS:
        return (
            "The folder is on a read-only file system (a read-only mount): remount it "
            "writable"
            + (
                f" (or give the run a {elsewhere} elsewhere)"
                if elsewhere
                else " (or copy the record)"
            )
        )
    if code in (errnos.EACCES, errnos.EPERM):
        return (
            "This user may not change that file or folder (its permissions or owner, or an "
            "immutable file: lsattr shows it): make it writable"
            + (f" (or give the run a {elsewhere} elsewhere)" if elsewhere else "")
        )
    if code == errnos.EISDIR:
        return "A folder stands where the file goes: move it away"
    return "Check that disk (its space, permissions and health)"


def write_failed(
    path: str | os.PathLike[str],
    exc: OSError,
    state: str,
    *,
    elsewhere: str | None = "run_dir",
    then: str = "",
    verb: str = "write",
) -> RecordWriteError:
    """The :class:`RecordWriteError` of a file written whole or not at all that could not
    be: "trainrecord could not write PATH: CAUSE; STATE. ADVICE[, THEN]." (``then``: what
    to run once the advice is followed; ``verb``: "remove" for a file that was to go)."""
    advice = write_advice(exc.errno, elsewhere=elsewhere)
    return RecordWriteError(
        exc.errno,
        f"trainrecord could not {verb} {os.fspath(path)}: {cause_text(exc)}; {state}. "
        f"{advice}{', then ' + then if then else ''}.",
        os.fspath(path),
    )
