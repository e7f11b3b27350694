"""Verifying in worker processes gives the same answer as one pass, at range boundaries too."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

import trainrecord.diary.verifier as verify_module
from tests.diary.helpers import write_run
from trainrecord.diary import verify


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("big") / "run"
    write_run(run, repeat=60, seal=True)  # ~1000 lines, ~350 KB
    return run


@pytest.fixture
def small_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_module, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(verify_module, "MIN_CHUNK_BYTES", 20_000)
    monkeypatch.setattr(verify_module, "CHUNK_BYTES", 20_000)


def _same(a, b) -> None:
    assert dataclasses.asdict(a) == dataclasses.asdict(b)


def _ranges(run: Path) -> list[tuple[int, int, int]]:
    """(start, stop, first line number) of each range the verifier would use."""
    data = (run / "diary.jsonl").read_bytes()
    return [
        (start, stop, data.count(b"\n", 0, start) + 1)
        for start, stop in verify_module._ranges(data, len(data), 20_000)
    ]


def test_parallel_equals_serial_on_an_intact_record(big: Path, small_ranges: None) -> None:
    assert len(_ranges(big)) > 10
    _same(verify(big, workers=2), verify(big, workers=1))
    assert verify(big, workers=2).ok


@pytest.mark.parametrize(
    "change",
    [
        "edit first line of a range",
        "delete first line of a range",
        "swap across a boundary",
        "edit last line of a range",
    ],
)
def test_parallel_equals_serial_at_range_boundaries(
    big: Path, small_ranges: None, tmp_path: Path, change: str
) -> None:
    run = tmp_path / "run"
    shutil.copytree(big, run)
    lines = (run / "diary.jsonl").read_bytes().splitlines(keepends=True)
    first = _ranges(big)[3][2] - 1  # 0-based index of the first line of the fourth range
    if change == "edit first line of a range":
        lines[first] = lines[first].replace(b'"seq":', b'"seq":1', 1)
    elif change == "delete first line of a range":
        del lines[first]
    elif change == "swap across a boundary":
        lines[first - 1], lines[first] = lines[first], lines[first - 1]
    else:
        lines[first - 1] = lines[first - 1].replace(b'"time":', b'"time":1', 1)
    (run / "diary.jsonl").write_bytes(b"".join(lines))
    parallel, serial = verify(run, workers=2), verify(run, workers=1)
    _same(parallel, serial)
    assert parallel.status == "failed"
    assert parallel.failure.line in (first, first + 1)


def test_serial_ranges_with_progress_equal_one_pass(
    big: Path, small_ranges: None, tmp_path: Path
) -> None:
    seen: list[tuple[int, int]] = []
    stepped = verify(big, workers=1, progress=lambda done, total: seen.append((done, total)))
    _same(stepped, verify(big, workers=2))
    size = (big / "diary.jsonl").stat().st_size
    assert len(seen) > 10 and seen[-1] == (size, size)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    run = tmp_path / "run"
    shutil.copytree(big, run)
    lines = (run / "diary.jsonl").read_bytes().splitlines(keepends=True)
    lines[500] = lines[500].replace(b'"seq":', b'"seq":1', 1)
    (run / "diary.jsonl").write_bytes(b"".join(lines))
    _same(verify(run, workers=1, progress=lambda d, t: None), verify(run, workers=1))


def _with_prev(line: bytes, prev: str) -> bytes:
    """The line with ``prev`` replaced and its hash taken again (only prev is wrong)."""
    import hashlib
    import json

    value = json.loads(line)
    body = {k: v for k, v in value.items() if k not in ("prev", "hash")}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256((prev + canonical).encode()).hexdigest()
    out = {**body, "prev": prev, "hash": digest}
    return json.dumps(out, sort_keys=True, separators=(",", ":")).encode() + b"\n"


@pytest.mark.parametrize("where", ["the first line", "the first line of a range"])
@pytest.mark.parametrize(
    ("prev", "rule"),
    [
        ("0" * 63, "diary.prev.format"),
        ("0" * 65, "diary.prev.format"),
        ("0" * 63 + "\n", "diary.prev.format"),
        ("A" * 64, "diary.prev.format"),
        ("1" * 64, "diary.chain.prev"),  # well formed, not the hash before it
    ],
)
def test_a_malformed_prev_is_a_format_failure_wherever_the_line_is(
    big: Path, small_ranges: None, tmp_path: Path, where: str, prev: str, rule: str
) -> None:
    # Before: on a file's or a range's first line, the chain check ran first and said
    # diary.chain.prev; on other lines (and in the Node implementation) diary.prev.format.
    run = tmp_path / "run"
    shutil.copytree(big, run)
    lines = (run / "diary.jsonl").read_bytes().splitlines(keepends=True)
    index = 0 if where == "the first line" else _ranges(big)[3][2] - 1
    lines[index] = _with_prev(lines[index], prev)
    (run / "diary.jsonl").write_bytes(b"".join(lines))
    parallel, serial = verify(run, workers=2), verify(run, workers=1)
    _same(parallel, serial)
    assert parallel.failure is not None and parallel.failure.rule == rule, parallel.summary()
    assert parallel.failure.line == index + 1


def test_the_latest_sessions_run_start_is_found_in_any_range(
    tmp_path: Path, small_ranges: None
) -> None:
    # A resumed writer hands the latest session's run_start to the Monitor (which compares
    # architectures) from its one verification: serial and parallel find the same line.
    from tests.diary.helpers import BODIES
    from trainrecord.diary import DiaryWriter

    run = tmp_path / "run"
    write_run(run, repeat=30, seal=False)
    with DiaryWriter(run, seal=False) as writer:  # a second session, in a later range
        second = writer.append("run_start", {**BODIES["run_start"], "name": "second"})
        for i in range(30):
            writer.append("loss_spike", {**BODIES["loss_spike"], "step": 100 + i})
    assert len(_ranges(run)) > 5
    parallel, serial = verify(run, workers=2), verify(run, workers=1)
    assert parallel.ok and serial.ok
    assert parallel.last_run_start == serial.last_run_start == second
    with DiaryWriter(run, seal=False) as resumed:
        assert resumed.resumed_start == second
    assert verify(run, workers=1).to_json().keys().isdisjoint({"last_run_start"})
