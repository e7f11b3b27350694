"""Ranks of the DDP agreement tests: real gloo process groups on CPU, tiny models.

Run by ``test_distributed_agreement.py`` with ``torch.multiprocessing.spawn`` as
``scenario(rank, world, init_file, run_dir, out_dir)``. Each rank writes what it saw
(its exception, its state) to ``out_dir/rank<N>.json`` or ``.pt`` for the test to read.
The process group's timeout is 25 s: a collective the ranks do not agree on fails a test
in seconds instead of hanging for gloo's default 30 minutes.
"""

from __future__ import annotations

import datetime
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel

from tests.monitor.ddp_worker import end_rank

GLOO_TIMEOUT = datetime.timedelta(seconds=25)
_ON_EVERY_RANK = ("RanksDisagree", "JoinRefused")  # raised on every rank alike


def _run(rank: int, world: int, init_file: str, out_dir: str, body: Callable[[], Any]) -> None:
    """Run ``body`` in a gloo group; record its result or exception in ``rank<N>.json``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"file://{init_file}",
        rank=rank,
        world_size=world,
        timeout=GLOO_TIMEOUT,
    )
    seen: dict[str, Any] = {}
    try:
        seen["result"] = body()
    except Exception as exc:
        seen["error"] = {"type": type(exc).__name__, "message": str(exc)}
    finally:
        (Path(out_dir) / f"rank{rank}.json").write_text(json.dumps(seen))
        try:
            # no rank tears gloo down while another is in a collective (nor while another
            # still connects: a rank that destroyed its group first made the other abort in
            # gloo's teardown, "terminate called without an active exception"); errors that
            # every rank raises alike meet at the barrier too
            if "error" not in seen or seen["error"]["type"] in _ON_EVERY_RANK:
                dist.barrier()
        finally:
            dist.destroy_process_group()
    end_rank()  # (torch's gloo teardown at exit sometimes aborts a rank: see end_rank)


class Branches(nn.Module):
    """A trunk and two equal-width branches; ``use_a`` picks the one that runs."""

    def __init__(self) -> None:
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(192, 8)
        self.relu = nn.ReLU()
        self.a = nn.Linear(8, 8)
        self.relu_a = nn.ReLU()
        self.b = nn.Linear(8, 8)
        self.relu_b = nn.ReLU()
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor, use_a: bool) -> torch.Tensor:
        h = self.relu(self.fc1(self.flatten(x)))
        h = self.relu_a(self.a(h)) if use_a else self.relu_b(self.b(h))
        return self.head(h)


class Mlp(nn.Module):
    """Flatten, Linear(192, 6), ReLU, Linear(6, 4)."""

    def __init__(self) -> None:
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(192, 6)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(6, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.relu(self.fc1(self.flatten(x))))


def swapped_branches(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """find_unused_parameters=True: rank 0 runs branch ``a`` only (units 0-3 dead: bias
    -100), rank 1 branch ``b`` only; at step 2 rank 1's batch is one sample."""
    from trainrecord.monitor import Monitor

    def body() -> None:
        torch.manual_seed(0)
        model = Branches()
        with torch.no_grad():
            model.a.bias[0:4] = -100.0
        ddp = DistributedDataParallel(model, find_unused_parameters=True)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.0)
        generator = torch.Generator().manual_seed(rank)
        with Monitor(ddp, optimizer, run_dir, check_every=1, silent_min_values=1) as monitor:
            for step in range(3):
                n = 1 if rank == 1 and step == 2 else 16
                x = torch.randn(n, 3, 8, 8, generator=generator)
                loss = F.cross_entropy(ddp(x, rank == 0), torch.zeros(n, dtype=torch.long))
                loss.backward()
                monitor.step(loss)
                optimizer.zero_grad()

    _run(rank, world, init_file, out_dir, body)


def _dead_units_mlp() -> Mlp:
    """fc1 units 0-3 read feature 0, units 4 and 5 read minus feature 1 (dead on inputs
    whose features 0 and 1 are positive)."""
    torch.manual_seed(0)
    model = Mlp()
    with torch.no_grad():
        model.fc1.weight.zero_()
        model.fc1.bias.zero_()
        model.fc1.weight[0:4, 0] = 1.0
        model.fc1.weight[4:6, 1] = -1.0
    return model


def uneven_batches(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """Rank 0's batches hold 16 samples, rank 1's 2: 18 values per channel per check."""
    from trainrecord.monitor import Monitor

    def body() -> None:
        model = _dead_units_mlp()
        ddp = DistributedDataParallel(model)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.0, momentum=0.9)
        torch.manual_seed(100 + rank)  # the ranks' global RNGs differ: only a broadcast agrees
        generator = torch.Generator().manual_seed(rank)
        n = 16 if rank == 0 else 2
        with Monitor(
            ddp,
            optimizer,
            run_dir,
            check_every=1,
            silent_min_values=20,
            repair=True,
            repair_min_values=64,
        ) as monitor:
            for _ in range(5):
                x = torch.zeros(n, 192)
                x[:, 0:2] = 1 + torch.rand(n, 2, generator=generator)
                loss = F.cross_entropy(ddp(x.view(n, 3, 8, 8)), torch.zeros(n, dtype=torch.long))
                loss.backward()
                monitor.step(loss)
                optimizer.step()
                optimizer.zero_grad()
        torch.save(
            {n: p.detach().clone() for n, p in model.named_parameters()},
            Path(out_dir) / f"params{rank}.pt",
        )

    _run(rank, world, init_file, out_dir, body)


def nan_on_rank_one(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """Units 0-1 of fc1 fire on rank 0's inputs only, 2-3 on rank 1's only (each unit fires
    on some rank: none is silent); one of rank 1's samples has a NaN feature."""
    from trainrecord.monitor import Monitor

    def body() -> None:
        torch.manual_seed(0)
        model = Mlp()
        with torch.no_grad():
            model.fc1.weight.zero_()
            model.fc1.bias.zero_()
            model.fc1.weight[0:2, 0] = 1.0
            model.fc1.weight[2:4, 0] = -1.0
            model.fc1.weight[4:6, 1] = 1.0
        ddp = DistributedDataParallel(model)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.0)
        generator = torch.Generator().manual_seed(rank)
        with Monitor(ddp, optimizer, run_dir, check_every=1, silent_min_values=1) as monitor:
            for _ in range(2):
                x = torch.zeros(16, 192)
                sign = 1.0 if rank == 0 else -1.0
                x[:, 0] = sign * (1 + torch.rand(16, generator=generator))
                x[:, 1] = 1 + torch.rand(16, generator=generator)
                if rank == 1:
                    x[3, 0] = float("nan")
                loss = F.cross_entropy(ddp(x.view(16, 3, 8, 8)), torch.zeros(16, dtype=torch.long))
                loss.backward()
                monitor.step(loss)
                optimizer.zero_grad()

    _run(rank, world, init_file, out_dir, body)


def loss_on_rank_zero(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """Rank 0 calls monitor.step(3.0), rank 1 monitor.step() without a loss."""
    from trainrecord.monitor import Monitor

    def body() -> None:
        torch.manual_seed(0)
        ddp = DistributedDataParallel(Mlp())
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.0)
        x = torch.randn(8, 3, 8, 8)
        with Monitor(ddp, optimizer, run_dir, check_every=1) as monitor:
            for _ in range(2):
                F.cross_entropy(ddp(x), torch.zeros(8, dtype=torch.long)).backward()
                monitor.step(3.0) if rank == 0 else monitor.step()
                optimizer.zero_grad()

    _run(rank, world, init_file, out_dir, body)


def other_start_steps(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """check_every=2; rank 0 starts at step 0, rank 1 (resumed wrongly) at step 2."""
    from trainrecord.monitor import Monitor

    def body() -> None:
        torch.manual_seed(0)
        ddp = DistributedDataParallel(Mlp())
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.0)
        x = torch.randn(8, 3, 8, 8)
        start = 2 * rank
        with Monitor(
            ddp, optimizer, f"{run_dir}{rank}", check_every=2, start_step=start
        ) as monitor:
            for _ in range(4):
                loss = F.cross_entropy(ddp(x), torch.zeros(8, dtype=torch.long))
                loss.backward()
                monitor.step(loss)
                optimizer.zero_grad()

    _run(rank, world, init_file, out_dir, body)


def raise_on_rank_one(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """Rank 1 raises after the backward of step 0: rank 0's first check fails in its
    collective."""
    from trainrecord.monitor import Monitor

    def body() -> None:
        torch.manual_seed(0)
        ddp = DistributedDataParallel(Mlp())
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.0)
        x = torch.randn(8, 3, 8, 8)
        with Monitor(ddp, optimizer, run_dir, check_every=1) as monitor:
            loss = F.cross_entropy(ddp(x), torch.zeros(8, dtype=torch.long))
            loss.backward()
            if rank == 1:
                raise ValueError("rank 1 stops")
            monitor.step(loss)

    _run(rank, world, init_file, out_dir, body)


def sub_group(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """Three ranks; ranks 1 and 2 train DDP(process_group=new_group([1, 2])), rank 0 does
    something else."""
    from trainrecord.monitor import Monitor

    def body() -> None:
        group = dist.new_group([1, 2])
        if rank == 0:
            return
        torch.manual_seed(0)
        ddp = DistributedDataParallel(Mlp(), process_group=group)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.0)
        x = torch.randn(8, 3, 8, 8)
        with Monitor(ddp, optimizer, f"{run_dir}{rank}", check_every=1) as monitor:
            for _ in range(2):
                loss = F.cross_entropy(ddp(x), torch.full((8,), rank, dtype=torch.long))
                loss.backward()
                monitor.step(loss)
                optimizer.zero_grad()

    _run(rank, world, init_file, out_dir, body)


def _uneven_join(rank: int, run_dir: str, throw: bool) -> None:
    """Rank 0 has 4 batches, rank 1 has 2, inside ``Join([ddp])``."""
    from torch.distributed.algorithms.join import Join

    from trainrecord.monitor import Monitor

    torch.manual_seed(0)
    ddp = DistributedDataParallel(Mlp())
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(8, 3, 8, 8)
    with (
        Join([ddp], throw_on_early_termination=throw),
        Monitor(ddp, optimizer, run_dir, check_every=2) as monitor,
    ):
        for _ in range(4 if rank == 0 else 2):
            loss = F.cross_entropy(ddp(x), torch.zeros(8, dtype=torch.long))
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()


def join_uneven(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """Uneven inputs under ``Join([ddp])``: refused at the first check on every rank."""
    _run(rank, world, init_file, out_dir, lambda: _uneven_join(rank, run_dir, throw=False))


def join_throwing(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """Uneven inputs under ``Join([ddp], throw_on_early_termination=True)``."""
    _run(rank, world, init_file, out_dir, lambda: _uneven_join(rank, run_dir, throw=True))


def key_on_rank_zero(
    rank: int, world: int, init_file: str, run_dir: str, out_dir: str
) -> list[str]:
    """The signing key file exists on rank 0's node only (rank 1 is given a path that does
    not exist there); both ranks call step() twice at step 0. Returns this rank's
    warnings from the ``trainrecord.monitor`` logger and its ``MonitorMisuseWarning``s."""
    import logging
    import warnings

    from trainrecord.monitor import Monitor, MonitorMisuseWarning

    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    logging.getLogger("trainrecord.monitor").addHandler(Keep(logging.WARNING))
    shown = warnings.showwarning

    def keep(message: Warning | str, category: type[Warning], *rest: Any, **kw: Any) -> None:
        if issubclass(category, MonitorMisuseWarning):
            said.append(str(message))
        else:
            shown(message, category, *rest, **kw)

    warnings.showwarning = keep

    def body() -> list[str]:
        torch.manual_seed(0)
        ddp = DistributedDataParallel(Mlp())
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
        key = Path(out_dir) / "signer" if rank == 0 else Path(out_dir) / "absent" / "signer"
        x = torch.randn(8, 3, 8, 8)
        with Monitor(ddp, optimizer, run_dir, check_every=2, signing_key=key) as monitor:
            for step in range(4):
                loss = F.cross_entropy(ddp(x), torch.zeros(8, dtype=torch.long))
                loss.backward()
                monitor.step(loss)
                if step == 0:
                    monitor.step(loss)  # step() twice: said once, by the writing rank
                optimizer.step()
                optimizer.zero_grad()
        return said

    _run(rank, world, init_file, out_dir, body)
    return said


def no_producers(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """A GRU alone: no Conv or Linear producer, so a check reduces the step and the loss."""
    from trainrecord.monitor import Monitor

    def body() -> None:
        torch.manual_seed(0)
        ddp = DistributedDataParallel(nn.GRU(4, 3, batch_first=True))
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
        with Monitor(ddp, optimizer, run_dir, check_every=1) as monitor:
            for _ in range(2):
                out, _ = ddp(torch.full((2, 5, 4), 1.0 + rank))
                loss = out.pow(2).mean()
                loss.backward()
                monitor.step(loss)
                optimizer.zero_grad()

    _run(rank, world, init_file, out_dir, body)
