"""A writer process under a file-size limit: what a full disk does to a write, for real.

Usage: ``python -m tests.diary.full_disk_writer RUN_DIR FILE LIMIT [cut_fails]``.

The process sets ``RLIMIT_FSIZE`` to LIMIT bytes (and ignores SIGXFSZ), so the kernel writes
a line that crosses the limit part-way and then fails with EFBIG, as a full disk does with
ENOSPC; it needs no privileges. LIMIT 0 sets no limit (RUN_DIR on a small filesystem). FILE (``metrics`` or ``diary``) is the file that outgrows
the limit: its lines are padded, the other file's stay small. With ``cut_fails`` the
writer's ``os.ftruncate`` fails (EIO), so the part of the line that reached the file stays.

The run is written the way the Monitor writes one: run_start, then rows or events until a
write fails, then one more (refused), then the sha256 of metrics.jsonl, its close, run_end
and the diary's close. It prints one JSON object: what each step raised (type, errno,
message) and the digest the metrics writer reported.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import sys
from typing import Any

from tests.diary.helpers import BODIES
from trainrecord.diary import DiaryWriter, MetricsWriter


def _failing_ftruncate(fd: int, length: int) -> None:
    raise OSError(errno.EIO, os.strerror(errno.EIO))


def _attempt(fn: Any, *args: Any) -> dict[str, Any] | None:
    """Call ``fn``; None when it returns, else what it raised."""
    try:
        fn(*args)
    except Exception as exc:
        return {
            "type": type(exc).__name__,
            "oserror": isinstance(exc, OSError),
            "errno": getattr(exc, "errno", None),
            "filename": getattr(exc, "filename", None),
            "message": str(exc),
            "chained": exc.__cause__ is not None
            or (exc.__context__ is not None and not exc.__suppress_context__),
        }
    return None


def main() -> None:
    run_dir, which, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    cut_fails = len(sys.argv) > 4 and sys.argv[4] == "cut_fails"
    if limit:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    diary = DiaryWriter(run_dir, fsync_policy="critical")
    metrics = MetricsWriter(run_dir)
    if cut_fails:
        os.ftruncate = _failing_ftruncate  # type: ignore[assignment]
    diary.append("run_start", BODIES["run_start"])
    out: dict[str, Any] = {"written": 0}
    pad = {f"layer{i:03d}": 0.125 for i in range(60)}  # a row of about 1 KiB
    for i in range(100_000):
        if which == "metrics":
            failed = _attempt(metrics.append, {"step": i, "loss": 1.0, "grad": pad, "stuck": {}})
        else:
            body = {**BODIES["alarm"], "step": i, "x_pad": "p" * 300}
            failed = _attempt(diary.append, "alarm", body)
        if failed:
            out["failed"] = failed
            break
        out["written"] += 1
    if which == "metrics":
        again = _attempt(metrics.append, {"step": 10**6, "loss": 1.0, "grad": {}, "stuck": {}})
    else:
        again = _attempt(diary.append, "alarm", {**BODIES["alarm"], "step": 10**6})
    out["again"] = again
    out["metrics_sha256"] = metrics.sha256()
    out["metrics_rows"] = metrics.rows
    out["metrics_close"] = _attempt(metrics.close)
    body = {**BODIES["run_end"], "metrics_sha256": out["metrics_sha256"]}
    if which == "metrics":  # as the Monitor: the check whose row failed counts, and says so
        checks = out["written"] + 1
        body["checks"], body["steps"] = checks, max(checks, body["steps"])
        body["error"] = {"type": "RecordWriteError", "message": "metrics.jsonl: disk full"}
    out["run_end"] = _attempt(diary.append, "run_end", body)
    out["diary_close"] = _attempt(diary.close)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
