"""Bench: how the monitor's checks grow with the number of layers, side by side in one run.

MLPs of ``N`` blocks of (Linear 8 -> 8, ReLU), ``N`` from ``--depths``: the time of the
first check's ``monitor.step()`` (it learns the structure from the dataflow: pairs, ReLUs,
each producer's consumer) and of a later check, and the ratio of each to the same for
the smallest ``N``, against the ratio of the depths. Both should grow about linearly
with the depth; the first check once grew with its cube (18 s at N=1000).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

from trainrecord import Monitor


def check_times(depth: int, root: Path) -> tuple[float, float]:
    """The first check's and a later check's ``monitor.step()`` time, in seconds."""
    torch.manual_seed(0)
    blocks = [m for _ in range(depth) for m in (nn.Linear(8, 8), nn.ReLU())]
    model = nn.Sequential(*blocks, nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(16, 8)
    times = []
    with Monitor(model, optimizer, root / f"depth{depth}", check_every=1, log=False) as monitor:
        for _ in range(3):
            loss = model(x).pow(2).mean()
            loss.backward()
            start = time.perf_counter()
            monitor.step(loss)
            times.append(time.perf_counter() - start)
            optimizer.step()
            optimizer.zero_grad()
    return times[0], min(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", type=int, nargs="+", default=[100, 300, 1000])
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        results = {d: check_times(d, Path(tmp)) for d in sorted(args.depths)}
    base = min(results)
    first0, later0 = results[base]
    print(
        f"{'layers':>7} {'first check':>12} {'later check':>12} {'depth x':>8} "
        f"{'first x':>8} {'later x':>8}"
    )
    for depth, (first, later) in results.items():
        print(
            f"{depth:>7} {first * 1e3:>10.1f}ms {later * 1e3:>10.1f}ms {depth / base:>8.1f} "
            f"{first / first0:>8.1f} {later / later0:>8.1f}"
        )


if __name__ == "__main__":
    main()
