"""§4: seq increases strictly with every report about a run, across resumes and processes."""

from __future__ import annotations

import itertools
import json
import logging
import multiprocessing
from pathlib import Path

import pytest

from trainrecord.report import SeqClock
from trainrecord.report.seq import now_ms


def test_seq_is_the_send_time_in_ms_and_strictly_increasing() -> None:
    clock = SeqClock()
    before = now_ms()
    values = [clock.next() for _ in range(2000)]  # many within one millisecond
    assert values[0] >= before
    assert all(b > a for a, b in itertools.pairwise(values))


def test_a_floor_from_metadata_is_respected() -> None:
    floor = now_ms() + 10_000_000
    assert SeqClock(last_seq=floor).next() == floor + 1


def test_a_resumed_process_continues_above_the_persisted_seq(tmp_path: Path) -> None:
    path = tmp_path / "report_seq.json"
    first = SeqClock(path).next()
    assert SeqClock(path).next() > first  # a new clock (a new process) reads the file
    ahead = now_ms() + 5_000_000  # e.g. written by a machine whose clock ran ahead
    path.write_text(json.dumps({"last_seq": ahead}))
    assert SeqClock(path).next() == ahead + 1
    assert SeqClock(path).next() == ahead + 2


@pytest.mark.parametrize("text", ["not json", "[1]", '{"last_seq": "7"}', '{"last_seq": true}'])
def test_a_corrupt_seq_file_falls_back_to_the_clock_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, text: str
) -> None:
    path = tmp_path / "report_seq.json"
    path.write_text(text)
    clock = SeqClock(path)
    with caplog.at_level(logging.WARNING, logger="trainrecord.report"):
        first = clock.next()
        path.write_text(text)  # still unreadable at the next report: no second warning
        second = clock.next()
    assert first >= now_ms() - 1000 and second > first
    warnings = [r for r in caplog.records if "report_seq.json" in r.getMessage()]
    assert len(warnings) == 1
    assert json.loads(path.read_text()) == {"last_seq": second}  # the file is repaired


def test_a_missing_seq_file_is_not_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="trainrecord.report"):
        SeqClock(tmp_path / "report_seq.json").next()
    assert not caplog.records


def _take(path: str, n: int, out: multiprocessing.Queue) -> None:
    clock = SeqClock(path)
    out.put([clock.next() for _ in range(n)])


def test_processes_racing_on_one_run_never_repeat_a_seq(tmp_path: Path) -> None:
    path = str(tmp_path / "report_seq.json")
    ctx = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue = ctx.Queue()
    procs = [ctx.Process(target=_take, args=(path, 200, queue)) for _ in range(4)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
    every = [v for r in results for v in r]
    assert len(every) == 800 and len(set(every)) == 800
    for r in results:
        assert all(b > a for a, b in itertools.pairwise(r))
    assert SeqClock(path).next() > max(every)


def test_a_seq_file_behind_this_clock_never_takes_seq_back(tmp_path: Path) -> None:
    """seq is max(now, last + 1) over this process's last seq (or the floor given) and the
    file: a file holding less (restored from an old copy, written before the floor was
    known) is overtaken, never followed back, and is rewritten with the new seq."""
    path = tmp_path / "report_seq.json"
    path.write_text('{"last_seq": 5}')
    floor = now_ms() + 10_000_000
    clock = SeqClock(path, last_seq=floor)
    assert clock.next() == floor + 1
    path.write_text('{"last_seq": 5}')
    assert clock.next() == floor + 2
    assert json.loads(path.read_text()) == {"last_seq": floor + 2}
