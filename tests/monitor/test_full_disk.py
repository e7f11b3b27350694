"""A Monitor whose files cannot be written (a full disk) stops recording, training goes on,
and the record it leaves verifies.

The probe's case (D3): a row written part-way, then close(). Before, run_end named the digest
of the rows before the torn one while the file ended in it: close() raised [seal.verify] and
``trainrecord verify`` said FAILED, the class kept for tampering; and the OSError left
``step()``, ending a training run over its record. Each test trains in a child process on
real files: under ``RLIMIT_FSIZE`` (EFBIG after a partial write; unprivileged) and, as root, on
a 16 KiB tmpfs (ENOSPC). The error is logged once with the file, the cause and what to do.
"""

from __future__ import annotations

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
# (silent_min_values=1: as many channels events as the probe's run wrote; the limits below
# were set on it)
monitor = Monitor(model, opt, run_dir, check_every=1, silent_min_values=1)
for _ in range(300):  # no exception leaves step() or close(): training goes on
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    monitor.step(loss)
    opt.step()
    opt.zero_grad()
    out["done"] += 1
monitor.close()
print(json.dumps(out))
"""


def _child(script: str, *args: object) -> tuple[dict[str, Any], str]:
    """Run ``script`` in a child process: what it printed as JSON, and its stderr (logs)."""
    proc = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def _train(run: Path, limit: int) -> tuple[dict[str, Any], str]:
    return _child(CHILD, run, limit)


def _check_record(run: Path, out: dict[str, Any], log: str, cause: str) -> None:
    assert out["done"] == 300  # training went on to its end
    [said] = [t for t in log.splitlines() if "recording stopped at step" in t]  # said once
    for words in (f"{run / 'metrics.jsonl'}", cause, "cut off again", "trainrecord verify"):
        assert words in said, (words, said)
    assert "training goes on" in said
    data = (run / "metrics.jsonl").read_bytes()
    assert data.endswith(b"\n")
    lines = [json.loads(t) for t in (run / "diary.jsonl").read_text().splitlines()]
    end = lines[-1]
    assert end["event"] == "run_end" and end["error"]["type"] == "RecordWriteError"
    assert cause in end["error"]["message"]
    assert end["steps"] == 300 and end["checks"] == len(data.splitlines()) + 1  # + the failed
    assert end["metrics_sha256"] == hashlib.sha256(data).hexdigest()
    result = verify(run)
    assert result.status == "ok" and result.complete, result.summary()
    done = cli("verify", run)
    assert done.returncode == 0 and "FAILED" not in done.stdout + done.stderr


@pytest.mark.torch
def test_a_monitor_past_the_file_size_limit_leaves_a_complete_record(tmp_path: Path):
    run = tmp_path / "run"
    out, log = _train(run, 8192)
    _check_record(run, out, log, "File too large (EFBIG)")
    assert (run / "record.json").exists()  # run_end and the seal fit (the limit is per file)


@pytest.mark.torch
def test_a_monitor_on_a_full_disk_leaves_a_complete_record_the_probes_case(tiny_fs: Path):
    run = tiny_fs / "run"
    out, log = _train(run, 0)
    _check_record(run, out, log, "No space left on device (ENOSPC)")
    if not (run / "record.json").exists():  # no room for it: said clearly, nothing half-written
        [said] = [t for t in log.splitlines() if "record.json" in t]
        assert "trainrecord seal" in said
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
for _ in range(3):  # the diary's structure and manifest pass the limit at the first check
    model(torch.randn(8, 4)).sum().backward()
    monitor.step()
monitor.close()  # run_end cannot be written to the broken diary: nothing raised
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
    # Monitor was collected) nor stopped the sinks' thread. The diary itself failed here: the
    # record ends at its last whole line, without run_end (incomplete, not failed).
    out, log = _child(GIVES_BACK, tmp_path / "run")
    assert "recording stopped at step 0, training goes on" in log
    assert f"{tmp_path / 'run' / 'diary.jsonl'}" in log
    assert out["sinks"] == []
    assert out["diary.jsonl"] == "free" and out["metrics.jsonl"] == "free"
    result = verify(tmp_path / "run")
    assert result.status == "ok" and not result.complete, result.summary()


def test_a_run_start_that_cannot_be_written_is_refused_at_creation(tmp_path: Path) -> None:
    # Before training starts nothing is lost: the Monitor raises, leaves no hook behind.
    out, _ = _child(BEFORE_TRAINING, tmp_path / "run")
    assert out["raised"] == "RecordWriteError" and "diary.jsonl" in out["message"]
    assert out["hooks"] == 0 and out["sinks"] == []


BEFORE_TRAINING = """
import json, resource, signal, sys, threading
import torch
from torch import nn
from torch.nn.modules import module as module_globals
from trainrecord import Monitor

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (200, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
out = {}
try:
    Monitor(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), None, sys.argv[1], log=False)
except Exception as exc:
    out = {"raised": type(exc).__name__, "message": str(exc)}
hooks = [module_globals._global_forward_hooks, module_globals._global_forward_pre_hooks,
         module_globals._global_module_registration_hooks,
         module_globals._global_parameter_registration_hooks]
out["hooks"] = sum(len(h) for h in hooks)
out["sinks"] = [t.name for t in threading.enumerate() if t.name == "trainrecord-sinks"]
print(json.dumps(out))
"""
