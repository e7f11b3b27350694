"""Where to call ``monitor.step`` relative to ``clip_grad_norm_`` (README, gradient
clipping): before clipping the raw gradients are measured and an explosion raises
``exploding``; after clipping it is hidden. A behaviour the README's recipe rests on (it
held before the recipe was written down)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

from tests.monitor.conftest import TinyMLP, batches, events, read_run
from trainrecord.monitor import Monitor


def exploding_layers(run: Path, step_after_clip: bool) -> set[str]:
    """Layers with an exploding alarm when the loss is scaled 1000 x from step 24 on."""
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    with Monitor(model, optimizer, run, check_every=2) as monitor:
        for step, (x, y) in enumerate(batches(32, batch=32)):
            loss = F.cross_entropy(model(x), y) * (1000.0 if step >= 24 else 1.0)
            loss.backward()
            if not step_after_clip:
                monitor.step(loss)  # the recipe: the raw gradients
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if step_after_clip:
                monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    alarms = events(read_run(run), "alarm")
    return {a["layer"] for a in alarms if a["diagnosis"] == "exploding"}


@pytest.mark.parametrize("step_after_clip", [False, True])
def test_step_before_clipping_sees_the_explosion(tmp_path: Path, step_after_clip: bool) -> None:
    exploding = exploding_layers(tmp_path / str(step_after_clip), step_after_clip)
    if step_after_clip:
        assert exploding == set()  # clipping hid it
    else:
        assert exploding == {"fc1", "fc2"}
