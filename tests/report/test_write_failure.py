"""The reporting client on a run folder it cannot write: an error naming the file and the
fix, nothing left behind, and a Reporter whose job trains on with one warning (naming the
run lock it could not make, and what is lost: the seq, the history, and the detection of
another process reporting the run).

open_run, RunFolder.update and the seq clock on a read-only mount or a full disk raised a
bare OSError naming a hidden lock file (``.metadata.json.lock``, ``report_seq.json.lock``)
or nothing at all (``[Errno 28] No space left on device``); open_run left the folders it
made; a Reporter whose folder could not be written sent no report at all (every seq failed)
and warned at every epoch. Real files: a read-only bind mount (``unshare``) and a full
tmpfs (root); each test skips where its file system cannot be had.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.conftest import read_only_bind
from tests.report.conftest import settings_for, training_epoch, training_state
from tests.report.servers import wait_until
from trainrecord.errors import RecordWriteError
from trainrecord.report import Reporter, ReportServer, open_run
from trainrecord.report.run_folder import ACTIVE

RO_ADVICE = "a read-only mount): remount it writable (or give the run a run folder elsewhere)"

SCRIPT = """
import json, logging, sys
from pathlib import Path
from tests.report.conftest import TOKEN, training_epoch, training_state
from trainrecord.report import Reporter, ReportSettings, open_run
said = []
class Keep(logging.Handler):
    def emit(self, record):
        said.append((record.levelname, record.getMessage()))
logging.getLogger("trainrecord.report").addHandler(Keep())
def error(call):
    try:
        call()
    except OSError as exc:
        return {"type": type(exc).__name__, "errno": exc.errno, "message": str(exc),
                "filename": exc.filename, "chained": exc.__cause__ is not None}
    return None
folder = Path(sys.argv[2])
out = {}
if sys.argv[1] == "fresh":
    out["open_run"] = error(lambda: open_run(folder / "models" / "pre" / "r1"))
else:
    run = open_run(folder / "r1")
    out["update"] = error(lambda: run.update(note="x"))
    state = run.job_state("training", training_state().config, epochs_first=0,
                          epochs_total=3)
    settings = ReportSettings(url=sys.argv[3], every=60.0, token=TOKEN)
    with Reporter(settings, state, run=run) as reporter:
        for epoch in range(1, 3):
            reporter.epoch_end(training_epoch(epoch))
    out["delivered"] = reporter.sender.sent
out["said"] = said
print(json.dumps(out))
"""


def _says(error: dict[str, Any] | None, target: Path, cause: str, state: str, advice: str) -> None:
    assert error is not None and error["type"] == "RecordWriteError", error
    assert error["filename"] == str(target), error
    assert not error["chained"], error
    assert error["message"] == (
        f"trainrecord could not write {target}: {cause}; nothing was written ({state}). "
        f"{error['message'].split('. ', 1)[1]}"
    ), error
    assert ".tmp" not in error["message"] and ".lock" not in error["message"], error
    assert advice in error["message"], error


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"<dir>"
        for p in sorted(folder.rglob("*"))
    }


def test_open_run_on_a_read_only_mount_names_metadata_json(tmp_path: Path) -> None:
    source = tmp_path / "runs"
    source.mkdir()
    target = tmp_path / "ro"
    out = read_only_bind(source, target, [sys.executable, "-c", SCRIPT, "fresh", str(target)])
    assert out.returncode == 0, out.stdout + out.stderr[-2000:]
    error = json.loads(out.stdout)["open_run"]
    assert error["errno"] == errno.EROFS
    where = target / "models" / "pre" / "r1" / "metadata.json"
    _says(error, where, "Read-only file system (EROFS)", "no metadata.json was made", RO_ADVICE)
    assert os.listdir(source) == []


def test_a_run_on_a_read_only_mount_trains_on_with_one_warning(
    tmp_path: Path, receiver: ReportServer
) -> None:
    source = tmp_path / "runs"
    run = open_run(source / "r1", {"mode": "pre"})
    state = run.job_state("training", training_state().config, epochs_first=0, epochs_total=3)
    with Reporter(settings_for(receiver.url), state, run=run) as reporter:
        reporter.epoch_end(training_epoch(0))
    before = _tree(source)
    target = tmp_path / "ro"
    command = [sys.executable, "-c", SCRIPT, "resume", str(target), receiver.url]
    out = read_only_bind(source, target, command)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stdout + out.stderr[-2000:]
    said = json.loads(out.stdout)
    meta = target / "r1" / "metadata.json"
    _says(
        said["update"],
        meta,
        "Read-only file system (EROFS)",
        "metadata.json is as it was",
        RO_ADVICE,
    )
    warnings = [text for level, text in said["said"] if level == "WARNING"]
    assert len(warnings) == 1, warnings  # not one per epoch, nor one per file
    # the first file the run failed to write: the lock by which the Reporter holds the run
    # (was: a silent None, so a second process reporting the run went unnoticed), named,
    # with what is lost; the seq and history files then fail without another word
    assert "Read-only file system (EROFS)" in warnings[0], warnings
    assert f"{target / 'r1' / ACTIVE}: " in warnings[0], warnings
    assert "Training and its reports go on" in warnings[0], warnings
    assert "the report seq, and the epoch history" in warnings[0], warnings
    assert (
        "Nor is another process reporting this run at the same time detected (its lock "
        in (warnings[0])
    ), warnings
    assert said["delivered"] >= 1  # reports went out, numbered in memory
    latest = receiver.store.latest(run.run_id)
    assert latest is not None and latest["status"] == "complete", latest
    assert [e["epoch"] for e in latest["history"]] == [0, 1, 2]
    assert _tree(source) == before  # nothing written, nothing left


def _fill(folder: Path) -> None:
    stat = os.statvfs(folder)
    (folder / "filler").write_bytes(b"\0" * (stat.f_bavail * stat.f_frsize))


def test_open_run_on_a_full_disk_names_metadata_json_and_leaves_no_folder(
    small_fs: Callable[[str], Path],
) -> None:
    disk = small_fs("16k")
    _fill(disk)
    with pytest.raises(RecordWriteError) as info:
        open_run(disk / "models" / "pre" / "r1")
    error = info.value
    assert error.errno == errno.ENOSPC and error.__cause__ is None
    assert error.filename == str(disk / "models" / "pre" / "r1" / "metadata.json")
    assert str(error).startswith(
        f"trainrecord could not write {error.filename}: No space left on device (ENOSPC); "
        "nothing was written (no metadata.json was made). Free space on that disk (or give "
        "the run a run folder on another one)."
    ), str(error)
    assert os.listdir(disk) == ["filler"]  # the folders it made are gone again


def test_a_reporter_whose_disk_fills_mid_run_trains_on_with_one_warning(
    small_fs: Callable[[str], Path], receiver: ReportServer, caplog: pytest.LogCaptureFixture
) -> None:
    disk = small_fs("64k")
    run = open_run(disk / "r1", {"mode": "pre"})
    state = run.job_state("training", training_state().config, epochs_first=0, epochs_total=4)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 4), torch.randint(0, 2, (32,))
    kept: dict[str, bytes] = {}
    caplog.set_level(logging.INFO, logger="trainrecord.report")
    with Reporter(settings_for(receiver.url), state, run=run) as reporter:
        for epoch in range(4):
            for _ in range(3):
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
            if epoch == 2:  # the disk fills in the middle of the run
                # once the last report is out: its seq file's rename, after the disk was
                # filled, would free the old file's page for one more write
                sender = reporter.sender
                wait_until(
                    lambda s=sender: s.idle and s.sent + s.superseded + s.refused == s.submitted
                )
                kept = _tree(disk / "r1")
                _fill(disk)
            reporter.epoch_end(training_epoch(epoch) | {"train_loss": loss.item()})
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1, warnings
    assert "No space left on device (ENOSPC)" in warnings[0], warnings
    assert "Free space on that disk" in warnings[0] and ".tmp" not in warnings[0], warnings

    # metadata.json and report_seq.json as they were (an empty lock file the sender thread
    # makes for its next seq may come before or after the snapshot: timing, not content)
    def files(tree: dict[str, bytes]) -> dict[str, bytes]:
        return {name: data for name, data in tree.items() if not name.endswith(".lock")}

    assert files(_tree(disk / "r1")) == files(kept)
    latest = receiver.store.latest(run.run_id)
    assert latest is not None and latest["status"] == "complete", latest
    assert [e["epoch"] for e in latest["history"]] == [0, 1, 2, 3]
    stored = json.loads((disk / "r1" / "metadata.json").read_text())
    assert [e["epoch"] for e in stored["report_history"]] == [0, 1]
