"""A sink slower than the checks (soak probe: its queue grew without bound, 15,749 rows of
about 830 bytes each, and close() then waited 20 s): past a bound, metrics rows are
dropped for the sinks, said once as a sink_error; the record keeps every row. Real
training; the test failed before the bound."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.monitor.conftest import TinyMLP, events, metrics, read_run, train
from trainrecord.monitor import Monitor, sinks


class SlowSink:
    name = "slow"

    def __init__(self) -> None:
        self.rows = 0
        self.gate = threading.Event()

    def event(self, line: dict[str, Any]) -> None:
        pass

    def metrics(self, row: dict[str, Any]) -> None:
        self.gate.wait(10)  # held until the training is over
        self.rows += 1


def test_metrics_rows_past_the_bound_are_dropped_for_the_sinks_and_said_once(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sinks, "MAX_QUEUED", 5)
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    slow = SlowSink()
    monitor = Monitor(model, optimizer, run_dir, check_every=1, sinks=[slow])
    train(model, optimizer, monitor, 40)
    waiting = monitor._sinks._queue.qsize()
    slow.gate.set()
    monitor.close()
    assert waiting <= 5 + 3  # the bound, and the few events queued past it
    lines = read_run(run_dir)
    [said] = events(lines, "sink_error")
    assert said["sink"] == "slow" and "slower than the checks" in said["error"]
    assert len(metrics(run_dir)) == 40  # the record keeps every row
    assert slow.rows < 40
    assert events(lines, "run_end")[0]["counts"]["sink_errors"] == 1
