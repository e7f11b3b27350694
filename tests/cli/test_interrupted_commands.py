"""Ctrl+C while ``trainrecord demo`` trains, and while ``trainrecord serve`` serves: each a
real process sent a real SIGINT once it is past its start (its record's first lines are
written; it says where it serves), so the interrupt lands in the work, not in the imports
(tests/cli/test_help_exit_statuses.py covers those).

demo: exit status 130, nothing on stderr, and the record written so far is whole: it
verifies, ends with run_end and is sealed (the Monitor's close() runs on the way out).
serve: Ctrl+C once serving is the way to stop it: exit status 0, no traceback, and its
database is left consistent."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from trainrecord.diary import verify

TOKEN = {"CORREAD_REPORT_TOKEN": "interrupted-commands-token-0123456789"}


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "trainrecord.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **TOKEN},
    )


def _stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    proc.send_signal(signal.SIGINT)
    try:
        return proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:  # pragma: no cover - a hang: the assertion below says so
            proc.kill()


def test_ctrl_c_while_the_demo_trains_exits_130_with_its_record_whole(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    steps = 100_000  # far more than it reaches: the interrupt lands in training
    proc = _start("demo", "--tiny", "--steps", str(steps), "--out", str(out))
    diary, metrics = out / "diary.jsonl", out / "metrics.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        # a second check's row: step 0 is over (after the first check's diary lines alone,
        # the interrupt could land inside step 0, and run_end said 0 steps)
        if metrics.is_file() and metrics.read_bytes().count(b"\n") >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the demo ended before it was interrupted"
    stdout, stderr = _stop(proc)
    assert proc.returncode == 130, (proc.returncode, stdout[-2000:], stderr[-2000:])
    assert stderr == "", stderr[-2000:]
    result = verify(out)
    assert result.ok and result.sealed, result.summary()
    lines = [json.loads(line) for line in diary.read_text(encoding="utf-8").splitlines()]
    assert lines[-1]["event"] == "run_end", [line["event"] for line in lines]
    assert 0 < lines[-1]["steps"] < steps, lines[-1]  # stopped where it was interrupted


def test_ctrl_c_while_serving_exits_0_and_leaves_the_database_consistent(
    tmp_path: Path,
) -> None:
    db = tmp_path / "reports.sqlite"
    proc = _start("serve", "--port", "0", "--db", str(db))
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first.startswith("serving http://"), first
    stdout, stderr = _stop(proc)
    assert proc.returncode == 0, (proc.returncode, stdout[-2000:], stderr[-2000:])
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr[-2000:]
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
