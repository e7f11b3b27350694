"""Ranks of ``test_distributed_decisions.py``: real gloo groups on CPU, tiny models.

Run with ``torch.multiprocessing.spawn`` as ``scenario(rank, world, init_file, run_dir,
out_dir)`` through ``ddp_agreement_worker._run`` (25 s gloo timeout; each rank writes what
it saw to ``out_dir/rank<N>.json``, and its parameters to ``params<N>.pt`` where a test
compares them).
"""

from __future__ import annotations

import logging
import resource
import signal
from pathlib import Path
from typing import Any

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
        # frozen at zero: nothing moves it (zero weights that get a gradient start from zero)
        model.fc1.weight.requires_grad_(False)
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


def full_disk_on_writer(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """check_every=2, 8 steps of fc1 units 4-5 dead (``_dead_units_mlp``; 16 values per
    channel per check, silent_min_values=20: a channels event at the check of step 2,
    after its collectives). After the first check rank 0's files may not grow any more
    (RLIMIT_FSIZE at the diary's size, as a full disk: EFBIG), so that event cannot be
    written. Returns the steps trained, the checks made and what rank 0 logged."""
    from tests.monitor.ddp_agreement_worker import _dead_units_mlp
    from trainrecord.monitor import Monitor

    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    logging.getLogger("trainrecord.monitor").addHandler(Keep(logging.WARNING))

    def body() -> dict[str, Any]:
        model = _dead_units_mlp()
        ddp = DistributedDataParallel(model)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
        x = torch.zeros(8, 192)
        x[:, 0:2] = 1 + torch.rand(8, 2, generator=torch.Generator().manual_seed(rank))
        hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
        done = 0
        with Monitor(ddp, optimizer, run_dir, check_every=2, silent_min_values=20) as monitor:
            for step in range(8):
                loss = F.cross_entropy(ddp(x.view(8, 3, 8, 8)), torch.zeros(8, dtype=torch.long))
                loss.backward()
                monitor.step(loss)
                optimizer.step()
                optimizer.zero_grad()
                done += 1
                if step == 0 and rank == 0:  # the disk is full from now on
                    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                    size = (Path(run_dir) / "diary.jsonl").stat().st_size
                    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
        _save(model, out_dir, rank)
        return {"done": done, "said": said, "checks": monitor.checks}

    _run(rank, world, init_file, out_dir, body)


def offset_start_steps(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """check_every=2; rank 0 starts at step 0, rank 1 (resumed wrongly) at step 1: their
    checks never meet."""
    from trainrecord.monitor import Monitor

    def body() -> None:
        torch.manual_seed(0)
        ddp = DistributedDataParallel(Mlp())
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
        x = torch.randn(8, 3, 8, 8)
        with Monitor(ddp, optimizer, f"{run_dir}{rank}", check_every=2, start_step=rank) as m:
            for _ in range(4):
                F.cross_entropy(ddp(x), torch.zeros(8, dtype=torch.long)).backward()
                m.step()
                optimizer.step()
                optimizer.zero_grad()

    _run(rank, world, init_file, out_dir, body)


def other_check_every(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """Rank 0 checks every 2 steps, rank 1 every 3."""
    from trainrecord.monitor import Monitor

    def body() -> None:
        torch.manual_seed(0)
        ddp = DistributedDataParallel(Mlp())
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
        x = torch.randn(8, 3, 8, 8)
        with Monitor(ddp, optimizer, f"{run_dir}{rank}", check_every=2 + rank) as m:
            for _ in range(4):
                F.cross_entropy(ddp(x), torch.zeros(8, dtype=torch.long)).backward()
                m.step()
                optimizer.step()
                optimizer.zero_grad()

    _run(rank, world, init_file, out_dir, body)
