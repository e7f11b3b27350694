"""``exit_on_sigterm``: a real process stopped by SIGTERM (scancel, preemption, the time
limit) still writes its witness from ``finally`` and exits with status 143 (probe F2)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

SCRIPT = textwrap.dedent(
    """
    import sys, time
    from trainrecord.foundry import exit_on_sigterm, write_witness
    USE = sys.argv[2] == "helper"
    start = time.monotonic()
    def body():
        try:
            print("training", flush=True)
            time.sleep(60)
        finally:
            write_witness(sys.argv[1], config={"lr": 0.1}, device="cpu",
                          wall_seconds=int(time.monotonic() - start))
    if USE:
        with exit_on_sigterm():
            body()
    else:
        body()
    """
)


def _stopped(tmp_path: Path, mode: str) -> tuple[int, Path]:
    results = tmp_path / "results"
    env = {**os.environ, "FOUNDRY_RUN_ID": "9", "SLURM_RESTART_COUNT": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(results), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "training\n"
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    return proc.returncode, results


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_within_exit_on_sigterm_writes_the_witness_and_exits_143(tmp_path: Path) -> None:
    status, results = _stopped(tmp_path, "helper")
    assert status == 143
    witness = json.loads((results / "observed.attempt0.json").read_text(encoding="utf-8"))
    assert witness["experiment_id"] == 9


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_without_the_helper_sigterm_kills_before_finally(tmp_path: Path) -> None:
    """What the README warns about: the default action runs no finally block."""
    status, results = _stopped(tmp_path, "plain")
    assert status == -signal.SIGTERM
    assert not results.exists()


def test_exit_on_sigterm_restores_the_handler_found_and_leaves_sig_ign() -> None:
    from trainrecord.foundry import exit_on_sigterm

    before = signal.getsignal(signal.SIGTERM)
    try:
        seen: list[int] = []
        signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
        mine = signal.getsignal(signal.SIGTERM)
        with pytest.raises(SystemExit) as stop, exit_on_sigterm():
            assert signal.getsignal(signal.SIGTERM) is not mine
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
        assert stop.value.code == 143 and seen == [signal.SIGTERM]  # chained first
        assert signal.getsignal(signal.SIGTERM) is mine
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with exit_on_sigterm():
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, before)
