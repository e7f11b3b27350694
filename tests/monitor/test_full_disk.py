"""A Monitor whose metrics.jsonl cannot be written (a full disk) leaves a record that verifies.

The probe's case (D3): a row written part-way, then close(). Before, run_end named the digest
of the rows before the torn one while the file ended in it: close() raised [seal.verify] and
``trainrecord verify`` said FAILED, the class kept for tampering. Each test trains in a child
process on real files: under ``RLIMIT_FSIZE`` (EFBIG after a partial write; unprivileged) and,
as root, on a 16 KiB tmpfs (ENOSPC). What the Monitor does with the error is unchanged: it
leaves ``step()`` (an open question); these tests pin the record and the message.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.diary.helpers import cli
from trainrecord.diary import verify

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file-size limits")

CHILD = """
import json, resource, signal, sys
import torch
from torch import nn
from torch.nn import functional as F
from trainrecord import Monitor

torch.set_num_threads(1)
torch.manual_seed(0)
run_dir, limit = sys.argv[1], int(sys.argv[2])
if limit:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
x, y = torch.randn(8, 4), torch.randint(0, 2, (8,))
blocks = [nn.Sequential(nn.Linear(4, 4), nn.ReLU()) for _ in range(6)]
model = nn.Sequential(*blocks, nn.Linear(4, 2))
opt = torch.optim.SGD(model.parameters(), 0.1)
out = {"done": 0}
def said(exc):
    return {"type": type(exc).__name__, "errno": getattr(exc, "errno", None),
            "message": str(exc), "oserror": isinstance(exc, OSError)}
monitor = Monitor(model, opt, run_dir, check_every=1)
try:
    for _ in range(2000):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        monitor.step(loss)
        opt.step()
        opt.zero_grad()
        out["done"] += 1
except Exception as exc:
    out["step"] = said(exc)
    try:
        monitor.close()
    except Exception as exc2:
        out["close"] = said(exc2)
print(json.dumps(out))
"""


def _train(run: Path, limit: int) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(run), str(limit)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _check_record(run: Path, out: dict[str, Any], cause: str, code: int) -> None:
    assert 0 < out["done"] < 2000
    failed = out["step"]
    assert failed["type"] == "RecordWriteError" and failed["oserror"], failed
    assert failed["errno"] == code
    for words in (f"{run / 'metrics.jsonl'}", cause, "cut off again", "trainrecord verify"):
        assert words in failed["message"], (words, failed["message"])
    data = (run / "metrics.jsonl").read_bytes()
    assert data.endswith(b"\n")
    lines = [json.loads(t) for t in (run / "diary.jsonl").read_text().splitlines()]
    end = lines[-1]
    assert end["event"] == "run_end" and end["error"]["type"] == "RecordWriteError"
    assert end["metrics_sha256"] == hashlib.sha256(data).hexdigest()
    result = verify(run)
    assert result.status == "ok" and result.complete, result.summary()
    done = cli("verify", run)
    assert done.returncode == 0 and "FAILED" not in done.stdout + done.stderr


@pytest.mark.torch
def test_a_monitor_past_the_file_size_limit_leaves_a_complete_record(tmp_path: Path):
    run = tmp_path / "run"
    out = _train(run, 8192)
    _check_record(run, out, "File too large (EFBIG)", errno.EFBIG)
    assert "close" not in out  # run_end and the seal fit (the limit is per file)
    assert (run / "record.json").exists()


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    """A real 16 KiB tmpfs (needs root and mount; skipped where either is missing)."""
    mount = shutil.which("mount")
    if os.geteuid() != 0 or mount is None:
        pytest.skip("mounting a tmpfs needs root")
    where = tmp_path / "tiny"
    where.mkdir()
    done = subprocess.run(
        [mount, "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace')}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


@pytest.mark.torch
def test_a_monitor_on_a_full_disk_leaves_a_complete_record_the_probes_case(tiny_fs: Path):
    run = tiny_fs / "run"
    out = _train(run, 0)
    _check_record(run, out, "No space left on device (ENOSPC)", errno.ENOSPC)
    if "close" in out:  # no room for record.json: said clearly, and nothing half-written
        closed = out["close"]
        assert closed["type"] == "RecordWriteError", closed
        assert "record.json" in closed["message"] and "trainrecord seal" in closed["message"]
        assert sorted(os.listdir(run)) == ["diary.jsonl", "metrics.jsonl"]


GIVES_BACK = """
import fcntl, json, resource, signal, sys, threading
import torch
from torch import nn
from torch.nn import functional as F
from trainrecord import Monitor

torch.set_num_threads(1)
run_dir = sys.argv[1]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1500, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
model = nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.ReLU()) for _ in range(6)])
monitor = Monitor(model, None, run_dir, check_every=1, log=False)
out = {}
try:  # the diary's structure and manifest pass the limit at the first check
    model(torch.randn(8, 4)).sum().backward()
    monitor.step()
except Exception as exc:
    out["step"] = type(exc).__name__
try:
    monitor.close()  # run_end cannot be written to the broken diary
except Exception as exc:
    out["close"] = type(exc).__name__
out["sinks"] = [t.name for t in threading.enumerate() if t.name == "trainrecord-sinks"]
for name in ("diary.jsonl", "metrics.jsonl"):
    with open(f"{run_dir}/{name}", "rb") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            out[name] = "free"
        except OSError:
            out[name] = "still locked"
print(json.dumps(out))
"""


def test_a_close_whose_run_end_fails_still_gives_back_files_and_the_sinks_thread(
    tmp_path: Path,
) -> None:
    # Before: close() raised at run_end and never closed diary.jsonl (its lock held until the
    # Monitor was collected) nor stopped the sinks' thread.
    proc = subprocess.run(
        [sys.executable, "-c", GIVES_BACK, str(tmp_path / "run")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["step"] == "RecordWriteError" and out["close"] == "RecordWriteError", out
    assert out["sinks"] == []
    assert out["diary.jsonl"] == "free" and out["metrics.jsonl"] == "free"
