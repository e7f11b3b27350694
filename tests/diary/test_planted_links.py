"""Links someone with write access to a run folder plants there (security probe F1-F3):
the writers and the seal never write, cut, create or lock a file through a symbolic link.
Before: the seal's temporary file had a name from the pid and was opened through a link
(the victim file became the seal); a diary.jsonl link to a victim's file was cut and
written by a resume with drop_torn_tail=True; a lock file link created a file elsewhere.
Real files; each test failed before its fix."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from tests.diary.helpers import BODIES, write_run
from trainrecord.diary import DiaryWriter, MetricsWriter, verify, write_seal
from trainrecord.report import open_run


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "elsewhere" / "victim.conf"
    path.parent.mkdir()
    path.write_bytes(b"IMPORTANT=1")  # one line without a newline: a "torn" diary
    return path


def test_a_link_planted_at_the_seals_temporary_name_is_left_alone(
    tmp_path: Path, victim: Path
) -> None:
    run = tmp_path / "run"
    write_run(run, seal=False)
    for name in ("record.json", "record.sig"):
        (run / f".{name}.{os.getpid()}.tmp").symlink_to(victim)
    write_seal(run)
    assert victim.read_bytes() == b"IMPORTANT=1"
    assert not (run / "record.json").is_symlink() and verify(run).ok


@pytest.mark.parametrize("name", ["diary.jsonl", "metrics.jsonl"])
@pytest.mark.parametrize("dangling", [False, True])
def test_a_writer_refuses_a_record_file_that_is_a_link(
    tmp_path: Path, victim: Path, name: str, dangling: bool
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    target = victim.with_name("made-by-the-run") if dangling else victim
    (run / name).symlink_to(target)
    with pytest.raises(OSError, match=f"{name} is a symbolic link .*never writes through one"):
        if name == "diary.jsonl":
            DiaryWriter(run, drop_torn_tail=True).append("run_start", BODIES["run_start"])
        else:
            MetricsWriter(run).append({"step": 0, "loss": 1.0, "grad": {}, "stuck": {}})
    assert victim.read_bytes() == b"IMPORTANT=1"
    assert not victim.with_name("made-by-the-run").exists()


def test_a_metadata_lock_file_link_creates_nothing_elsewhere(tmp_path: Path, victim: Path) -> None:
    folder = tmp_path / "models" / "pre" / "s1"
    run = open_run(folder, {"mode": "pre"})
    made = victim.with_name("made-by-the-lock")
    (folder / ".metadata.json.lock").symlink_to(made)
    with pytest.raises(OSError, match="is a symbolic link"):
        run.update(note="x")
    assert not made.exists()


def test_a_seq_lock_file_link_creates_nothing_elsewhere_and_is_said_once(
    tmp_path: Path, victim: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A running job's seq clock does not stop training on an unwritable run folder: it
    warns (once, naming the link and what to do) and counts on in memory."""
    folder = tmp_path / "models" / "pre" / "s1"
    run = open_run(folder, {"mode": "pre"})
    made = victim.with_name("made-by-the-lock")
    (folder / "report_seq.json.lock").symlink_to(made)
    clock = run.seq_clock()
    with caplog.at_level(logging.WARNING, logger="trainrecord.report"):
        first, second = clock.next(), clock.next()
    assert second == first + 1
    [warning] = [r.getMessage() for r in caplog.records]
    assert "report_seq.json.lock is a symbolic link" in warning
    assert "remove the link (or give another folder). Training and its reports go on" in warning
    assert not made.exists()
