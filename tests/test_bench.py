"""The bench scripts run: each in its smallest form, as a new process, printing its figures.

README sends users to them and ``make bench`` runs them all; a bench that fails after its
timed rounds (as report_overhead.py did when Reporter.progress lost its ``force=``) stops
``make bench`` before the next. Figures are not judged here (speed is the bench's to print,
never a test's to assert); the ResNet-18 monitor bench takes minutes, so only its options
are parsed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

BENCHES = {
    "report_overhead.py": (["--rounds", "1", "--steps", "30"], "progress() that queues a report"),
    "verify_bench.py": (["--lines", "2000", "--single"], "ratio: verify in one process"),
    "foundry_bench.py": (["--rows", "20", "--repeat", "1"], "ratio"),
    "monitor_depth.py": (["--depths", "10"], "later check"),
    "monitor_overhead.py": (["--help"], "--quick"),
}


def test_every_bench_script_is_listed() -> None:
    assert sorted(p.name for p in (ROOT / "bench").glob("*.py")) == sorted(BENCHES)


@pytest.mark.parametrize("script", sorted(BENCHES))
def test_bench_runs_to_its_figures(script: str, tmp_path: object) -> None:
    args, printed = BENCHES[script]
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(tmp_path),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert printed in done.stdout, done.stdout[-2000:]
