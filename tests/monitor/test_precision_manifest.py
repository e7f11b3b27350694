"""The manifest's ``precision`` says what is true: the parameters' dtypes, the autocast
dtype when a check's forward pass ran under autocast, and the GradScaler when one is
enabled; and a new manifest is written when autocast is switched on or off later.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch.nn import functional as F

from tests.monitor.conftest import TinyMLP, batches, events, read_run
from trainrecord.monitor import Monitor

SCALER = "; GradScaler: gradient norms divided by the scale"
BF16 = "float32 parameters, bfloat16 activations (autocast) in this check's forward pass"


def manifests(
    run: Path, scaler: bool = False, autocast_from: int | None = None, steps: int = 4
) -> list[tuple[int, str]]:
    """(step, precision) of every manifest of a TinyMLP run, check_every=3."""
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    grad_scaler = torch.amp.GradScaler("cpu") if scaler else None
    with Monitor(model, optimizer, run, check_every=3, scaler=grad_scaler) as monitor:
        for step, (x, y) in enumerate(batches(steps, batch=16)):
            on = autocast_from is not None and step >= autocast_from
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=on):
                loss = F.cross_entropy(model(x).float(), y)
            (loss if grad_scaler is None else grad_scaler.scale(loss)).backward()
            monitor.step(loss)
            if grad_scaler is None:
                optimizer.step()
            else:
                grad_scaler.step(optimizer)
                grad_scaler.update()
            optimizer.zero_grad()
    return [(m["step"], m["precision"]) for m in events(read_run(run), "manifest")]


def test_a_scaler_is_added_to_the_dtypes_not_put_in_their_place(tmp_path: Path) -> None:
    # was 'mixed (GradScaler: ...)' for both: a pure float32 run called mixed, bf16 unnamed
    assert manifests(tmp_path / "fp32", scaler=True) == [(0, "float32" + SCALER)]
    assert manifests(tmp_path / "bf16", scaler=True, autocast_from=0) == [(0, BF16 + SCALER)]


def test_autocast_switched_on_later_writes_a_manifest(tmp_path: Path) -> None:
    # was [(0, 'float32')] only: checks 6 and 9 ran bfloat16 activations unrecorded
    assert manifests(tmp_path / "later", autocast_from=4, steps=10) == [
        (0, "float32"),
        (6, BF16),
    ]
