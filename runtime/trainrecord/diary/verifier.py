"""The verifier: is this run directory an intact training record?

:func:`verify` checks diary.jsonl line by line (strict JSON, the event's schema, seq from 0
and contiguous, prev linking, the hash recomputed, run_start first, nothing but a resumed
run's run_start after a run_end), metrics.jsonl (strict JSON, the row schema, and every
run_end's metrics_sha256), and, when present, the seal record.json and its signature
record.sig. It names the first failing line and the rule it breaks, and tells a torn last
line (a crash while writing: the final line has no newline) from tampering.

Large diaries are split into ranges checked by worker processes (both cores), joined in
order; the answer is the same as a single pass.
"""

from __future__ import annotations

import errno
import hashlib
import json
import mmap
import multiprocessing
import os
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from trainrecord.diary.chain import ChunkResult, LineFailure, irregular, problem_text, scan
from trainrecord.diary.events import METRICS_ROW_SCHEMA, fast_problems, fast_validators
from trainrecord.diary.fastline import LineSyntaxError, parse_line

DIARY = "diary.jsonl"
METRICS = "metrics.jsonl"
SEAL = "record.json"
SIGNATURE = "record.sig"

PARALLEL_MIN_BYTES = 8 << 20
"""Diaries smaller than this are checked in this process."""
CHUNK_BYTES = 4 << 20
MIN_CHUNK_BYTES = 1 << 20

Status = Literal["ok", "torn", "failed"]
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
            head = f"OK: {self.lines} lines verified"
            extra = [
                ("complete" if self.complete else "no run_end yet"),
                ("sealed" if self.sealed else "not sealed"),
                ("signature valid" if self.signed else "signature not checked"),
            ]
            return f"{head} ({', '.join(extra)})"
        if self.status == "torn":
            return (
                f"TORN TAIL: the first {self.lines} lines verify; the last line is "
                f"incomplete ({self.torn_bytes} bytes without a newline), as a crash while "
                "writing leaves it. This is not tampering."
            )
        if self.failure is not None and (
            self.failure.file != DIARY or 0 < self.failure.line <= self.lines
        ):  # not a line of its own (metrics, seal), or a line that verified (run_end's digest)
            return f"FAILED: {self.failure} (the {self.lines} diary lines verify)"
        return f"FAILED: {self.failure} ({self.lines} lines verified before it)"

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
            "warnings": self.warnings,
        }


def _scan_range(args: tuple[str, int, int]) -> ChunkResult:
    path, start, end = args
    with open(path, "rb") as fh:
        fh.seek(start)
        data = fh.read(end - start)
    return scan(data, 1)


def _ranges(buf: mmap.mmap | bytes, end: int, chunk: int) -> list[tuple[int, int]]:
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
                        f"the first line is {res.first_event}, not run_start",
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
                        f"a {res.first_event} line follows run_end; only a run_start (a resumed "
                        "run) may",
                    ),
                    total,
                )
        if res.failure:
            total.events.update(res.events)
            total.run_ends.extend(res.run_ends)
            return total.lines + res.lines, res.failure, total
        if res.lines:
            total.lines += res.lines
            total.last_seq, total.last_hash = res.last_seq, res.last_hash
            total.last_event = res.last_event
            total.last_start = res.last_start or total.last_start
            total.events.update(res.events)
            total.run_ends.extend(res.run_ends)
    return total.lines, None, total


def _check_metrics(
    run_dir: Path, run_ends: list[tuple[int, str]], complete: bool, result: VerifyResult
) -> LineFailure | None:
    path = run_dir / METRICS
    odd = irregular(path, METRICS)
    if odd is not None:
        return odd
    if not path.exists():
        if run_ends:
            line, _ = run_ends[0]
            return LineFailure(
                line,
                None,
                "diary.metrics.sha256",
                "run_end names metrics_sha256 but metrics.jsonl is missing",
            )
        return None
    data = path.read_bytes()
    digest = hashlib.sha256()
    prefixes = {digest.hexdigest()}
    pos, row = 0, 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0:
            result.warnings.append(f"metrics.jsonl ends in a torn row ({len(data) - pos} bytes)")
            break
        raw = data[pos:nl]
        row += 1
        try:
            value, _ = parse_line(raw)
        except LineSyntaxError as exc:
            return LineFailure(row, None, "diary.metrics.json", str(exc), METRICS)
        found = fast_problems(value, METRICS_ROW_SCHEMA)
        if found:
            return LineFailure(row, None, found[0].rule, problem_text(found[0]), METRICS)
        digest.update(data[pos : nl + 1])
        prefixes.add(digest.hexdigest())
        pos = nl + 1
    result.metrics_rows = row
    whole = hashlib.sha256(data).hexdigest()
    for i, (line, sha) in enumerate(run_ends):
        last = complete and i == len(run_ends) - 1
        if (last and sha != whole) or (not last and sha not in prefixes):
            return LineFailure(
                line,
                None,
                "diary.metrics.sha256",
                "run_end.metrics_sha256 does not match metrics.jsonl "
                + ("(the whole file)" if last else "(any prefix of it)"),
            )
    return None


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
        return f"is a link to {os.readlink(path)}, which does not exist; point it at the diary"
    return "does not exist"


def verify(
    run_dir: str | os.PathLike[str],
    *,
    public_key: Any = None,
    workers: int | None = None,
    progress: ProgressFn | bool | None = None,
    check_seal: bool = True,
) -> VerifyResult:
    """Verify the record in ``run_dir`` and return the verdict (never raises on bad data).

    ``public_key``: an Ed25519 public key (a path to a PEM file, PEM bytes, or a key
    object) to check record.sig with. ``workers``: processes to use (default: the CPUs,
    for diaries of 8 MiB and more). ``progress``: a callback ``(done_bytes, total_bytes)``,
    or True for a bar on stderr (the CLI passes True when stderr is a terminal).
    """
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
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        last_nl = buf.rfind(b"\n")
        complete_end = last_nl + 1
        torn = size - complete_end
        n_workers = workers if workers is not None else (os.cpu_count() or 1)
        if n_workers > 1 and complete_end >= PARALLEL_MIN_BYTES:
            chunk = max(MIN_CHUNK_BYTES, min(CHUNK_BYTES, complete_end // (4 * n_workers) + 1))
            ranges = _ranges(buf, complete_end, chunk)
            results = _run_parallel(str(path), ranges, n_workers, report, complete_end)
        elif complete_end > CHUNK_BYTES:  # in this process, a range at a time
            ranges = _ranges(buf, complete_end, CHUNK_BYTES)
            results = _run_serial(buf, ranges, report or _no_progress, complete_end)
        else:
            results = [scan(buf[:complete_end], 1)]
            if report:
                report(complete_end, complete_end)
    lines, failure, head = _join(results)
    result = VerifyResult(str(run), "ok", lines, events=dict(sorted(head.events.items())))
    if failure is None and lines:
        result.head_seq, result.head_hash = head.last_seq, head.last_hash
        result.complete = head.last_event == "run_end"
        if head.last_start is not None:
            result.last_run_start = json.loads(head.last_start)
    if failure is None and lines == 0 and not torn:  # (a lone torn line is a torn tail)
        failure = LineFailure(1, None, "diary.file.empty", "the diary has no complete line")
    if failure is None:
        failure = _check_metrics(run, head.run_ends, result.complete, result)
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


def _no_progress(done: int, total: int) -> None:
    return None


def _run_serial(
    buf: mmap.mmap, ranges: list[tuple[int, int]], report: ProgressFn, total: int
) -> list[ChunkResult]:
    results: list[ChunkResult] = []
    offset = 0
    for start, stop in ranges:
        res = scan(buf[start:stop], 1).rebase(offset)
        results.append(res)
        offset += res.total
        report(stop, total)
        if res.failure:
            break
    return results


def _run_parallel(
    path: str,
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
        jobs = [pool.submit(_scan_range, (path, start, stop)) for start, stop in ranges]
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
