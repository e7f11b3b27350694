"""Shared test setup: Hypothesis profiles, paths, and a small real filesystem.

Profiles: ``ci`` (fast, derandomized, used by .ci/run), ``dev`` (the default) and
``thorough`` (many examples, for local runs). Pick one with HYPOTHESIS_PROFILE.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec"
SEEDS = ROOT.parent / "shared" / "seeds"

# One CPU thread for torch, here and in every process a test starts (they inherit the
# environment; torch reads it at import). The suite runs on two xdist workers on two cores:
# with torch's default of one thread per core, two tiny trainings at once spent most of
# their time waiting at OpenMP barriers (`trainrecord demo --tiny` took 3-22 s beside
# another one instead of 1 s, and over 120 s on a loaded CI machine). Tests of the Foundry
# witness pass their own environment or remove OMP_NUM_THREADS themselves.
os.environ["OMP_NUM_THREADS"] = "1"

settings.register_profile(
    "ci",
    max_examples=25,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    """A real 16 KiB tmpfs, to fill up (needs root and mount; skipped where either is missing)."""
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
