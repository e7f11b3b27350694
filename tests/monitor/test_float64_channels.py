"""A float64 model's channels are judged in float64.

A channel whose values differ only below float32's resolution (1 + 1e-9 x) is not flat, and
one whose values are all positive below float32's smallest subnormal (1e-50) is not silent:
the maximum and minimum of a float64 output stay float64.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

from tests.monitor.conftest import TinyMLP, batches, metrics, read_run
from trainrecord.monitor import Monitor

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("bias", "spread"), [(1.0, 1e-9), (1e-50, 1e-52)])
def test_a_float64_channel_is_judged_in_float64(
    run_dir: Path, bias: float, spread: float, device: str
) -> None:
    torch.manual_seed(0)
    model = TinyMLP().double().to(device)
    with torch.no_grad():  # fc1 unit 0: bias + spread * (first input), varying in float64
        model.fc1.weight[0].zero_()
        model.fc1.weight[0, 0] = spread
        model.fc1.bias[0] = bias
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    with Monitor(model, optimizer, run_dir, check_every=1, silent_min_values=32) as monitor:
        for x, y in batches(3, batch=32):
            loss = F.cross_entropy(model(x.double().to(device)), y.to(device))
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    read_run(run_dir)
    # neither flat nor silent (decayed it may be: its incoming weights are tiny)
    assert [row["stuck"]["fc1"][1:3] for row in metrics(run_dir)] == [[0, 0]] * 3
