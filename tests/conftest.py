"""Shared test setup: Hypothesis profiles, paths, and a small real filesystem.

Profiles: ``ci`` (fast, derandomized, used by .ci/run), ``dev`` (the default) and
``thorough`` (many examples, for local runs). Pick one with HYPOTHESIS_PROFILE.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
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
def small_fs(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Mount real tmpfs file systems of a given size (``small_fs("64k")``), to fill up
    (needs root and mount; skipped where either is missing); each is unmounted after."""
    mount = shutil.which("mount")
    if os.geteuid() != 0 or mount is None:
        pytest.skip("mounting a tmpfs needs root")
    mounted: list[Path] = []

    def make(size: str) -> Path:
        where = tmp_path / f"tmpfs{len(mounted)}"
        where.mkdir()
        done = subprocess.run(
            [mount, "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace')}")
        mounted.append(where)
        return where

    try:
        yield make
    finally:
        for where in mounted:
            subprocess.run(["umount", str(where)], check=False)


@pytest.fixture
def tiny_fs(small_fs: Callable[[str], Path]) -> Path:
    """A real 16 KiB tmpfs, to fill up (needs root and mount; skipped where either is missing)."""
    return small_fs("16k")


UNSHARE = ("unshare", "--user", "--map-root-user", "--mount")


def read_only_bind(
    source: Path, target: Path, command: list[str]
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` with ``source`` mounted read-only at ``target``, in a mount namespace
    of its own (``unshare``; the test is skipped where that is not allowed)."""
    if shutil.which("unshare") is None:  # pragma: no cover
        pytest.skip("no unshare")
    target.mkdir()
    script = (
        'mount --bind "$1" "$2" && mount -o remount,ro,bind "$2" || exit 97; shift 2; exec "$@"'
    )
    out = subprocess.run(
        [*UNSHARE, "sh", "-c", script, "sh", str(source), str(target), *command],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode == 97 or "unshare:" in out.stderr:
        pytest.skip(f"no read-only bind mount here: {out.stderr.strip()[:200]}")
    return out
