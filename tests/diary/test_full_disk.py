"""A write that fails part-way (a full disk) leaves a record that verifies, never a failed one.

Each test runs a real writer process (:mod:`tests.diary.full_disk_writer`) on real files:
under ``RLIMIT_FSIZE`` the kernel writes a line part-way and then fails with EFBIG, as a full
disk does with ENOSPC, and needs no privileges; one test also fills a real 16 KiB tmpfs
(root only; skipped elsewhere). The spec ("Torn tail vs tampering"): a crash while writing is
``torn``, never ``failed``; run_end.metrics_sha256 is the digest of metrics.jsonl as it stood.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.diary.helpers import cli
from trainrecord.diary import verify

pytestmark = pytest.mark.skipif(
    not hasattr(os, "ftruncate") or sys.platform == "win32", reason="POSIX file-size limits"
)

LIMIT = 4096


def _write(run: Path, which: str, limit: int = LIMIT, *extra: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.diary.full_disk_writer", str(run), which, str(limit), *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _clear(error: dict[str, Any] | None, name: str, *words: str) -> None:
    """A RecordWriteError (an OSError) naming the file, the cause and what to do."""
    assert error is not None
    assert error["type"] == "RecordWriteError" and error["oserror"], error
    assert error["filename"].endswith(name), error
    assert name in error["message"], error
    assert not error["chained"], "the cause is in the message, not a chained low-level error"
    for word in words:
        assert word in error["message"], (word, error["message"])


def test_a_metrics_row_that_fails_part_way_is_cut_off_and_the_run_ends_complete(tmp_path: Path):
    run = tmp_path / "run"
    out = _write(run, "metrics")
    data = (run / "metrics.jsonl").read_bytes()
    assert out["written"] >= 2 and data.count(b"\n") == out["written"] == out["metrics_rows"]
    assert data.endswith(b"\n"), "no part of the failed row is left behind"
    assert len(data) < LIMIT
    _clear(
        out["failed"],
        "metrics.jsonl",
        "File too large (EFBIG)",
        "cut off again",
        "ulimit -f",
        f"trainrecord verify {run}",
    )
    assert out["failed"]["errno"] == errno.EFBIG
    # a later row is refused: it would follow the missing one
    _clear(out["again"], "metrics.jsonl", "writes nothing more", "File too large")
    assert out["again"]["errno"] == errno.EFBIG
    assert (run / "metrics.jsonl").read_bytes() == data
    assert out["metrics_sha256"] == hashlib.sha256(data).hexdigest()
    assert out["metrics_close"] is None and out["run_end"] is None and out["diary_close"] is None
    result = verify(run)
    assert result.status == "ok" and result.complete, result.summary()
    assert result.metrics_rows == out["written"] and not result.warnings
    assert (run / "record.json").exists()
    assert cli("verify", run).returncode == 0


def test_a_diary_line_that_fails_part_way_is_cut_off_and_nothing_follows_it(tmp_path: Path):
    run = tmp_path / "run"
    out = _write(run, "diary")
    data = (run / "diary.jsonl").read_bytes()
    assert data.endswith(b"\n") and data.count(b"\n") == out["written"] + 1  # + run_start
    _clear(out["failed"], "diary.jsonl", "File too large (EFBIG)", "cut off again")
    # neither a later event nor run_end follows the missing line
    _clear(out["again"], "diary.jsonl", "writes nothing more")
    _clear(out["run_end"], "diary.jsonl", "writes nothing more")
    assert (run / "diary.jsonl").read_bytes() == data
    assert out["diary_close"] is None  # quiet: the error was raised; the diary is not sealed
    assert not (run / "record.json").exists()
    result = verify(run)
    assert result.status == "ok" and not result.complete, result.summary()
    assert result.lines == out["written"] + 1
    assert cli("verify", run).returncode == 0


def test_a_metrics_row_that_cannot_be_cut_off_is_in_the_digest_run_end_names(tmp_path: Path):
    run = tmp_path / "run"
    out = _write(run, "metrics", LIMIT, "cut_fails")
    data = (run / "metrics.jsonl").read_bytes()
    assert not data.endswith(b"\n") and len(data) == LIMIT  # the torn row stays
    _clear(out["failed"], "metrics.jsonl", "could not be cut off", "Input/output error", "torn")
    _clear(out["again"], "metrics.jsonl", "writes nothing more")
    # the writer knows what the file holds: run_end names the whole file, torn row and all
    assert out["metrics_sha256"] == hashlib.sha256(data).hexdigest()
    assert out["run_end"] is None and out["diary_close"] is None
    result = verify(run)
    assert result.status == "ok" and result.complete, result.summary()
    assert any("torn row" in w for w in result.warnings)
    assert cli("verify", run).returncode == 0


def test_a_diary_line_that_cannot_be_cut_off_leaves_a_torn_record(tmp_path: Path):
    run = tmp_path / "run"
    out = _write(run, "diary", LIMIT, "cut_fails")
    data = (run / "diary.jsonl").read_bytes()
    assert not data.endswith(b"\n") and len(data) == LIMIT
    _clear(out["failed"], "diary.jsonl", "could not be cut off", "torn")
    _clear(out["run_end"], "diary.jsonl", "writes nothing more")
    assert out["diary_close"] is None and not (run / "record.json").exists()
    result = verify(run)
    assert result.status == "torn", result.summary()
    assert result.lines == out["written"] + 1
    assert cli("verify", run).returncode == 3


def test_a_full_disk_leaves_a_complete_record_and_says_so(tiny_fs: Path):
    run = tiny_fs / "run"
    out = _write(run, "metrics", 0)
    data = (run / "metrics.jsonl").read_bytes()
    assert data.endswith(b"\n")
    _clear(out["failed"], "metrics.jsonl", "No space left on device (ENOSPC)", "Free space on that")
    assert out["failed"]["errno"] == errno.ENOSPC
    assert out["metrics_sha256"] == hashlib.sha256(data).hexdigest()
    assert out["run_end"] is None
    if out["diary_close"] is not None:  # no room left for the seal: said as clearly
        _clear(out["diary_close"], "record.json", "not sealed", f"trainrecord seal {run}")
        assert sorted(os.listdir(run)) == ["diary.jsonl", "metrics.jsonl"]  # no temporary
    result = verify(run)
    assert result.status == "ok" and result.complete, result.summary()
    assert cli("verify", run).returncode == 0
