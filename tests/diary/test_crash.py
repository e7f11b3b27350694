"""A real writer process killed with SIGKILL at random points leaves a diary whose verified
prefix is exactly the lines written before the kill (plus at most the line in flight)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.diary.helpers import seed_first_failure
from trainrecord.diary import verify


def _run_and_kill(
    run: Path, pad: int, acks_before_kill: int, tear: bool = False
) -> list[tuple[int, str]]:
    args = [str(run), str(pad)] + ([str(acks_before_kill)] if tear else [])
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.diary.crash_writer", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    acked: list[tuple[int, str]] = []
    assert proc.stdout is not None
    while len(acked) < acks_before_kill:
        out = proc.stdout.readline()
        if not out and tear:
            break  # it tore its own line and died
        assert out, "the writer died before it was killed"
        seq, digest = out.split()
        acked.append((int(seq), digest))
    if tear:
        proc.wait(timeout=60)  # it tears its own line and kills itself
    else:
        os.kill(proc.pid, signal.SIGKILL)
    rest = proc.stdout.read()  # acknowledgements already in the pipe
    proc.wait()
    for out in rest.split("\n")[:-1]:  # an acknowledgement cut by the kill does not count
        seq, digest = out.split()
        acked.append((int(seq), digest))
    return acked


@pytest.mark.parametrize(
    ("pad", "tear"),
    [(0, False), (1_500_000, False), (200, True)],
    ids=["small lines", "1.5 MB lines", "torn inside a write"],
)
def test_a_killed_writer_leaves_a_verifiable_prefix(tmp_path: Path, pad: int, tear: bool) -> None:
    rng = random.Random(pad)
    run = tmp_path / "run"
    total_acked: list[tuple[int, str]] = []
    statuses = set()
    for _ in range(3):  # kill, resume (cutting a torn line), kill again
        acked = _run_and_kill(run, pad, rng.randint(2, 40 if pad else 400), tear)
        total_acked = [a for a in total_acked if a[0] < acked[0][0]] + acked
        result = verify(run)
        statuses.add(result.status)
        assert result.status in ("ok", "torn"), result.summary()
        # every acknowledged line is there, intact, and only the line in flight may follow
        # (a line written but not yet acknowledged before an earlier kill stays in the chain:
        # count by seq, not by acknowledgements)
        last = total_acked[-1][0]
        assert last + 1 <= result.lines <= last + 2
        lines = (run / "diary.jsonl").read_bytes().split(b"\n")
        for seq, digest in total_acked:
            assert f'"hash":"{digest}"'.encode() in lines[seq]
        if result.status == "ok":
            assert seed_first_failure(run / "diary.jsonl") is None
        else:
            assert result.torn_bytes > 0
            assert seed_first_failure(run / "diary.jsonl") == result.lines + 1
    if tear:
        assert statuses == {"torn"}
