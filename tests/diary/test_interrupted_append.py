"""Ctrl+C at any point of a diary line's or a metrics row's append leaves a record that
verifies once the run goes on and closes (a notebook's interrupted cell, a loop that catches
KeyboardInterrupt and then ends the run).

The interpreter handles a signal at a Python function's entry and right after a C call
returns (os.write's, os.fsync's): a profile hook raises KeyboardInterrupt at each such
point of trainrecord's own code in turn, one point per run. Before, the line (or row) was
in the file while the writer did not know it in three places: an fsync after it raised
(run_start, critical events, every line under ``fsync_policy="always"``), os.write returned
before the count of written bytes took it in, and the digest or row count was updated after
a call. The next line then repeated the seq (diary.chain.seq), or run_end's metrics_sha256
and checks missed a row (diary.metrics.sha256, diary.metrics.rows): an honest interrupted
run looked tampered with. Points inside the standard library (threading's
``Condition.__enter__`` between acquiring its lock and the ``with`` body) are CPython's own
window and are not driven here.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from types import FrameType

import pytest

from tests.diary.helpers import event_bodies
from trainrecord.diary import DiaryWriter, MetricsWriter, verify
from trainrecord.errors import RecordRefused, RecordWriteError

BODIES = event_bodies()


def _row(step: int) -> dict[str, object]:
    return {"step": step, "loss": 1.0, "grad": {"a": 1.0}, "stuck": {}}


def _interrupted_run(run_dir: Path, policy: str, point: int) -> str | None:
    """Write run_start, then a critical line and a row with Ctrl+C at the ``point``-th
    signal point of trainrecord's code, then a row and run_end; close. Return where the
    interrupt landed (None: the appends have fewer points)."""
    seen = 0
    landed: str | None = None

    def interrupt(frame: FrameType, event: str, arg: object) -> None:
        nonlocal seen, landed
        if event in ("call", "c_return") and "/trainrecord/" in frame.f_code.co_filename:
            seen += 1
            if seen == point:
                name = getattr(arg, "__qualname__", None) or frame.f_code.co_qualname
                landed = f"{event} {name} (line {frame.f_lineno})"
                raise KeyboardInterrupt

    diary = DiaryWriter(run_dir, fsync_policy=policy)  # type: ignore[arg-type]
    metrics = MetricsWriter(run_dir, fsync_policy=policy)  # type: ignore[arg-type]
    diary.append("run_start", BODIES["run_start"])
    sys.setprofile(interrupt)
    try:
        diary.append("nonfinite_loss", {"step": 1, "severity": "critical", "value": float("nan")})
        metrics.append(_row(1))
    except KeyboardInterrupt:
        pass
    finally:
        sys.setprofile(None)
    metrics.append(_row(2))
    digest, rows = metrics.sha256(), metrics.rows
    metrics.close()
    data = (run_dir / "metrics.jsonl").read_bytes()
    assert (digest, rows) == (hashlib.sha256(data).hexdigest(), data.count(b"\n")), landed
    end = {**BODIES["run_end"], "steps": 3, "checks": rows, "metrics_sha256": digest}
    diary.append("run_end", end)
    try:
        diary.close()  # seals: refused (RecordRefused, seal.verify) for a record that fails
    except RecordRefused as exc:
        pytest.fail(f"Ctrl+C at {landed}: {exc}")
    return landed


@pytest.mark.parametrize("policy", ["interval", "critical", "always"])
def test_ctrl_c_anywhere_in_an_append_leaves_a_record_that_verifies(
    tmp_path: Path, policy: str
) -> None:
    point = 0
    while True:
        point += 1
        run_dir = tmp_path / str(point)
        landed = _interrupted_run(run_dir, policy, point)
        if landed is None:
            break
        result = verify(run_dir)
        assert result.ok and result.sealed, (landed, result.failure)
    assert point > 40  # the appends were driven through (each has dozens of points)


def test_a_descriptor_that_fails_before_the_write_gives_the_clear_write_error(
    tmp_path: Path,
) -> None:
    # the size read that places an interrupted line (os.fstat) runs inside the write's
    # error handling: a descriptor gone bad (EBADF here; a stale NFS handle, EIO) gives
    # RecordWriteError naming the file and what to do, and later rows are refused clearly;
    # before, the fstat sat before it and raised a bare OSError with no path (review)
    metrics = MetricsWriter(tmp_path)
    metrics.append(_row(1))
    os.close(metrics._file.fd)  # the descriptor fails at the next system call
    with pytest.raises(RecordWriteError) as first:
        metrics.append(_row(2))
    assert "metrics.jsonl" in str(first.value) and "EBADF" in str(first.value)
    with pytest.raises(RecordWriteError) as again:
        metrics.append(_row(3))
    assert "metrics.jsonl" in str(again.value)
    metrics._file._finalizer.detach()  # (its descriptor is closed already)
