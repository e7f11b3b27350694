"""Ranks of ``test_distributed_changes.py``: the Monitor's session-11 changes under DDP
(an optimizer replaced mid-run, the one-repairing-Monitor rule, a forward pass that raised
at the first check, a head replaced mid-run). Real gloo groups on CPU, tiny models; run
through ``ddp_agreement_worker._run`` (25 s gloo timeout; each rank writes what it saw to
``out_dir/rank<N>.json``, its parameters and optimizer state to ``params<N>.pt`` /
``state<N>.pt`` where a test compares them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel

from tests.monitor.ddp_agreement_worker import Mlp, _dead_units_mlp, _run


def _save(model: nn.Module, optimizer: torch.optim.Optimizer, out_dir: str, rank: int) -> None:
    torch.save(
        {n: p.detach().clone() for n, p in model.named_parameters()},
        Path(out_dir) / f"params{rank}.pt",
    )
    names = {id(p): n for n, p in model.named_parameters()}
    state = {
        f"{names[id(p)]}.{key}": value.detach().clone()
        for p, entry in optimizer.state.items()
        for key, value in entry.items()
        if isinstance(value, torch.Tensor)
    }
    torch.save(state, Path(out_dir) / f"state{rank}.pt")


REPAIR_ON_THIRD_CHECK: dict[str, Any] = {
    "check_every": 2,
    "silent_min_values": 40,  # 16 values a check over both ranks: silent at the third
    "repair": True,
    "repair_patience": 1,
    "repair_min_values": 1,
}


def _batch(rank: int) -> torch.Tensor:
    """Eight samples of 192 features, only the first two non-zero (seeded by rank)."""
    x = torch.zeros(8, 192)
    x[:, 0:2] = 1 + torch.rand(8, 2, generator=torch.Generator().manual_seed(rank))
    return x


def _train_step(ddp: nn.Module, x: torch.Tensor, monitor: Any, optimizer: Any) -> None:
    """One step on ``x`` (class 0 for every sample) with ``monitor.step`` after backward."""
    loss = F.cross_entropy(ddp(x.view(8, 3, 8, 8)), torch.zeros(8, dtype=torch.long))
    loss.backward()
    monitor.step(loss)
    optimizer.step()
    optimizer.zero_grad()


def replaced_optimizer(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """fc1 units 4-5 dead (``_dead_units_mlp``), Adam; after the optimizer step of step 1
    every rank replaces it with a new Adam alike. check_every=2, repair=True: silence needs
    40 values (16 a check over both ranks: the third check), so the repair comes after the
    replacement. Returns the optimizer the Monitor follows after each step."""
    from trainrecord.monitor import Monitor

    def body() -> dict[str, Any]:
        model = _dead_units_mlp()
        ddp = DistributedDataParallel(model)
        optimizer: torch.optim.Optimizer = torch.optim.Adam(ddp.parameters(), lr=0.01)
        first = optimizer
        x = _batch(rank)
        followed = []
        with Monitor(ddp, optimizer, run_dir, **REPAIR_ON_THIRD_CHECK) as monitor:
            for step in range(10):
                _train_step(ddp, x, monitor, optimizer)
                if step == 1:
                    optimizer = torch.optim.Adam(ddp.parameters(), lr=0.02)
                assert monitor.optimizer in (first, optimizer)
                followed.append("old" if monitor.optimizer is first else "new")
        _save(model, optimizer, out_dir, rank)
        return {"followed": followed}

    _run(rank, world, init_file, out_dir, body)


def stale_on_rank_zero(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """Every rank opens a repairing Monitor (``<run_dir>-first``); rank 1 closes it, rank 0
    leaves it open (held, as a traceback holds it). Then every rank opens another
    repairing Monitor on the model: rank 0's is refused by the one-repairing-Monitor rule.
    Each rank catches what it raised and carries on (to the group's barrier); returns that
    error and the seconds the second creation took."""
    import time

    from trainrecord.monitor import Monitor

    held: list[Any] = []

    def body() -> dict[str, Any]:
        torch.manual_seed(0)
        ddp = DistributedDataParallel(Mlp())
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
        first = Monitor(ddp, optimizer, f"{run_dir}-first", check_every=2, repair=True)
        held.append(first)
        if rank == 1:
            first.close()
        began = time.monotonic()
        seen: dict[str, Any] = {}
        try:
            with Monitor(ddp, optimizer, run_dir, check_every=2, repair=True):
                pass
        except Exception as exc:
            seen = {"type": type(exc).__name__, "message": str(exc)}
        seen["seconds"] = time.monotonic() - began
        return seen

    _run(rank, world, init_file, out_dir, body)


class _Flaky(nn.Module):
    """``_dead_units_mlp``'s layers (fc1 units 4-5 dead); ``fail`` raises after the ReLU,
    as an out-of-memory error part-way through a forward pass would."""

    def __init__(self) -> None:
        super().__init__()
        mlp = _dead_units_mlp()
        self.flatten, self.fc1, self.relu, self.fc2 = mlp.flatten, mlp.fc1, mlp.relu, mlp.fc2

    def forward(self, x: torch.Tensor, fail: bool = False) -> torch.Tensor:
        hidden = self.relu(self.fc1(self.flatten(x)))
        if fail:
            raise RuntimeError("out of memory (as the test says)")
        return self.fc2(hidden)


def _decisions(monitor: Any) -> dict[str, Any]:
    """What a rank decided from its structure: the producers, their ReLUs, BatchNorms and
    consumers, and those not measured."""
    return {
        "producers": {
            name: [info.relu, info.batchnorm, info.relu_sole, info.single_consumer, info.calls]
            for name, info in sorted(monitor.producer_info.items())
        },
        "unmeasured": monitor._unmeasured,
        "layers": sorted(monitor.layers),
    }


def _raised_at_first_check(rank: int, init_file: str, run_dir: str, out_dir: str, who: int) -> None:
    from trainrecord.monitor import Monitor

    def body() -> dict[str, Any]:
        model = _Flaky()
        ddp = DistributedDataParallel(model)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.0)
        x = _batch(rank)
        raised = 0
        decisions = []
        with Monitor(
            ddp,
            optimizer,
            run_dir,
            check_every=1,
            silent_min_values=16,
            repair=True,
            repair_patience=2,
            repair_min_values=1,
        ) as monitor:
            for step in range(4):
                while True:
                    try:
                        out = ddp(x.view(8, 3, 8, 8), rank == who and step == 0 and not raised)
                        break
                    except RuntimeError:
                        raised += 1  # the loop catches it and runs the batch again
                loss = F.cross_entropy(out, torch.zeros(8, dtype=torch.long))
                loss.backward()
                monitor.step(loss)
                optimizer.step()
                optimizer.zero_grad()
                decisions.append(_decisions(monitor))
        _save(model, optimizer, out_dir, rank)
        return {"raised": raised, "decisions": decisions}

    _run(rank, 2, init_file, out_dir, body)


def raised_on_writer(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """The forward pass of step 0 (the first check) raises on rank 0 only, after fc1's
    ReLU; the loop catches it and runs the batch again. fc1 units 4-5 dead: repaired."""
    _raised_at_first_check(rank, init_file, run_dir, out_dir, 0)


def raised_on_other(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """As ``raised_on_writer``, on rank 1 only."""
    _raised_at_first_check(rank, init_file, run_dir, out_dir, 1)


def replaced_head(rank: int, world: int, init_file: str, run_dir: str, out_dir: str) -> None:
    """fc1 units 4-5 dead (``_dead_units_mlp``), check_every=2, repair=True (silence needs
    40 values: the third check). After step 2 every rank replaces the head ``fc2`` alike
    (seeded), wraps the model in a new DDP and makes a new optimizer, as a fine-tuning
    script would. Returns each rank's decisions after every step."""
    from trainrecord.monitor import Monitor

    def body() -> dict[str, Any]:
        model = _dead_units_mlp()
        ddp = DistributedDataParallel(model)
        optimizer: torch.optim.Optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
        x = _batch(rank)
        decisions = []
        with Monitor(ddp, optimizer, run_dir, **REPAIR_ON_THIRD_CHECK) as monitor:
            for step in range(10):
                _train_step(ddp, x, monitor, optimizer)
                if step == 2:
                    torch.manual_seed(1)
                    model.fc2 = nn.Linear(6, 4)
                    ddp = DistributedDataParallel(model)
                    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
                decisions.append(_decisions(monitor))
        _save(model, optimizer, out_dir, rank)
        return {"decisions": decisions}

    _run(rank, world, init_file, out_dir, body)


def refused_record_on_writer(
    rank: int, world: int, init_file: str, run_dir: str, out_dir: str
) -> None:
    """Every rank creates a Monitor on ``run_dir`` (a re-run of the script) and trains 6
    steps with check_every=2; the test left there a finished record edited after it ended,
    which the writer (rank 0) refuses to continue. Each rank catches what it raised and
    carries on (to the group's barrier); returns that error (or "trained") and the seconds
    from the creation to it."""
    import time

    from trainrecord.monitor import Monitor

    def body() -> dict[str, Any]:
        torch.manual_seed(0)
        ddp = DistributedDataParallel(Mlp())
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
        x = torch.rand(4, 3, 8, 8, generator=torch.Generator().manual_seed(rank))
        began = time.monotonic()
        seen: dict[str, Any] = {"type": "trained"}
        try:
            with Monitor(ddp, optimizer, run_dir, check_every=2) as monitor:
                for _ in range(6):
                    loss = F.cross_entropy(ddp(x), torch.zeros(4, dtype=torch.long))
                    loss.backward()
                    monitor.step(loss)
                    optimizer.step()
                    optimizer.zero_grad()
        except Exception as exc:
            seen = {"type": type(exc).__name__, "message": str(exc)}
        seen["seconds"] = time.monotonic() - began
        return seen

    _run(rank, world, init_file, out_dir, body)
