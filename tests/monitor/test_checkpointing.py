"""Activation checkpointing (torch.utils.checkpoint) under the monitor.

Non-reentrant checkpointing (``use_reentrant=False``) runs the checkpointed modules' forward
pass again inside backward: those recomputations must not count as values seen a second
time. Reentrant checkpointing (``use_reentrant=True``) runs them under ``no_grad`` in the
forward pass and again in backward: their dataflow is hidden from the structure probe, and
the manifest must say so rather than give a false reason.
"""

from __future__ import annotations

from pathlib import Path

import torch
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
