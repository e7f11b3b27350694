"""One rank of the DDP test: a real gloo process group on CPU, training with the monitor.

Run by ``test_distributed.py`` with ``torch.multiprocessing.spawn``. Each rank trains the
tiny CNN wrapped in DistributedDataParallel on its own batches, zeroes block 2 part-way
(identically on both ranks) and lets the monitor repair it with the *global* RNG, which
is seeded differently on each rank so only the broadcast from rank 0 can keep them equal.
Each rank saves its parameters and optimizer state for the test to compare.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

import torch
import torch.distributed as dist
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel


def end_rank() -> NoReturn:
    """End a worker process at once, once its results are written and its group destroyed.

    torch's gloo teardown at interpreter exit sometimes aborts a rank ("terminate called
    without an active exception", exit code -6) after everything it did succeeded: with
    plain DDP and no trainrecord at all, 2 of 15 two-rank runs here (torch 2.13, CPU); 0
    of 20 when the workers leave with ``os._exit(0)`` after ``destroy_process_group``."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def main(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """Train on one rank; save this rank's state to ``out_dir/rank<N>.pt``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.monitor.conftest import TinyCNN, batches
    from tests.monitor.test_events import zero_block2
    from trainrecord.monitor import Monitor

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        torch.manual_seed(0)
        model = TinyCNN()
        ddp = DistributedDataParallel(model)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
        torch.manual_seed(100 + rank)  # the ranks' global RNGs now differ
        with Monitor(ddp, optimizer, run_dir, check_every=2, repair=True, warmup=3) as monitor:
            for step, (x, y) in enumerate(batches(16, seed=rank)):
                if step == 8:
                    zero_block2(model, optimizer)
                loss = F.cross_entropy(ddp(x), y)
                loss.backward()
                monitor.step(loss)
                optimizer.step()
                optimizer.zero_grad()
        state = {
            "params": {n: p.detach().clone() for n, p in model.named_parameters()},
            "buffers": {n: b.detach().clone() for n, b in model.named_buffers()},
            "momentum": {
                n: optimizer.state[p]["momentum_buffer"].clone()
                for n, p in model.named_parameters()
            },
        }
        torch.save(state, Path(out_dir) / f"rank{rank}.pt")
        dist.barrier()  # no rank tears gloo down while the other is still in a collective
    finally:
        dist.destroy_process_group()
    end_rank()


def opposite_inputs(rank: int, world: int, init_file: str, run_dir: str) -> None:
    """Each rank feeds a constant input, +1 on rank 0 and -1 on rank 1: every hidden unit
    of a bias-free layer is silent on one rank and active on the other."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.monitor.conftest import TinyMLP
    from trainrecord.monitor import Monitor

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        torch.manual_seed(0)
        model = TinyMLP()
        with torch.no_grad():
            model.fc1.bias.zero_()
        ddp = DistributedDataParallel(model)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.0)
        x = torch.full((8, 3, 8, 8), 1.0 if rank == 0 else -1.0)
        y = torch.zeros(8, dtype=torch.long)
        with Monitor(ddp, optimizer, run_dir, check_every=1, silent_min_values=1) as monitor:
            for _ in range(3):
                loss = F.cross_entropy(ddp(x), y)
                loss.backward()
                monitor.step(loss)
                optimizer.step()
                optimizer.zero_grad()
        dist.barrier()  # no rank tears gloo down while the other is still in a collective
    finally:
        dist.destroy_process_group()
    end_rank()


def number_loss(rank: int, world: int, init_file: str, run_dir: str) -> None:
    """Each rank passes its loss as a number (loss.item()): 1.0 on rank 0, 3.0 on rank 1."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.monitor.conftest import TinyMLP
    from trainrecord.monitor import Monitor

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        torch.manual_seed(0)
        ddp = DistributedDataParallel(TinyMLP())
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.0)
        x, y = torch.randn(8, 3, 8, 8), torch.zeros(8, dtype=torch.long)
        with Monitor(ddp, optimizer, run_dir, check_every=1) as monitor:
            for _ in range(2):
                F.cross_entropy(ddp(x), y).backward()
                monitor.step(1.0 + 2.0 * rank)
                optimizer.zero_grad()
        dist.barrier()
    finally:
        dist.destroy_process_group()
    end_rank()
