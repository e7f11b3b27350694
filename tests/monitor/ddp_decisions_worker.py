"""Ranks of ``test_distributed_decisions.py``: real gloo groups on CPU, tiny models.

Run with ``torch.multiprocessing.spawn`` as ``scenario(rank, world, init_file, run_dir,
out_dir)`` through ``ddp_agreement_worker._run`` (25 s gloo timeout; each rank writes what
it saw to ``out_dir/rank<N>.json``, and its parameters to ``params<N>.pt`` where a test
compares them).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel

from tests.monitor.ddp_agreement_worker import Branches, Mlp, _run


def _save(model: torch.nn.Module, out_dir: str, rank: int) -> None:
    torch.save(
        {n: p.detach().clone() for n, p in model.named_parameters()},
        Path(out_dir) / f"params{rank}.pt",
    )


def routed_repair(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """find_unused_parameters=True, data-dependent routing: rank 0 runs branch ``a`` (units
    0-3 dead: bias -100), rank 1 branch ``b``, from the first check on; repair=True, lr=0."""
    from trainrecord.monitor import Monitor

    def body() -> None:
        torch.manual_seed(0)
        model = Branches()
        with torch.no_grad():
            model.a.bias[0:4] = -100.0
        ddp = DistributedDataParallel(model, find_unused_parameters=True)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.0)
        generator = torch.Generator().manual_seed(rank)
        with Monitor(
            ddp,
            optimizer,
            run_dir,
            check_every=1,
            silent_min_values=1,
            repair=True,
            repair_patience=1,
            repair_min_values=1,
        ) as monitor:
            for _ in range(4):
                x = torch.randn(16, 3, 8, 8, generator=generator)
                loss = F.cross_entropy(ddp(x, rank == 0), torch.zeros(16, dtype=torch.long))
                loss.backward()
                monitor.step(loss)
                optimizer.zero_grad()
        _save(model, out_dir, rank)

    _run(rank, world, init_file, out_dir, body)


def float64_model(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """A float64 Mlp whose fc1 units all output 1e-50 (alive and flat, not silent)."""
    from trainrecord.monitor import Monitor

    def body() -> None:
        torch.manual_seed(0)
        model = Mlp().double()
        with torch.no_grad():
            model.fc1.weight.zero_()
            model.fc1.bias.fill_(1e-50)
        ddp = DistributedDataParallel(model)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.0)
        with Monitor(ddp, optimizer, run_dir, check_every=1, silent_min_values=1) as monitor:
            for _ in range(2):
                x = torch.randn(16, 3, 8, 8, dtype=torch.float64)
                loss = F.cross_entropy(ddp(x), torch.zeros(16, dtype=torch.long))
                loss.backward()
                monitor.step(loss)
                optimizer.zero_grad()

    _run(rank, world, init_file, out_dir, body)
