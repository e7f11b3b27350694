"""The reader that polls a Foundry file while it is written (checks/visibility.py)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from trainrecord_conformance.checks.visibility import METRICS, Watcher, Writes, complete

ROWS = [{"benchmark": "b", "metric": "m", "horizon": 0, "seed": 0, "value": 0.5}]
DATA = (json.dumps(ROWS, indent=2) + "\n").encode()


def _in_place(path: Path, pause: float) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    os.write(fd, DATA[:10])
    time.sleep(pause)
    os.write(fd, DATA[10:])
    os.close(fd)


def _atomic(path: Path, pause: float) -> None:
    tmp = path.with_name(".tmp")
    tmp.write_bytes(DATA[:10])
    time.sleep(pause)
    with tmp.open("ab") as f:
        f.write(DATA[10:])
    os.link(tmp, path)
    tmp.unlink()


def _watch(tmp_path: Path, writer, pause: float = 0.05) -> Watcher:  # type: ignore[no-untyped-def]
    path = tmp_path / "metrics.json"
    with Watcher(path, complete(METRICS, [ROWS])) as watcher:
        thread = threading.Thread(target=writer, args=(path, pause))
        thread.start()
        thread.join()
    return watcher


def test_a_half_written_file_is_seen_and_shown(tmp_path: Path) -> None:
    watcher = _watch(tmp_path, _in_place)
    problem = watcher.problem("write_metrics")
    assert problem is not None and "a reader of metrics.json read" in problem
    assert "(10 bytes)" in problem or "an empty file" in problem


def test_a_file_linked_whole_is_never_a_problem(tmp_path: Path) -> None:
    watcher = _watch(tmp_path, _atomic)
    assert watcher.problem("write_metrics") is None
    assert watcher.reads >= 1  # the complete file was read, after the link


def _inotify() -> bool:
    writes = Writes(Path("."))
    available = writes.available
    writes.names()
    return available


@pytest.mark.skipif(not _inotify(), reason="inotify is Linux only")
def test_a_write_into_the_final_name_is_reported_without_a_read_in_the_window(
    tmp_path: Path,
) -> None:
    """The kernel's events tell an in-place fill from a link however short the window."""
    writes = Writes(tmp_path)
    _in_place(tmp_path / "metrics.json", 0)
    _atomic(tmp_path / "other.json", 0)
    assert writes.names() == {"metrics.json", ".tmp"}
