"""Helpers for the monitor tests: tiny models, generated data, reading and checking a run.

Every test trains a real model (a few thousand parameters, 8x8 inputs, tens of steps)
with a real optimizer; every diary line is checked against its event schema and the
record is verified with the diary verifier.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from trainrecord.diary import verify
from trainrecord.diary.events import line_problems
from trainrecord.monitor import Monitor
from trainrecord.monitor.demo import make_data

torch.set_num_threads(1)


class TinyCNN(nn.Module):
    """Two Conv-BN-ReLU blocks and a classifier, on 3x8x8 images (about 1k parameters)."""

    def __init__(
        self,
        width: int = 4,
        classes: int = 4,
        second_consumer: bool = False,
        detach_second: bool = False,
    ) -> None:
        super().__init__()
        self.block1 = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.conv2 = nn.Conv2d(width, 2 * width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(2 * width)
        self.relu2 = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.head = nn.Linear(2 * width, classes)
        self.second_consumer = second_consumer
        self.detach_second = detach_second

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores."""
        x = self.block1(x)
        if self.detach_second:
            x = x.detach()
        y = self.bn2(self.conv2(x))
        out = self.relu2(y)
        if self.second_consumer:
            out = out + 0.1 * y  # the BatchNorm's output has a second consumer
        return self.head(self.flatten(self.pool(out)))


class TinyMLP(nn.Module):
    """Linear-ReLU-Linear without BatchNorm, on flattened 3x8x8 images."""

    def __init__(self, hidden: int = 16, classes: int = 4) -> None:
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(3 * 8 * 8, hidden)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores."""
        return self.fc2(self.relu(self.fc1(self.flatten(x))))


DATA = make_data(512, size=8, classes=4, seed=0, noise=1.0)


def batches(count: int, batch: int = 32, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``count`` random batches of the generated 8x8 data."""
    x, y = DATA
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        index = torch.randint(0, x.shape[0], (batch,), generator=g)
        out.append((x[index], y[index]))
    return out


def train(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    monitor: Monitor | None,
    steps: int,
    before_step: Callable[[int, torch.Tensor], torch.Tensor] | None = None,
    after_backward: Callable[[int], None] | None = None,
    seed: int = 0,
    batch: int = 32,
    set_to_none: bool = True,
) -> list[float]:
    """The issue's loop: forward, backward, monitor.step(loss), optimizer step, zero_grad
    (``monitor`` None: the same loop unmonitored; ``set_to_none``: zero_grad's)."""
    losses = []
    for step, (x, y) in enumerate(batches(steps, batch=batch, seed=seed)):
        loss = F.cross_entropy(model(x), y)
        if before_step is not None:
            loss = before_step(step, loss)
        loss.backward()
        if after_backward is not None:
            after_backward(step)
        if monitor is not None:
            monitor.step(loss)
        optimizer.step()
        optimizer.zero_grad(set_to_none=set_to_none)
        losses.append(float(loss.detach().mean()))
    return losses


def read_run(run_dir: Path) -> list[dict[str, Any]]:
    """Every diary line, after checking each against its schema and verifying the record."""
    lines = [json.loads(t) for t in (run_dir / "diary.jsonl").read_text().splitlines()]
    for line in lines:
        assert line_problems(line) == [], line
    result = verify(run_dir)
    assert result.ok, result.summary()
    assert result.complete
    return lines


def events(lines: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The lines of one event type."""
    return [line for line in lines if line["event"] == name]


def metrics(run_dir: Path) -> list[dict[str, Any]]:
    """The rows of metrics.jsonl."""
    return [json.loads(t) for t in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A fresh run directory."""
    return tmp_path / "run"


def signed_run(tmp_path: Path) -> tuple[nn.Module, torch.optim.Optimizer, Path, Any]:
    """A TinyMLP trained 2 steps by a Monitor signing its record with a new key in
    ``tmp_path``: (model, optimizer, run folder, (private, public, fingerprint))."""
    from trainrecord.diary import generate_keypair

    torch.manual_seed(0)
    keys = generate_keypair(tmp_path / "signer")
    run = tmp_path / "run"
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    with Monitor(model, optimizer, run, check_every=2, signing_key=keys[0]) as monitor:
        train(model, optimizer, monitor, 2)
    return model, optimizer, run, keys
