"""Activation checkpointing (torch.utils.checkpoint) under the monitor.

Non-reentrant checkpointing (``use_reentrant=False``) runs the checkpointed modules' forward
pass again inside backward: those recomputations must not count as values seen a second
time. Reentrant checkpointing (``use_reentrant=True``) runs them under ``no_grad`` in the
forward pass and again in backward: their dataflow is hidden from the structure probe, and
the manifest must say so rather than give a false reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint

from tests.monitor.conftest import TinyMLP, batches, events, read_run
from trainrecord.monitor import Monitor


class CheckpointedMLP(TinyMLP):
    """TinyMLP whose fc1 and ReLU run inside an activation checkpoint (``reentrant`` None:
    no checkpoint)."""

    def __init__(self, reentrant: bool | None) -> None:
        super().__init__()
        self.reentrant = reentrant

    def inner(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.fc1(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.flatten(x)
        if self.reentrant is None:
            return self.fc2(self.inner(x))
        return self.fc2(checkpoint(self.inner, x, use_reentrant=self.reentrant))


def first_silent_step(tmp_path: Path, reentrant: bool | None) -> int | None:
    """The step of the first channels event on fc1, whose unit 0 is silent (bias -50) on
    batches of 32 with silent_min_values=256: 8 checks at check_every=1."""
    torch.manual_seed(0)
    model = CheckpointedMLP(reentrant)
    with torch.no_grad():
        model.fc1.bias[0] = -50.0
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    run = tmp_path / f"run_{reentrant}"
    with Monitor(model, optimizer, run, check_every=1, silent_min_values=256) as monitor:
        for x, y in batches(12, batch=32):
            loss = F.cross_entropy(model(x.requires_grad_(reentrant is True)), y)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    found = [e for e in events(read_run(run), "channels") if e["layer"] == "fc1"]
    return found[0]["step"] if found else None


def test_a_recomputation_in_backward_is_not_counted_twice(tmp_path: Path) -> None:
    assert first_silent_step(tmp_path, None) == 7  # 8 checks x 32 values = 256
    assert first_silent_step(tmp_path, False) == 7  # was 3: each value counted twice


class CheckpointedCNN(nn.Module):
    """Conv-BN-ReLU, then a second Conv-BN-ReLU block inside an activation checkpoint."""

    def __init__(self, reentrant: bool | None) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.head = nn.Linear(8, 4)
        self.reentrant = reentrant

    def block2(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.bn2(self.conv2(x)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.bn1(self.conv1(x)))
        if self.reentrant is None:
            x = self.block2(x)
        else:
            x = checkpoint(self.block2, x, use_reentrant=self.reentrant)
        return self.head(x.mean(dim=(2, 3)))


def checkpointed_cnn_run(tmp_path: Path, reentrant: bool | None) -> list[dict[str, Any]]:
    torch.manual_seed(0)
    model = CheckpointedCNN(reentrant)
    with torch.no_grad():  # bn2 channels 0 and 1 provably dead
        model.bn2.weight[:2] = 0.0
        model.bn2.bias[:2] = -1.0
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    run = tmp_path / f"cnn_{reentrant}"
    with Monitor(model, optimizer, run, check_every=2) as monitor:
        for x, y in batches(4, batch=8):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    return read_run(run)


def producer(lines: list[dict[str, Any]], layer: str) -> dict[str, Any]:
    manifest = events(lines, "manifest")[0]
    return next(p for p in manifest["producers"] if p["layer"] == layer)


def test_a_reentrant_checkpoint_is_named_as_what_hides_the_structure(tmp_path: Path) -> None:
    for reentrant in (None, False):  # the dataflow is seen: paired, certified
        lines = checkpointed_cnn_run(tmp_path, reentrant)
        assert events(lines, "structure")[0]["pairs"] == {"conv1": "bn1", "conv2": "bn2"}
        assert producer(lines, "conv2")["certifiable"] is True
        assert [e["layer"] for e in events(lines, "certificate")] == ["conv2"]
    lines = checkpointed_cnn_run(tmp_path, True)
    entry = producer(lines, "conv2")
    assert entry["certifiable"] is False
    assert "reentrant activation checkpoint" in entry["reason"]
    assert "use_reentrant=False" in entry["reason"]
    assert "no ReLU" not in entry["reason"]  # a ReLU does receive bn2's output
    assert events(lines, "certificate") == []  # nothing certified on unseen structure
    assert "conv2" not in events(lines, "structure")[0]["pairs"]
    assert producer(lines, "conv1")["certifiable"] is True
