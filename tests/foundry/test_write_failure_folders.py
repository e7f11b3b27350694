"""A Foundry writer whose write fails after it made the results folder removes the folders
it made, so its message's "nothing was written" is true.

write_metrics and write_witness made a missing results folder (``mkdir -p``) and then
wrote the file; when the write failed (here: a file size limit, ``RLIMIT_FSIZE`` at 0, as a
full disk: EFBIG) the message said "nothing was written (no metrics.json was made)" while
the folders it had made stayed behind. They are now removed again (each only while empty;
a folder that was there before is kept), and a folder that cannot be removed (something
was put there meanwhile) is named in the message. Real files and a real process; the
first test failed before the fix (the folders were left)."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainrecord.errors import RecordWriteError
from trainrecord.foundry import files

SCRIPT = """
import json, resource, sys
from trainrecord.foundry import write_metrics, write_witness
resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
folder = sys.argv[2]
try:
    if sys.argv[1] == "metrics":
        write_metrics(folder, [{"benchmark": "ETTh1", "metric": "mse", "horizon": 96,
                                "seed": 0, "value": 0.386}])
    else:
        write_witness(folder, config={"lr": 0.1}, device="cpu", wall_seconds=1,
                      env={"FOUNDRY_RUN_ID": "4217"})
except OSError as exc:
    print(json.dumps({"type": type(exc).__name__, "errno": exc.errno, "message": str(exc)}))
"""

NAMES = {"metrics": "metrics.json", "witness": "observed.attempt0.json"}


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_a_failed_write_removes_the_folders_it_made(tmp_path: Path, kind: str) -> None:
    (tmp_path / "runs").mkdir()  # there before: kept
    results = tmp_path / "runs" / "etth1" / "seed0"
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, kind, str(results)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0 and out.stdout.strip(), out.stdout + out.stderr[-2000:]
    error = json.loads(out.stdout)
    assert error["type"] == "RecordWriteError" and error["errno"] == errno.EFBIG, error
    target = results / NAMES[kind]
    assert error["message"].startswith(
        f"trainrecord could not write {target}: File too large (EFBIG); nothing was written "
        f"(no {NAMES[kind]} was made)."
    ), error["message"]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["runs"]


def test_a_folder_it_made_that_is_not_empty_is_named_and_kept(tmp_path: Path) -> None:
    target = tmp_path / "results" / "a" / "metrics.json"
    made: list[Path] = []
    with pytest.raises(RecordWriteError) as info, files.failures_named(target, made=made):
        files.make_folders(target.parent, made)
        (target.parent / "theirs.txt").write_text("put there meanwhile\n")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert made == [tmp_path / "results" / "a", tmp_path / "results"]
    message = str(info.value)
    assert f"; no metrics.json was made; the folders {target.parent}, {tmp_path / 'results'} " in (
        message
    )
    assert "nothing was written" not in message
    assert (target.parent / "theirs.txt").is_file()
