"""A dead head starves every layer below it: ``vanishing`` on those layers, from real training.

A fault-detection probe scaled a trained MLP's head by 1e-4: every layer below it lost 3 to
4 decades of gradient at once while the head's own gradient (the output error times its
inputs) stayed, or rose. No alarm was raised: the median layer fell as far as each layer
did, so the fall read as the whole network's (convergence). A network whose head kept its
gradient did not fall as a whole; the layers below it are vanishing.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from tests.monitor.conftest import read_run
from trainrecord.monitor import Monitor


def mlp(hidden: int) -> nn.Sequential:
    """Linear layers of width 32 on 10 inputs, GELU and SiLU in turn, then a 3-class head."""
    layers: list[nn.Module] = [nn.Linear(10, 32)]
    for i in range(hidden - 1):
        layers += [nn.GELU() if i % 2 == 0 else nn.SiLU(), nn.Linear(32, 32)]
    layers += [nn.GELU() if (hidden - 1) % 2 == 0 else nn.SiLU(), nn.Linear(32, 3)]
    return nn.Sequential(*layers)


def kill_head_at_60(model: nn.Sequential, run_dir: Path) -> list[tuple[object, ...]]:
    """150 steps of SGD (lr 0.05, momentum 0.9) on 3 classes of 10-dimensional inputs that a
    linear map labels, checks every 5 steps; at step 60 the head's weight is scaled by 1e-4
    and the learning rate drops to 1e-3 without momentum. The alarm events written."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    w = torch.randn(10, 3)
    g = torch.Generator().manual_seed(0)
    head = model[-1]
    assert isinstance(head, nn.Linear)
    with Monitor(model, optimizer, run_dir, check_every=5) as monitor:
        for step in range(150):
            if step == 60:
                with torch.no_grad():
                    head.weight.mul_(1e-4)
                for group in optimizer.param_groups:
                    group["lr"], group["momentum"] = 1e-3, 0.0
                optimizer.state.clear()
            x = torch.randn(32, 10, generator=g)
            loss = F.cross_entropy(model(x), (x @ w).argmax(1))
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    lines = read_run(run_dir)
    return [
        (e["event"], e["step"], e["layer"], e["diagnosis"])
        for e in lines
        if e["event"] in ("alarm", "alarm_cleared")
    ]


def test_a_dead_head_after_training_is_vanishing_below_it(run_dir: Path) -> None:
    # The probe (c05c): trained to loss 0.13, then the head is killed; layers 0 and 2 fall
    # from about 0.5 to 2.5e-4 and the loss jumps to 1.1. The loss now (the median of the
    # last 3 checks) still held two values from before, so the fall read as the network's,
    # and that verdict moved the baseline: the next check was back in the band. The head's
    # gradient rose (0.2 -> 2), so the network did not fall as a whole.
    torch.manual_seed(0)
    found = kill_head_at_60(mlp(2), run_dir)
    alarms = [f for f in found if f[0] == "alarm"]
    assert alarms == [("alarm", 65, "0", "vanishing"), ("alarm", 65, "2", "vanishing")]
    # lr 1e-3 lets the layers below learn back up: the alarms clear (no alarm on the head)
    assert {f[2] for f in found} == {"0", "2"}


def test_a_dead_head_in_a_network_that_never_learned_is_vanishing_below_it(
    run_dir: Path,
) -> None:
    # The probe (c05e): six layers, the loss at chance (ln 3) all along; layers 0-8 fall
    # from about 1e-3 to 1e-7 and stay. The loss never climbed (it never fell), so every
    # check read as the whole network converging; the head (1e-1) never fell at all.
    torch.manual_seed(0)
    found = kill_head_at_60(mlp(5), run_dir)
    assert found == [("alarm", 65, layer, "vanishing") for layer in ("0", "2", "4", "6", "8")]
