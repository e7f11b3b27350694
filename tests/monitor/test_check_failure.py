"""A check that raises part-way, in one process: run_end counts only completed checks,
the record verifies and is sealed, and the exception that ended the run is the one that
propagates from the ``with`` block (before, the first check was counted before it ran: a
run_end of 1 check in 0 steps, which the record's own rule refuses, and close() raised
RecordRefused in place of the real error)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.nn import functional as F

from tests.monitor.conftest import TinyMLP, read_run
from trainrecord.diary import verify
from trainrecord.monitor import Monitor


def test_a_check_that_raises_part_way_leaves_a_verified_record_and_its_error(
    tmp_path: Path,
) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    # a loss on the meta device cannot be read back: the first check raises after it has
    # written structure and manifest (as Ctrl+C or a failed collective would part-way)
    x, y = torch.randn(4, 3, 8, 8), torch.zeros(4, dtype=torch.long)
    with (
        pytest.raises(NotImplementedError),
        Monitor(model, optimizer, tmp_path / "run", check_every=1) as monitor,
    ):
        F.cross_entropy(model(x), y).backward()
        monitor.step(torch.zeros((), device="meta"))
    lines = read_run(tmp_path / "run")
    assert [line["event"] for line in lines] == ["run_start", "structure", "manifest", "run_end"]
    assert (lines[-1]["steps"], lines[-1]["checks"]) == (0, 0)
    assert lines[-1]["error"]["type"] == "NotImplementedError"
    result = verify(tmp_path / "run")
    assert result.ok and result.sealed, result.failure


class _InterruptedScaler(torch.amp.GradScaler):
    """A real CPU GradScaler whose second ``get_scale()`` of a check raises
    KeyboardInterrupt: Ctrl+C landing in step() after the check completed (the second read
    is the step mark's, after the check's metrics row)."""

    def __init__(self) -> None:
        super().__init__("cpu")
        self.reads = 0

    def get_scale(self) -> float:
        self.reads += 1
        if self.reads == 2:
            raise KeyboardInterrupt
        return float(super().get_scale())


def test_ctrl_c_after_a_completed_check_leaves_checks_within_steps(tmp_path: Path) -> None:
    # before, the check was counted but its step was not (step() counted it after the step
    # mark): run_end said 1 check in 0 steps, the writer refused it (diary.run_end.checks)
    # and the record ended without run_end (close() then failed on a KeyError)
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = _InterruptedScaler()
    x, y = torch.randn(4, 3, 8, 8), torch.zeros(4, dtype=torch.long)
    with (
        pytest.raises(KeyboardInterrupt),
        Monitor(model, optimizer, tmp_path / "run", check_every=1, scaler=scaler) as monitor,
    ):
        loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        monitor.step(loss)
    lines = read_run(tmp_path / "run")
    assert lines[-1]["event"] == "run_end"
    assert (lines[-1]["steps"], lines[-1]["checks"]) == (1, 1)
    assert lines[-1]["error"]["type"] == "KeyboardInterrupt"
    result = verify(tmp_path / "run")
    assert result.ok and result.sealed, result.failure


class _KeepSink:
    name = "keep"

    def event(self, line: dict[str, object]) -> None:
        pass

    def metrics(self, row: dict[str, object]) -> None:
        pass


def test_ctrl_c_while_the_row_goes_to_the_sinks_leaves_rows_within_checks(
    tmp_path: Path,
) -> None:
    # a KeyboardInterrupt raised where the interpreter delivers a real Ctrl+C: at the call
    # that hands the check's metrics row to the sinks, after the row is in metrics.jsonl.
    # Before, the check was not counted yet: run_end said 0 checks with 1 row, which the
    # record refuses (diary.metrics.rows), and the record was left unsealed
    def interrupt(frame: Any, event: str, arg: object) -> None:
        put = event == "call" and frame.f_code.co_name == "put"
        if put and frame.f_locals.get("kind") == "metrics":
            raise KeyboardInterrupt

    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(4, 3, 8, 8), torch.zeros(4, dtype=torch.long)
    with (
        pytest.raises(KeyboardInterrupt),
        Monitor(model, optimizer, tmp_path / "run", check_every=1, sinks=[_KeepSink()]) as monitor,
    ):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        sys.setprofile(interrupt)
        try:
            monitor.step(loss)
        finally:
            sys.setprofile(None)
    lines = read_run(tmp_path / "run")
    assert (lines[-1]["event"], lines[-1]["steps"], lines[-1]["checks"]) == ("run_end", 1, 1)
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 1
    result = verify(tmp_path / "run")
    assert result.ok and result.sealed, result.failure
