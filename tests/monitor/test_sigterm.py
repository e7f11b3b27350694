"""SIGTERM (Slurm scancel or preemption, docker stop, Kubernetes) on a monitored run: a real
child process trains a real model under a Monitor and is sent a real SIGTERM. The diary
ends with run_end carrying ``error.type`` "SIGTERM", the record verifies complete, and the
child still dies of SIGTERM; a SIGTERM arriving inside the Monitor's own check waits for
the check to end; a handler the user installed is left alone."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.monitor.conftest import events, metrics, read_run
from trainrecord import sigterm as sigterm_module
from trainrecord.monitor import Monitor

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

JOB = """
import os, signal, sys
import torch
from torch.nn import functional as F
from tests.monitor.conftest import TinyCNN, batches
from trainrecord import Monitor

run_dir, mode = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
stop = []
if mode == "own":
    def handler(signum, frame):
        print("own handler ran", flush=True)
        stop.append(signum)
    signal.signal(signal.SIGTERM, handler)
model = TinyCNN()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
monitor = Monitor(model, optimizer, run_dir, check_every=5, log=False)
if mode == "chained":  # a framework (Lightning) installs its handler later, chaining ours
    previous = signal.getsignal(signal.SIGTERM)
    def handler(signum, frame):
        print("framework handler ran", flush=True)
        stop.append(signum)
        if callable(previous):
            previous(signum, frame)
    signal.signal(signal.SIGTERM, handler)
if mode == "inside":
    # SIGTERM sent from inside the check, while the Monitor holds its lock and appends the
    # first check's manifest: the handler must wait for the check to end.
    append = monitor._diary.append
    def append_then_signal(event, fields):
        if event == "manifest":
            os.kill(os.getpid(), signal.SIGTERM)
        return append(event, fields)
    monitor._diary.append = append_then_signal
mine = signal.getsignal(signal.SIGTERM) is handler if mode == "own" else True
print("ready", mine, flush=True)
step = 0
while not stop:
    for x, y in batches(20, seed=step):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        monitor.step(loss)
        optimizer.step()
        optimizer.zero_grad()
        step += 1
        if step == 12:
            print("twelve steps", flush=True)
        if stop:
            break
monitor.close()
print("closed", flush=True)
"""


def _start(run_dir: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(JOB), str(run_dir), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )


def _wait_for(proc: subprocess.Popen[str], text: str) -> list[str]:
    assert proc.stdout is not None
    seen = []
    while True:
        line = proc.stdout.readline()
        if not line:
            _, err = proc.communicate(timeout=30)
            raise AssertionError(f"{text!r} never printed: {seen} {err[-2000:]}")
        seen.append(line.strip())
        if line.startswith(text):
            return line.split()


def _terminated(run_dir: Path, mode: str) -> tuple[int, str, str]:
    """Run the job until twelve steps were taken, send it SIGTERM and wait for its end:
    its exit status, stdout and stderr."""
    proc = _start(run_dir, mode)
    try:
        if mode == "own":
            assert _wait_for(proc, "ready")[1] == "True"  # the Monitor did not replace it
        _wait_for(proc, "twelve steps")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return proc.returncode, out, err


def test_sigterm_writes_run_end_and_the_process_still_dies_of_sigterm(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    code, out, err = _terminated(run_dir, "default")
    assert code == -signal.SIGTERM, (code, err)
    assert "closed" not in out  # no code after the signal ran, as with SIG_DFL
    lines = read_run(run_dir)  # every line valid, chain and metrics_sha256 verified, complete
    end = lines[-1]
    assert end["event"] == "run_end"
    assert end["error"]["type"] == "SIGTERM"
    steps = end["steps"]
    assert steps >= 12
    assert f"the next step would have been {steps}" in end["error"]["message"]
    # Every check the run made is in metrics.jsonl, and run_end counted each one.
    rows = metrics(run_dir)
    assert [r["step"] for r in rows] == list(range(0, steps, 5))
    assert end["checks"] == len(rows)


def test_a_sigterm_inside_a_check_waits_for_the_check_to_end(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = _start(run_dir, "inside")
    try:
        out, err = proc.communicate(timeout=90)  # a handler that ran inside the lock hangs
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, err)
    assert "twelve steps" not in out  # the signal ended the run in the first check's step
    lines = read_run(run_dir)
    assert [line["event"] for line in lines] == ["run_start", "structure", "manifest", "run_end"]
    assert lines[-1]["error"]["type"] == "SIGTERM"
    # The check ran to its end (its metrics row written) before run_end: step 0 counted.
    assert [r["step"] for r in metrics(run_dir)] == [0]
    assert lines[-1]["steps"] == 1 and lines[-1]["checks"] == 1


def test_a_sigterm_handler_the_user_installed_is_left_alone(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    code, out, err = _terminated(run_dir, "own")
    # The user's handler ran; the loop ended and closed the Monitor as a finished run.
    assert code == 0, err
    assert "own handler ran" in out and "closed" in out
    end = read_run(run_dir)[-1]
    assert end["event"] == "run_end" and "error" not in end


def test_a_framework_handler_that_chains_ours_decides_how_the_run_ends(tmp_path: Path) -> None:
    # A user probe: a Monitor created in Lightning's on_fit_start installed the handler
    # before Lightning did; Lightning chained it, and on SIGTERM ours wrote run_end and
    # killed the process inside Lightning's handler: its exception hooks (where users save
    # a checkpoint) and its SLURM requeue never ran.
    run_dir = tmp_path / "run"
    code, out, err = _terminated(run_dir, "chained")
    assert code == 0, (code, err)
    assert "framework handler ran" in out and "closed" in out
    end = read_run(run_dir)[-1]
    assert end["event"] == "run_end" and "error" not in end


def test_the_handler_is_there_only_while_a_monitor_is_open(tmp_path: Path) -> None:
    from tests.monitor.conftest import TinyCNN

    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        model = TinyCNN()
        with Monitor(model, None, tmp_path / "a", log=False):
            assert sigterm_module.is_installed()
            with Monitor(model, None, tmp_path / "b", log=False):
                pass
            assert sigterm_module.is_installed()  # the first Monitor is still open
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        end = [json.loads(t) for t in (tmp_path / "a" / "diary.jsonl").read_text().splitlines()]
        assert events(end, "run_end")[0].get("error") is None
    finally:
        signal.signal(signal.SIGTERM, before)
