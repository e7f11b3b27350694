"""A model that is one module without submodules (a bare ``nn.Linear``: logistic
regression; one ``nn.Conv2d``; a module holding only an ``nn.Parameter``) is one layer named
``model``, of its class's kind, and a producer when it is a Conv or Linear.

Before (seed audit, finding 1): its parameters were split into layers ``weight`` and
``bias`` of kind ``Parameter`` (names ``named_modules()`` never yields; one module judged
as two layers), the structure probe never saw a forward pass (it hooks submodules only),
so the record had no structure and no manifest line, and a Conv2d's channels were never
measured (``stuck: {}``). Real training of each model; every line checked against its
schema and the record verified (``read_run``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from tests.monitor.conftest import events, metrics, read_run
from trainrecord.monitor import Monitor


class LogisticRegression(nn.Module):
    """Weights held as a bare parameter: a module without submodules."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(4, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.w


def _train(
    model: nn.Module,
    run: Path,
    data: list[torch.Tensor],
    steps: int = 6,
    before: Callable[[int], None] | None = None,
) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with Monitor(model, optimizer, run, check_every=2, log=False) as monitor:
        for i in range(steps):
            if before is not None:
                before(i)
            out = model(data[i % len(data)])
            loss = (
                out.flatten(1).pow(2).mean()
                if out.dim() > 2
                else F.cross_entropy(out, torch.arange(out.shape[0]) % 2)
            )
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()


def test_a_bare_linear_is_one_producer_layer_named_model(tmp_path: Path) -> None:
    torch.manual_seed(0)
    data = [torch.randn(8, 4) for _ in range(3)]
    _train(nn.Linear(4, 2), tmp_path / "run", data)
    lines = read_run(tmp_path / "run")
    (start,) = events(lines, "run_start")
    assert start["layers"] == ["model"] and start["model"] == "Linear"
    assert len(events(lines, "structure")) == 1
    (manifest,) = events(lines, "manifest")
    assert manifest["layers"] == ["model"]
    assert [p["layer"] for p in manifest["producers"]] == ["model"]
    rows = metrics(tmp_path / "run")
    assert len(rows) == 3
    assert all(set(r["grad"]) == {"model"} and set(r["stuck"]) == {"model"} for r in rows)


def test_a_bare_conv_has_its_flat_channels_found(tmp_path: Path) -> None:
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3)

    def zero(step: int) -> None:
        if step == 2:  # weights zeroed in the run (zeroed before, they start from zero)
            with torch.no_grad():
                conv.weight[1:3] = 0.0  # channels 1 and 2: their bias, everywhere: constant

    data = [torch.randn(8, 3, 6, 6) for _ in range(3)]
    _train(conv, tmp_path / "run", data, before=zero)
    lines = read_run(tmp_path / "run")
    (start,) = events(lines, "run_start")
    assert start["layers"] == ["model"] and start["model"] == "Conv2d"
    channels = events(lines, "channels")
    assert channels and channels[0]["layer"] == "model" and channels[0]["flat"] == [1, 2]
    # the check of step 2: the zeroed weights learn afterwards, and the channels return
    assert metrics(tmp_path / "run")[1]["stuck"] == {"model": [0, 2, 0, 0]}


def test_a_module_holding_only_a_parameter_is_one_layer_of_its_class(tmp_path: Path) -> None:
    torch.manual_seed(0)
    data = [torch.randn(8, 4) for _ in range(3)]
    model = LogisticRegression()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with Monitor(model, optimizer, tmp_path / "run", check_every=1, log=False) as monitor:
        for i in range(4):
            loss = F.cross_entropy(model(data[i % 3]), torch.arange(8) % 2)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    lines = read_run(tmp_path / "run")
    (start,) = events(lines, "run_start")
    assert start["layers"] == ["model"] and start["model"] == "LogisticRegression"
    assert events(lines, "manifest")[0]["layers"] == ["model"]
    assert all(set(r["grad"]) == {"model"} for r in metrics(tmp_path / "run"))
