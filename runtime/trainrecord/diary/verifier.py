"""The verifier: is this run directory an intact training record?

:func:`verify` checks diary.jsonl line by line (strict JSON, the event's schema, seq from 0
and contiguous, prev linking, the hash recomputed, run_start first, nothing but a resumed
run's run_start after a run_end), metrics.jsonl (strict JSON, the row schema, and every
run_end's metrics_sha256), and, when present, the seal record.json and its signature
record.sig. It names the first failing line and the rule it breaks, and tells a torn last
line (a crash while writing: the final line has no newline) from tampering.

Large diaries are split into ranges checked by worker processes (both cores), joined in
order; the answer is the same as a single pass. The diary is read with plain reads, never
mapped: a diary cut while it is read fails ``diary.file.changed`` instead of killing the
process with SIGBUS.
"""

from __future__ import annotations

import errno
import hashlib
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Literal

from trainrecord.diary.chain import (
    ChunkResult,
    LineFailure,
    RunEnd,
    crlf_note,
    irregular,
    problem_text,
    scan,
)
from trainrecord.diary.events import METRICS_ROW_SCHEMA, fast_problems, fast_validators
from trainrecord.diary.fastline import LineSyntaxError, parse_std
from trainrecord.errors import escaped
from trainrecord.wording import counted

DIARY = "diary.jsonl"
METRICS = "metrics.jsonl"
SEAL = "record.json"
SIGNATURE = "record.sig"

PARALLEL_MIN_BYTES = 8 << 20
"""Diaries smaller than this are checked in this process."""
CHUNK_BYTES = 4 << 20
MIN_CHUNK_BYTES = 1 << 20

Status = Literal["ok", "torn", "failed"]
Signature = Literal["absent", "not checked", "valid"]
ProgressFn = Callable[[int, int], None]


@dataclass
class VerifyResult:
    """The verdict on one run directory."""

    run_dir: str
    status: Status
    lines: int
    """How many lines verified: the verified prefix of diary.jsonl."""
    head_seq: int | None = None
    head_hash: str | None = None
    failure: LineFailure | None = None
    torn_bytes: int = 0
    """Bytes after the last newline (a torn last line), 0 when none."""
    events: dict[str, int] = field(default_factory=dict)
    complete: bool = False
    """The last line is run_end."""
    metrics_rows: int | None = None
    sealed: bool = False
    """record.json is present and matches the files."""
    signed: bool = False
    """record.sig was checked against the given public key and holds."""
    signature: Signature | None = None
    """For a seal that matches the files: ``"absent"`` (record.json names no signature:
    sealed, not signed), ``"not checked"`` (a well-formed record.sig, no key given) or
    ``"valid"`` (checked against the given key); None when the record is not sealed or
    verification failed before the signature was decided."""
    sealed_at: float | None = None
    """The seal's sealed_at (Unix seconds) when the seal matches the files, else None."""
    sealed_lines: int | None = None
    """The number of diary lines the seal pins, when it matches the files, else None."""
    warnings: list[str] = field(default_factory=list)
    last_run_start: dict[str, Any] | None = field(default=None, repr=False)
    """The last run_start line of a diary that verifies (the latest session's), None
    otherwise; not part of :meth:`to_json`."""

    @property
    def ok(self) -> bool:
        """True only when everything holds."""
        return self.status == "ok"

    def summary(self) -> str:
        """One paragraph for people."""
        if self.status == "ok":
            head = f"OK: {counted(self.lines, 'line')} verified"
            extra = ["ended with run_end" if self.complete else "no run_end yet"]
            if not self.sealed:
                extra.append("not sealed")
            else:
                extra.append(self._seal_text())
                extra.append(
                    "signature valid"
                    if self.signature == "valid"
                    else "signed, signature not checked: pass --key PUBLIC_KEY to check it"
                    if self.signature == "not checked"
                    else "not signed"
                )
            return f"{head} ({', '.join(extra)})"
        if self.status == "torn":
            return (
                f"TORN TAIL: the first {counted(self.lines, 'line')} "
                f"{'verifies' if self.lines == 1 else 'verify'}; the last line is "
                f"incomplete ({self.torn_bytes} bytes without a newline), as a crash while "
                "writing leaves it. A cut made on purpose leaves the same: only a seal "
                "(record.json, signed to tell who made it) can tell them apart."
            )
        if self.failure is not None and (
            self.failure.file != DIARY or 0 < self.failure.line <= self.lines
        ):  # not a line of its own (metrics, seal), or a line that verified (run_end's digest)
            verb = "verifies" if self.lines == 1 else "verify"
            return f"FAILED: {self.failure} (the {counted(self.lines, 'diary line')} {verb})"
        return f"FAILED: {self.failure} ({counted(self.lines, 'line')} verified before it)"

    def _seal_text(self) -> str:
        """What the matching seal covers: when it was made and the lines it pins (an older
        signed seal put back with the diary cut to it shows here as an older date)."""
        when = f"sealed_at {self.sealed_at}"
        if self.sealed_at is not None:
            try:
                stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.sealed_at))
            except (OverflowError, OSError, ValueError):  # a date beyond the calendar's
                pass
            else:
                when = stamp
        return f"sealed {when} over {counted(self.sealed_lines, 'line')}"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (the --json output)."""
        return {
            "run_dir": self.run_dir,
            "ok": self.ok,
            "status": self.status,
            "lines": self.lines,
            "head_seq": self.head_seq,
            "head_hash": self.head_hash,
            "failure": self.failure.to_json() if self.failure else None,
            "torn_bytes": self.torn_bytes,
            "events": self.events,
            "complete": self.complete,
            "metrics_rows": self.metrics_rows,
            "sealed": self.sealed,
            "signed": self.signed,
            "signature": self.signature,
            "sealed_at": self.sealed_at,
            "sealed_lines": self.sealed_lines,
            "warnings": self.warnings,
        }


class DiaryChanged(Exception):
    """diary.jsonl ended before a byte it held when verification began: it was cut (or
    replaced by a shorter file) while being read."""

    def __init__(self, size: int, end: int | None, now: int | None) -> None:
        super().__init__(size, end, now)
        self.size, self.end, self.now = size, end, now

    def failure(self) -> LineFailure:
        """``diary.file.changed``, naming the sizes."""
        return LineFailure(
            0,
            None,
            "diary.file.changed",
            f"diary.jsonl changed while it was being verified: it had {self.size} bytes "
            "when verification began"
            + (f" and has {self.now} now" if self.now is not None else "")
            + (
                f" (a read found its end at byte {self.end}: it was cut or replaced), so its "
                if self.end is not None
                else " (it was cut or replaced after its lines were read), so its "
            )
            + "lines cannot be checked as one file; verify it again once nothing writes to, "
            "copies or cuts it",
        )


_pread = getattr(os, "pread", None)


class _DiaryFile:
    """Reads of diary.jsonl by byte range, with plain file reads: never a memory map, whose
    pages fault (SIGBUS kills the process) when the file is cut while it is read. A read
    that ends early raises :class:`DiaryChanged`."""

    WINDOW = 1 << 16

    def __init__(self, fh: IO[bytes], size: int) -> None:
        self.fh, self.size = fh, size

    def read(self, start: int, stop: int) -> bytes:
        """Bytes [start, stop), all of them."""
        if _pread is not None:  # one system call, no buffer in between
            data = _pread(self.fh.fileno(), stop - start, start)
            while len(data) < stop - start:  # a short read: the end, or (rarely) a signal
                more = _pread(self.fh.fileno(), stop - start - len(data), start + len(data))
                if not more:
                    break
                data += more
        else:  # pragma: no cover - without os.pread (Windows)
            self.fh.seek(start)
            data = self.fh.read(stop - start)
        if len(data) != stop - start:
            try:
                now: int | None = os.fstat(self.fh.fileno()).st_size
            except OSError:  # pragma: no cover - an open file can always be stat'ed
                now = None
            raise DiaryChanged(self.size, start + len(data), now)
        return data

    def find(self, sub: bytes, start: int, end: int) -> int:
        """Like ``bytes.find`` over [start, end) of the file (``sub`` is one byte)."""
        while start < end:
            stop = min(start + self.WINDOW, end)
            at = self.read(start, stop).find(sub)
            if at >= 0:
                return start + at
            start = stop
        return -1

    def rfind(self, sub: bytes, end: int) -> int:
        """Like ``bytes.rfind`` over [0, end) of the file (``sub`` is one byte)."""
        while end > 0:
            start = max(0, end - self.WINDOW)
            at = self.read(start, end).rfind(sub)
            if at >= 0:
                return start + at
            end = start
        return -1


def _scan_range(args: tuple[str, int, int, int]) -> ChunkResult:
    path, start, end, size = args
    try:
        with open(path, "rb") as fh:
            data = _DiaryFile(fh, size).read(start, end)
    except DiaryChanged as exc:
        return ChunkResult(first_line=1, failure=exc.failure())
    return scan(data, 1)


def _ranges(buf: _DiaryFile | bytes, end: int, chunk: int) -> list[tuple[int, int]]:
    """Split [0, end) at newlines into (start, stop) ranges of about ``chunk`` bytes."""
    out: list[tuple[int, int]] = []
    start = 0
    while start < end:
        stop = min(start + chunk, end)
        if stop < end:
            nl = buf.find(b"\n", stop - 1, end)
            stop = end if nl < 0 else nl + 1
        out.append((start, stop))
        start = stop
    return out


def _join(results: list[ChunkResult]) -> tuple[int, LineFailure | None, ChunkResult]:
    """Join range results in order; return verified lines, the first failure, the merged head."""
    total = ChunkResult(first_line=1)
    for res in results:
        if (
            res.failure is not None
            and res.lines == 0
            and not res.failure.rule.startswith(("diary.chain.", "diary.order."))
        ):  # the range's first line is not a valid line (its schema: prev's format...)
            total.events.update(res.events)
            return total.lines, res.failure, total
        if res.lines or res.failure:
            # the first line of the range against what came before it
            expected_seq = total.lines
            if res.first_seq is not None and res.first_seq != expected_seq:
                return (
                    total.lines,
                    LineFailure(
                        res.first_line,
                        res.first_seq,
                        "diary.chain.seq",
                        f"seq is {res.first_seq}, expected {expected_seq}",
                    ),
                    total,
                )
            want_prev = total.last_hash if total.lines else "0" * 64
            if res.first_prev is not None and res.first_prev != want_prev:
                msg = (
                    "the first line's prev is not 64 zeros"
                    if not total.lines
                    else "prev is not the hash of the line before (a line was removed, inserted, "
                    "reordered or changed)"
                )
                return (
                    total.lines,
                    LineFailure(res.first_line, res.first_seq, "diary.chain.prev", msg),
                    total,
                )
            if total.lines == 0 and res.first_event is not None and res.first_event != "run_start":
                return (
                    0,
                    LineFailure(
                        1,
                        res.first_seq,
                        "diary.order.run_start",
                        f"the first line is {escaped(str(res.first_event))}, not run_start",
                    ),
                    total,
                )
            if (
                total.last_event == "run_end"
                and res.first_event is not None
                and res.first_event != "run_start"
            ):
                return (
                    total.lines,
                    LineFailure(
                        res.first_line,
                        res.first_seq,
                        "diary.order.run_end",
                        f"a {escaped(str(res.first_event))} line follows run_end; only a "
                        "run_start (a resumed run) may",
                    ),
                    total,
                )
        if res.failure:
            total.events.update(res.events)
            _join_run_ends(total, res)
            return total.lines + res.lines, res.failure, total
        if res.lines:
            total.lines += res.lines
            total.last_seq, total.last_hash = res.last_seq, res.last_hash
            total.last_event = res.last_event
            total.last_start = res.last_start or total.last_start
            total.events.update(res.events)
            _join_run_ends(total, res)
    return total.lines, None, total


def _join_run_ends(total: ChunkResult, res: ChunkResult) -> None:
    """Add the range's run_ends to ``total``: the run_starts after the last run_end before
    the range count towards the sessions of its first run_end."""
    ends = res.run_ends
    if ends:
        first = ends[0]
        total.run_ends.append(first._replace(sessions=first.sessions + total.trailing_starts))
        total.run_ends.extend(ends[1:])
        total.trailing_starts = res.trailing_starts
    else:
        total.trailing_starts += res.trailing_starts


def _check_metrics(
    run_dir: Path,
    run_ends: list[RunEnd],
    trailing_starts: int,
    complete: bool,
    result: VerifyResult,
) -> LineFailure | None:
    path = run_dir / METRICS
    odd = irregular(path, METRICS)
    if odd is not None:
        return odd
    if not path.exists():
        if run_ends:
            return LineFailure(
                run_ends[0].line,
                None,
                "diary.metrics.sha256",
                "run_end names metrics_sha256 but metrics.jsonl is missing",
            )
        return None
    # Read a chunk at a time and keep no row: the whole file and a digest per row in memory
    # took 326 MB and 14 s for a million rows at every close. Each run_end but a complete
    # diary's last names a prefix, in order; the rows between two of them (a segment) are
    # one session's when one run_start lies between the two run_ends (see spec/README.md).
    segments = _Segments(run_ends, trailing_starts, complete)
    digest = hashlib.sha256()
    segments.at_prefix(digest.hexdigest(), 0)
    waiting = segments.waiting
    last: int | None = None  # the open segment's last step (inline: a call per row costs)
    row = 0
    pending: list[bytes] = []  # the bytes after the last newline, in the pieces read
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(METRICS_CHUNK)
            if not chunk:
                break
            if b"\n" not in chunk:  # a row longer than a chunk (or a torn tail): kept in
                pending.append(chunk)  # pieces, not copied again for every chunk
                continue
            data = b"".join([*pending, chunk]) if pending else chunk
            pending = []
            pos = 0
            while True:
                nl = data.find(b"\n", pos)
                if nl < 0:
                    break
                raw = data[pos:nl]
                row += 1
                try:
                    value = parse_std(raw)  # (no canonical body: 1e400 parses, as inf)
                except LineSyntaxError as exc:
                    return LineFailure(row, None, "diary.metrics.json", str(exc), METRICS)
                found = fast_problems(value, METRICS_ROW_SCHEMA)
                if found:
                    return LineFailure(
                        row, None, found[0].rule, problem_text(found[0], value, raw), METRICS
                    )
                step = value["step"]
                if last is not None and step <= last:
                    segments.disorder(row, step, last)
                last = step
                digest.update(data[pos : nl + 1])
                if waiting:
                    if segments.at_prefix(digest.hexdigest(), row):
                        last = None  # a segment ended: the next row opens another
                    waiting = segments.waiting
                pos = nl + 1
            if pos < len(data):
                pending = [data[pos:]]
    tail = b"".join(pending)
    if tail:
        result.warnings.append(f"metrics.jsonl ends in a torn row ({len(tail)} bytes)")
    result.metrics_rows = row
    digest.update(tail)
    failure = segments.end(digest.hexdigest(), row)
    if failure is not None and failure.rule == "diary.metrics.sha256":  # CRLF: say so
        note = crlf_note(path, run_ends[-1].sha if complete else None)
        failure = replace(failure, message=failure.message + note) if note else failure
    return failure


class _Segments:
    """The run_ends' prefixes of metrics.jsonl, matched in order as rows are read, and the
    checks of a one-session segment: steps increase (``diary.metrics.order``) and the rows
    are as many as its run_end's checks (``diary.metrics.rows``; at most as many when the
    run_end names an error). The first of those two found is said once the digests hold
    (a row that is not where a run_end's digest puts it is said as the digest's failure)."""

    def __init__(self, run_ends: list[RunEnd], trailing_starts: int, complete: bool) -> None:
        self.ends = run_ends
        self.trailing = trailing_starts
        self.prefixes = len(run_ends) - (1 if complete and run_ends else 0)
        self.next = 0  # the run_end whose prefix comes next
        self.begun = 0  # the rows before the open segment
        self.found: LineFailure | None = None

    @property
    def waiting(self) -> bool:
        """A run_end's prefix is still to come."""
        return self.next < self.prefixes

    def _one_session(self) -> bool:
        k = self.next
        return (self.ends[k].sessions if k < len(self.ends) else self.trailing) == 1

    def disorder(self, row: int, step: int, last: int) -> None:
        """Note ``diary.metrics.order``: ``step`` (row ``row``) follows ``last`` in the open
        segment, which counts when the segment is one session's."""
        if self.found is not None or not self._one_session():
            return
        self.found = LineFailure(
            row,
            None,
            "diary.metrics.order",
            f"step: {step} after step {last} in one session's rows (rows {self.begun + 1} "
            f"to {row}); a session's checks run at increasing steps, one row each",
            METRICS,
        )

    def _close(self, rows: int) -> None:
        end = self.ends[self.next]
        count = rows - self.begun
        if (
            end.sessions == 1
            and self.found is None
            and (count > end.checks or (count < end.checks and not end.errored))
        ):
            held = f"{count} rows (rows {self.begun + 1} to {rows})" if count else "no row"
            self.found = LineFailure(
                end.line,
                None,
                "diary.metrics.rows",
                f"run_end: {end.checks} checks, but metrics.jsonl holds {held} for its "
                "session; one row per check"
                + (" (at most, as the run_end names an error)" if end.errored else ""),
            )
        self.next += 1
        self.begun = rows

    def at_prefix(self, digest: str, rows: int) -> bool:
        """The first ``rows`` rows hash to ``digest``: close the segments it ends; whether
        it ended one."""
        ended = False
        while self.waiting and self.ends[self.next].sha == digest:
            self._close(rows)
            ended = True
        return ended

    def end(self, whole: str, rows: int) -> LineFailure | None:
        """The verdict once every row is read (``whole``: the digest of the whole file)."""
        if self.waiting:
            return LineFailure(
                self.ends[self.next].line,
                None,
                "diary.metrics.sha256",
                "run_end.metrics_sha256 does not match metrics.jsonl (any prefix of it after "
                "the previous run_end's)",
            )
        if self.prefixes < len(self.ends):  # a complete diary: its last run_end
            if self.ends[-1].sha != whole:
                return LineFailure(
                    self.ends[-1].line,
                    None,
                    "diary.metrics.sha256",
                    "run_end.metrics_sha256 does not match metrics.jsonl (the whole file)",
                )
            self._close(rows)
        return self.found


METRICS_CHUNK = 8 << 20
"""metrics.jsonl is read this many bytes at a time."""


def _tty_progress() -> ProgressFn:
    def show(done: int, total: int) -> None:
        pct = 100.0 * done / total if total else 100.0
        bar = "#" * int(pct / 4)
        sys.stderr.write(f"\rverifying [{bar:<25}] {pct:5.1f}%")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


def _missing(path: Path) -> str:
    """How a diary that is not there is missing: a plain absence, or a link that leads
    nowhere (to a path that does not exist, or round in a loop), which ``ls`` still lists."""
    if not path.is_symlink():
        return "does not exist"
    loop = "is a link that loops back on itself; point it at the record's diary"
    try:
        path.resolve(strict=True)
    except RuntimeError:  # (Python 3.11 and 3.12: a loop raises RuntimeError, later ELOOP)
        return loop
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return loop
        target = escaped(os.readlink(path))  # the link's text: any a name may hold
        return f"is a link to {target}, which does not exist; point it at the diary"
    return "does not exist"


def _check_run_dir(run: Path) -> None:
    """Raise when ``run`` is no directory (see :func:`verify`)."""
    if run.is_dir():
        return
    give = "give the run directory that holds diary.jsonl"
    if not (run.exists() or run.is_symlink()):
        raise FileNotFoundError(errno.ENOENT, f"no such run directory; {give}", str(run))
    if run.name == DIARY:
        give = f"give its folder, {run.parent}, not the file"
    raise NotADirectoryError(errno.ENOTDIR, f"not a run directory; {give}", str(run))


def verify(
    run_dir: str | os.PathLike[str],
    *,
    public_key: Any = None,
    workers: int | None = None,
    progress: ProgressFn | bool | None = None,
    check_seal: bool = True,
) -> VerifyResult:
    """Verify the record in ``run_dir`` and return the verdict (never raises on bad data).

    Args:
        run_dir: the run directory that holds diary.jsonl (and metrics.jsonl, record.json,
            record.sig when there).
        public_key: an Ed25519 public key (a path to a PEM file, PEM bytes, or a key
            object; a private key's public half is used) to check record.sig with.
            Default None: a signature is not checked.
        workers: processes to use (default None: the CPUs); a diary under 8 MiB, or
            ``workers=1``, is read in this process.
        progress: a callback ``(done_bytes, total_bytes)``, or True for a bar on stderr
            (the CLI passes True when stderr is a terminal); default None: none.
        check_seal: check record.json (and record.sig) against the files (default True);
            False skips the seal.

    The verdict, a :class:`VerifyResult`: ``status`` (``"ok"``, ``"torn"``, ``"failed"``),
    ``failure`` (the first failing line and its rule), ``summary()``, ``to_json()``::

        result = verify("runs/exp1", public_key="keys/signer.pub")
        print(result.summary())            # the verdict, for people
        if not result.ok:                  # torn or failed
            print(result.status, result.failure)

    A ``public_key`` that cannot be loaded raises before anything is read (a missing or
    unreadable file: ``OSError``; not an Ed25519 public key: ``RecordRefused``,
    ``seal.key.format``): a caller who passes a key expects a signature check, so a key
    problem is never left unsaid, signed record or not.

    A ``run_dir`` that is no directory is a mistake of the call, not a verdict on a record:
    ``FileNotFoundError`` when nothing is there, ``NotADirectoryError`` for a file (the
    diary.jsonl itself, say), each saying what to pass. A directory without diary.jsonl
    fails ``diary.file.empty``.
    """
    _check_run_dir(Path(run_dir))
    if public_key is not None:  # the caller's key: a problem with it is said first, whatever
        from trainrecord.diary.keys import load_public_key  # the record (signed or not)

        public_key = load_public_key(public_key)
    run = Path(run_dir)
    path = run / DIARY
    odd = irregular(path, DIARY)
    if odd is not None:
        return VerifyResult(str(run), "failed", 0, failure=odd)
    if not path.is_file():
        return VerifyResult(
            str(run),
            "failed",
            0,
            failure=LineFailure(0, None, "diary.file.empty", f"{path} {_missing(path)}"),
        )
    size = path.stat().st_size
    if size == 0:
        return VerifyResult(
            str(run),
            "failed",
            0,
            failure=LineFailure(0, None, "diary.file.empty", f"{path} is empty"),
        )
    report: ProgressFn | None = _tty_progress() if progress is True else (progress or None)
    try:
        results, torn = _scan_file(path, size, workers, report)
        now = _size_now(path)
        if now is not None and now < size:  # cut after the reads (workers can read every
            raise DiaryChanged(size, None, now)  # range before this process hears of one)
    except DiaryChanged as exc:  # cut while being read: no verdict on lines it no longer has
        return VerifyResult(str(run), "failed", 0, failure=exc.failure())
    lines, failure, head = _join(results)
    result = VerifyResult(str(run), "ok", lines, events=dict(sorted(head.events.items())))
    if failure is None and lines:
        result.head_seq, result.head_hash = head.last_seq, head.last_hash
        result.complete = head.last_event == "run_end"
        if head.last_start is not None:
            try:
                result.last_run_start = json.loads(head.last_start)
            except RecursionError:  # nested near json's recursion limit: never a crash
                result.last_run_start = None
    if failure is None and lines == 0 and not torn:  # (a lone torn line is a torn tail)
        failure = LineFailure(1, None, "diary.file.empty", "the diary has no complete line")
    if failure is None:
        failure = _check_metrics(run, head.run_ends, head.trailing_starts, result.complete, result)
    if failure is None and check_seal:
        from trainrecord.diary.seal import check_seal as _check_seal

        failure = _check_seal(run, result, torn, public_key)
    if failure is not None:
        result.status = "failed"
        result.failure = failure
    elif torn:
        result.status = "torn"
        result.torn_bytes = torn
    if not result.complete and result.status == "ok":
        result.warnings.append(
            "no run_end: the run is still going, crashed, or its tail was "
            "cut (only a seal can tell)"
        )
    return result


def _scan_file(
    path: Path, size: int, workers: int | None, report: ProgressFn | None
) -> tuple[list[ChunkResult], int]:
    """Scan the complete lines of the diary's first ``size`` bytes; (range results, torn
    bytes). Raises :class:`DiaryChanged` when the file ends early while it is read."""
    with open(path, "rb") as fh:
        diary = _DiaryFile(fh, size)
        if size <= CHUNK_BYTES:  # one read; the lines in this process
            data = diary.read(0, size)
            complete_end = data.rfind(b"\n") + 1
            results = [scan(data if complete_end == size else data[:complete_end], 1)]
            if report:
                report(complete_end, complete_end)
            return results, size - complete_end
        complete_end = diary.rfind(b"\n", size) + 1
        torn = size - complete_end
        n_workers = workers if workers is not None else (os.cpu_count() or 1)
        if n_workers > 1 and complete_end >= PARALLEL_MIN_BYTES:
            chunk = max(MIN_CHUNK_BYTES, min(CHUNK_BYTES, complete_end // (4 * n_workers) + 1))
            ranges = _ranges(diary, complete_end, chunk)
            results = _run_parallel(str(path), size, ranges, n_workers, report, complete_end)
        elif complete_end > CHUNK_BYTES:  # in this process, a range at a time
            ranges = _ranges(diary, complete_end, CHUNK_BYTES)
            results = _run_serial(diary, ranges, report or _no_progress, complete_end)
        else:
            results = [scan(diary.read(0, complete_end), 1)]
            if report:
                report(complete_end, complete_end)
        return results, torn


def _size_now(path: Path) -> int | None:
    """The diary's size now, or None when it cannot be read (gone: a shorter file than when
    verification began is a changed one; a missing file is said by the next verify)."""
    try:
        return path.stat().st_size
    except OSError:
        return None


def _no_progress(done: int, total: int) -> None:
    return None


def _run_serial(
    diary: _DiaryFile, ranges: list[tuple[int, int]], report: ProgressFn, total: int
) -> list[ChunkResult]:
    results: list[ChunkResult] = []
    offset = 0
    for start, stop in ranges:
        try:
            data = diary.read(start, stop)
        except DiaryChanged as exc:  # the lines before it stand; the rest cannot be read
            results.append(ChunkResult(first_line=1, failure=exc.failure()))
            break
        res = scan(data, 1).rebase(offset)
        del data  # freed before the next range is read: its memory is reused, not faulted anew
        results.append(res)
        offset += res.total
        report(stop, total)
        if res.failure:
            break
    return results


def _run_parallel(
    path: str,
    size: int,
    ranges: list[tuple[int, int]],
    n_workers: int,
    report: ProgressFn | None,
    total: int,
) -> list[ChunkResult]:
    fast_validators()  # built once here, inherited by forked workers
    ctx = multiprocessing.get_context(
        "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    )
    results: list[ChunkResult] = []
    done = offset = 0
    # A process pool whose pending ranges are cancelled at the first failure, the running
    # ones finishing (at most n_workers ranges). Not multiprocessing.Pool: its terminate()
    # kills workers that may hold its task queue's lock, and then hangs for good joining
    # its task handler (seen in a test run: verify() never returned).
    with ProcessPoolExecutor(n_workers, mp_context=ctx) as pool:
        jobs = [pool.submit(_scan_range, (path, start, stop, size)) for start, stop in ranges]
        for (start, stop), job in zip(ranges, jobs, strict=True):
            res = job.result()
            results.append(res.rebase(offset))
            offset += res.total
            done += stop - start
            if report:
                report(done, total)
            if res.failure:
                for pending in jobs:
                    pending.cancel()
                break
    return results
