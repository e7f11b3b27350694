"""The Node implementation's Foundry writers and open_run, like the Python ones, remove the
folders they made when the write after them fails (tests/foundry/test_write_failure_folders.py,
tests/report/test_write_failure.py).

The harness runs in a real process whose file size limit is 0 (RLIMIT_FSIZE, as a full
disk: EFBIG, SIGXFSZ ignored as Python ignores it), so the temporary file's write fails
after ``mkdir -p`` made the results folder. Before, the folders stayed behind."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.typescript.node_harness import HARNESS, require_node

pytestmark = pytest.mark.xdist_group("node")

ROW = {"benchmark": "ETTh1", "metric": "mse", "horizon": 96, "seed": 0, "value": 0.386}
CALLS = {
    "write_metrics": {"rows": [ROW]},
    "write_witness": {
        "config": {"lr": 0.1},
        "device": "cpu",
        "wall_seconds": 1,
        "env": {"FOUNDRY_RUN_ID": "4217"},
    },
    "open_run": {"metadata": {"mode": "pre"}},
}


def _no_file_growth() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


def _answer(op: str, payload: dict[str, object]) -> dict[str, object]:
    """One request to a fresh harness whose files cannot grow: its answer."""
    requests = [
        {"cmd": "start", "version": 1},
        {"cmd": "run", "seq": 1, "op": op, "input": payload},
        {"cmd": "stop"},
    ]
    out = subprocess.run(
        [require_node(), str(HARNESS)],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
        preexec_fn=_no_file_growth,
    )
    lines = out.stdout.splitlines()
    assert len(lines) >= 2, out.stdout + out.stderr[-2000:]
    return json.loads(lines[1])


@pytest.mark.parametrize("op", sorted(CALLS))
def test_a_failed_write_removes_the_folders_it_made(tmp_path: Path, op: str) -> None:
    (tmp_path / "runs").mkdir()  # there before: kept
    results = tmp_path / "runs" / "etth1" / "seed0"
    answer = _answer(op, {"dir": str(results), **CALLS[op]})
    assert answer["outcome"] == "error", answer  # the write failed (EFBIG)
    assert "EFBIG" in str(answer.get("message", "")), answer
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["runs"]
