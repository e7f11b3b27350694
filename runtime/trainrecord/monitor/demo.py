"""The demo: train a small CNN on generated data, break two layers, watch the monitor.

Everything is generated in-process (no downloads): ten classes of 3x16x16 images, each a
smooth random template with noise and a random shift. The model is three
Conv-BatchNorm-ReLU blocks and a linear classifier. Part-way through training, two conv
blocks are zeroed together with their optimizer state, the way a bad checkpoint restore
would leave them; the monitor then raises gradient alarms, reports the stuck channels,
proves them dead with certificates and, with ``repair=True``, repairs them (function
preserving) so training recovers.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from trainrecord.monitor.monitor import Monitor


class DemoCNN(nn.Module):
    """Three Conv-BatchNorm-ReLU blocks, global average pooling and a linear classifier."""

    def __init__(self, width: int = 16, classes: int = 10, channels: int = 3) -> None:
        super().__init__()

        def block(cin: int, cout: int, pool: bool) -> nn.Sequential:
            layers: list[nn.Module] = [
                nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                nn.BatchNorm2d(cout),
                nn.ReLU(inplace=True),
            ]
            if pool:
                layers.append(nn.MaxPool2d(2))
            return nn.Sequential(*layers)

        self.conv1 = block(channels, width, True)
        self.conv2 = block(width, 2 * width, True)
        self.conv3 = block(2 * width, 4 * width, False)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.classifier = nn.Linear(4 * width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores for a batch of images."""
        x = self.conv3(self.conv2(self.conv1(x)))
        return self.classifier(self.flatten(self.pool(x)))


def make_data(
    n: int, size: int = 16, classes: int = 10, seed: int = 0, noise: float = 2.0, task: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` labelled images of ``classes`` smooth templates (fixed by ``task``) with noise
    and random shifts drawn from ``seed``."""
    templates = torch.randn(
        classes,
        3,
        max(size // 4, 2),
        max(size // 4, 2),
        generator=torch.Generator().manual_seed(1000 + task),
    )
    templates = F.interpolate(templates, size=(size, size), mode="bilinear", align_corners=False)
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, classes, (n,), generator=g)
    images = templates[labels] + noise * torch.randn(n, 3, size, size, generator=g)
    shifts = torch.randint(-2, 3, (n, 2), generator=g)
    for i in range(n):
        images[i] = torch.roll(images[i], (int(shifts[i, 0]), int(shifts[i, 1])), dims=(1, 2))
    return images, labels


def zero_blocks(model: DemoCNN, optimizer: torch.optim.Optimizer, names: tuple[str, ...]) -> None:
    """Zero the conv and BatchNorm parameters of the named blocks and their optimizer state."""
    with torch.no_grad():
        for name in names:
            for p in getattr(model, name).parameters():
                p.zero_()
                for value in optimizer.state.get(p, {}).values():
                    if isinstance(value, torch.Tensor) and value.shape == p.shape:
                        value.zero_()


@dataclass
class DemoResult:
    """What a demo run did."""

    run_dir: Path
    steps: int
    seconds: float
    losses: list[tuple[int, float]] = field(default_factory=list)
    accuracy_before: float = 0.0
    accuracy_after: float = 0.0


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Top-1 accuracy in eval mode."""
    was = model.training
    model.eval()
    with torch.no_grad():
        correct = (model(x).argmax(dim=1) == y).float().mean().item()
    model.train(was)
    return float(correct)


def run_demo(
    out: str | Path,
    *,
    repair: bool = False,
    steps: int = 400,
    break_at: int = 200,
    check_every: int = 10,
    batch: int = 64,
    width: int = 16,
    seed: int = 0,
    size: int = 16,
    samples: int = 4096,
    log: bool = False,
    callback: Any = None,
) -> DemoResult:
    """Train, break two blocks at ``break_at``, keep training; returns what happened."""
    torch.manual_seed(seed)
    x, y = make_data(samples, size=size, seed=seed)
    x_test, y_test = make_data(1024, size=size, seed=seed + 1)
    model = DemoCNN(width=width)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    config = {
        "steps": steps,
        "break_at": break_at,
        "check_every": check_every,
        "batch": batch,
        "width": width,
        "seed": seed,
        "lr": 0.05,
        "momentum": 0.9,
        "repair": repair,
        "broken": ["conv2", "conv3"] if break_at < steps else [],
    }
    result = DemoResult(run_dir=Path(out), steps=steps, seconds=0.0)
    start = time.perf_counter()
    g = torch.Generator().manual_seed(seed + 2)
    with Monitor(
        model,
        optimizer,
        out,
        name="demo" + ("-repair" if repair else ""),
        config=config,
        check_every=check_every,
        repair=repair,
        repair_seed=seed,
        log=log,
        callback=callback,
    ) as monitor:
        for step in range(steps):
            if step == break_at:
                result.accuracy_before = accuracy(model, x_test, y_test)
                zero_blocks(model, optimizer, ("conv2", "conv3"))
            index = torch.randint(0, samples, (batch,), generator=g)
            loss = F.cross_entropy(model(x[index]), y[index])
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
            if step % check_every == 0:
                result.losses.append((step, float(loss.item())))
    result.seconds = time.perf_counter() - start
    result.accuracy_after = accuracy(model, x_test, y_test)
    if not math.isfinite(result.accuracy_after):
        result.accuracy_after = 0.0
    return result
