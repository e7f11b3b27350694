"""Deferred checks: the gradient read beside the optimizer's step.

A deferred check must write exactly what a synchronous check writes; a loop that writes to
the gradients in place between ``monitor.step()`` and the end of ``optimizer.step()``
(clipping, in-place weight decay) must never be deferred; one that starts doing so after
the monitor trusted it gets its read discarded and retaken, with a warning; an error met by a
deferred check is raised at the next ``monitor.step()``.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.nn import functional as F

from tests.monitor.conftest import TinyCNN, batches, metrics, read_run
from trainrecord.monitor import Monitor
from trainrecord.monitor.deferred import Deferred

VOLATILE = {"time", "hash", "prev"}


class Launches:
    """Notes the steps of every Monitor's deferred checks (the real code still runs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.steps: list[int] = []
        self._step = -1
        launch, check = Deferred.launch, Monitor._check

        def noted(monitor: Monitor, step: int, loss: Any) -> None:
            self._step = step
            check(monitor, step, loss)

        def counted(deferred: Deferred, *args: Any) -> None:
            self.steps.append(self._step)
            launch(deferred, *args)

        monkeypatch.setattr(Monitor, "_check", noted)
        monkeypatch.setattr(Deferred, "launch", counted)

    @property
    def count(self) -> int:
        """How many checks were deferred."""
        return len(self.steps)


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> Launches:
    """How many checks were deferred."""
    return Launches(monkeypatch)


Between = Callable[[int, torch.nn.Module], None]


def run(
    run_dir: Path,
    overlap: bool,
    steps: int = 30,
    lr: float = 0.05,
    between: Between | None = None,
    optimizer_step: Callable[[int], bool] = lambda step: True,
    weight_decay_in_place: float = 0.0,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Monitor]:
    """Train a TinyCNN; ``between(step, model)`` runs after ``monitor.step()`` and before
    the optimizer's step. Returns the diary lines (without time and hash), metrics rows
    and the monitor."""
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer: torch.optim.Optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    if weight_decay_in_place:
        optimizer = InPlaceDecaySGD(model.parameters(), lr=lr, decay=weight_decay_in_place)
    monitor = Monitor(
        model, optimizer, run_dir, name="run", check_every=2, warmup=2, overlap=overlap
    )
    with monitor:
        for step, (x, y) in enumerate(batches(steps)):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss)
            if between is not None:
                between(step, model)
            if optimizer_step(step):
                optimizer.step()
                optimizer.zero_grad()
    lines = [{k: v for k, v in line.items() if k not in VOLATILE} for line in read_run(run_dir)]
    return lines, metrics(run_dir), monitor


class InPlaceDecaySGD(torch.optim.Optimizer):
    """Plain SGD that adds weight decay to the gradients in place, as many hand-written
    optimizers do."""

    def __init__(self, params: Any, lr: float, decay: float) -> None:
        super().__init__(params, {"lr": lr, "decay": decay})

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:  # type: ignore[override]
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad.add_(p, alpha=group["decay"])
                    p.add_(p.grad, alpha=-group["lr"])


def test_deferred_checks_write_exactly_what_synchronous_checks_write(
    tmp_path: Path, launches: Launches
) -> None:
    sync_lines, sync_rows, _ = run(tmp_path / "sync", overlap=False)
    assert launches.count == 0
    lines, rows, monitor = run(tmp_path / "deferred", overlap=True)
    assert launches.count == 14  # every check but the first (15 checks in 30 steps)
    assert launches.steps == list(range(2, 30, 2))
    assert rows == sync_rows and lines == sync_lines
    assert monitor._deferred._thread is None  # close() stopped the worker


def test_deferred_checks_write_the_same_alarms_and_loss_events(
    tmp_path: Path, launches: Launches
) -> None:
    # a learning rate that explodes the training: gradient alarms and loss events, from
    # checks deferred while no channel is stuck
    sync_lines, sync_rows, _ = run(tmp_path / "sync", overlap=False, lr=1.0, steps=40)
    lines, rows, _ = run(tmp_path / "deferred", overlap=True, lr=1.0, steps=40)
    assert rows == sync_rows and lines == sync_lines
    deferred_events = {
        line["event"]
        for line in lines
        if line.get("step") in launches.steps and line["event"] != "channels"
    }
    assert deferred_events & {"alarm", "loss_spike", "nonfinite_loss", "alarm_cleared"}


def test_clipping_between_step_and_optimizer_keeps_every_check_synchronous(
    tmp_path: Path, launches: Launches
) -> None:
    def clip(step: int, model: torch.nn.Module) -> None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.01)

    sync_lines, sync_rows, _ = run(tmp_path / "sync", overlap=False, between=clip)
    lines, rows, _ = run(tmp_path / "deferred", overlap=True, between=clip)
    assert launches.count == 0
    assert rows == sync_rows and lines == sync_lines
    # the norms are the ones monitor.step() saw, before clipping
    assert all(total(row) > 0.02 for row in rows[1:])


def test_an_optimizer_that_writes_gradients_in_place_is_never_deferred(
    tmp_path: Path, launches: Launches
) -> None:
    sync_lines, sync_rows, _ = run(tmp_path / "sync", overlap=False, weight_decay_in_place=0.5)
    lines, rows, _ = run(tmp_path / "deferred", overlap=True, weight_decay_in_place=0.5)
    assert launches.count == 0
    assert rows == sync_rows and lines == sync_lines


def test_gradient_accumulation_is_never_deferred(tmp_path: Path, launches: Launches) -> None:
    # the optimizer steps every other step, after the steps that are not checks
    def every_other(step: int) -> bool:
        return step % 2 == 1

    sync_lines, sync_rows, _ = run(tmp_path / "sync", overlap=False, optimizer_step=every_other)
    lines, rows, _ = run(tmp_path / "deferred", overlap=True, optimizer_step=every_other)
    assert launches.count == 0
    assert rows == sync_rows and lines == sync_lines


def test_a_loop_that_starts_clipping_late_has_that_read_retaken_and_is_warned(
    tmp_path: Path, launches: Launches, caplog: pytest.LogCaptureFixture
) -> None:
    def clip_late(step: int, model: torch.nn.Module) -> None:
        if step >= 10:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.01)

    _, sync_rows, _ = run(tmp_path / "sync", overlap=False, between=clip_late)
    with caplog.at_level(logging.WARNING, logger="trainrecord.monitor"):
        _, rows, monitor = run(tmp_path / "deferred", overlap=True, between=clip_late)
    assert launches.count == 5  # steps 2, 4, 6, 8 and the discarded one at step 10
    assert monitor._deferred.never
    assert rows[:5] == sync_rows[:5] and rows[6:] == sync_rows[6:]
    # step 10: the norms of the clipped gradients (the read was discarded and retaken)
    assert rows[5]["step"] == 10 and math.isclose(total(rows[5]), 0.01, rel_tol=1e-4)
    assert total(sync_rows[5]) > 0.02
    warnings = [r.getMessage() for r in caplog.records if "modified in place" in r.getMessage()]
    assert len(warnings) == 1 and "every later check reads them synchronously" in warnings[0]


def test_an_error_of_a_deferred_check_is_raised_at_the_next_step(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    monitor = Monitor(model, optimizer, tmp_path / "run", check_every=1)
    data = batches(6)

    def one(step: int) -> None:
        x, y = data[step]
        F.cross_entropy(model(x), y).backward()
        monitor.step(F.cross_entropy(model(x), y).detach())
        optimizer.step()
        optimizer.zero_grad()

    one(0)
    one(1)  # deferred: the loop was seen to leave the gradients alone
    assert monitor._deferred.trusted
    monitor._metrics._file.broken = True  # as after a failed write
    one(2)  # deferred: its metrics row fails in the optimizer's step post-hook
    with pytest.raises(OSError, match="an earlier write failed"):
        one(3)
    monitor.close()
    assert not any(t.name == "trainrecord-check" for t in threading.enumerate())


def total(row: dict[str, Any]) -> float:
    """The norm of all gradients of a metrics row."""
    return math.sqrt(sum(v * v for v in row["grad"].values() if v is not None))
