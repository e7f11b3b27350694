"""The Foundry writers on a folder they cannot write: an error naming the file and the fix.

write_metrics and write_witness on a read-only mount or a full disk raised a bare OSError
naming their hidden temporary file (``[Errno 28] No space left on device:
'.../.metrics.json.3f2a....tmp'``), which the caller never made, with no advice. They now
raise a :class:`~trainrecord.errors.RecordWriteError` (an ``OSError``) naming the real file,
the cause, that nothing was written and what to do, as the diary's seal does; and no
temporary file is left. Real files: a read-only bind mount (``unshare``) and a full tmpfs
(root); each test skips where its file system cannot be had. Each failed before the fix.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import read_only_bind
from tests.foundry.conftest import good_env, good_row
from trainrecord.errors import RecordWriteError
from trainrecord.foundry import write_metrics, write_witness

WRITERS: dict[str, tuple[str, Callable[[Path], Any]]] = {
    "metrics": (
        "metrics.json",
        lambda folder: write_metrics(folder, [good_row()]),
    ),
    "witness": (
        "observed.attempt0.json",
        lambda folder: write_witness(
            folder, config={"lr": 0.1}, device="cpu", wall_seconds=1, env=good_env()
        ),
    ),
}

SCRIPT = """
import json, sys
from trainrecord.foundry import write_metrics, write_witness
folder = sys.argv[2]
try:
    if sys.argv[1] == "metrics":
        write_metrics(folder, [{"benchmark": "ETTh1", "metric": "mse", "horizon": 96,
                                "seed": 0, "value": 0.386}])
    else:
        write_witness(folder, config={"lr": 0.1}, device="cpu", wall_seconds=1,
                      env={"FOUNDRY_RUN_ID": "4217"})
except OSError as exc:
    print(json.dumps({"type": type(exc).__name__, "errno": exc.errno, "message": str(exc),
                      "filename": exc.filename, "chained": exc.__cause__ is not None}))
"""


def _says(error: dict[str, Any], target: Path, cause: str, *advice: str) -> None:
    assert error["type"] == "RecordWriteError", error
    assert error["filename"] == str(target), error
    assert not error["chained"], error
    message = error["message"]
    assert message.startswith(f"trainrecord could not write {target}: {cause}; nothing was "), (
        message
    )
    assert ".tmp" not in message and "\n" not in message, message
    for words in advice:
        assert words in message, (words, message)


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_a_writer_on_a_read_only_mount_names_its_file_and_what_to_do(
    tmp_path: Path, kind: str
) -> None:
    name = WRITERS[kind][0]
    results = tmp_path / "results"
    results.mkdir()
    target = tmp_path / "ro"
    out = read_only_bind(results, target, [sys.executable, "-c", SCRIPT, kind, str(target)])
    assert out.returncode == 0 and out.stdout.strip(), out.stdout + out.stderr[-2000:]
    error = json.loads(out.stdout)
    assert error["errno"] == errno.EROFS
    _says(
        error,
        target / name,
        "Read-only file system (EROFS)",
        "a read-only mount): remount it writable (or give the run a results_dir elsewhere)",
    )
    assert os.listdir(results) == []


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_a_writer_on_a_full_disk_names_its_file_and_leaves_no_temporary_file(
    small_fs: Callable[[str], Path], kind: str
) -> None:
    name, write = WRITERS[kind]
    results = small_fs("16k") / "results"
    results.mkdir()
    old = write_metrics(results, [good_row(seed=7)]).read_bytes()  # to be kept, whole
    stat = os.statvfs(results)
    (results / "filler").write_bytes(b"\0" * (stat.f_bavail * stat.f_frsize))
    with pytest.raises(RecordWriteError) as info:
        write(results)
    error = info.value
    assert isinstance(error, OSError) and error.errno == errno.ENOSPC
    said = {"type": "RecordWriteError", "filename": error.filename, "message": str(error)}
    said["chained"] = error.__cause__ is not None
    _says(said, results / name, "No space left on device (ENOSPC)", "Free space on that disk")
    assert sorted(os.listdir(results)) == ["filler", "metrics.json"]
    assert (results / "metrics.json").read_bytes() == old
