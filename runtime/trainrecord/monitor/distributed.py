"""torch.distributed support: unwrapping DDP, the writer rank, reductions across ranks.

Under DistributedDataParallel every rank runs the monitor with the same check schedule;
gradients are already averaged by DDP, so per-layer norms agree. What differs per rank
(activation statistics of the local batch, the local loss) is reduced with one
``all_reduce`` each on check steps. Only rank 0 writes the diary and calls sinks.
Repairs are broadcast from rank 0 so parameters stay identical. FSDP shards parameters,
so per-layer norms and channel weights are not available on one rank: it is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.distributed as dist
from torch import nn

from trainrecord.errors import TrainrecordError
from trainrecord.monitor.compiled import is_compiled_wrapper


class UnsupportedModel(TrainrecordError, TypeError):
    """The model is wrapped in a way the monitor cannot observe (FSDP)."""


def unwrap(model: nn.Module) -> tuple[nn.Module, str | None]:
    """The module to observe and the data-parallel wrapper's name: DDP and DataParallel
    give their ``.module``, and ``torch.compile``'s wrapper its original module, in any
    nesting (see :mod:`trainrecord.monitor.compiled`)."""
    kind: str | None = None
    while True:
        name = type(model).__name__
        if name == "FullyShardedDataParallel" or any(
            type(c).__name__.startswith("FSDP") for c in type(model).__mro__
        ):
            raise UnsupportedModel(
                "trainrecord.Monitor does not support FSDP: parameters are sharded across "
                "ranks, so per-layer gradient norms and per-channel weights are not whole on "
                "any rank. Use DistributedDataParallel, or monitor an unsharded copy."
            )
        if isinstance(model, nn.parallel.DistributedDataParallel | nn.DataParallel):
            kind, model = kind or name, cast(nn.Module, model.module)
        elif is_compiled_wrapper(model):
            model = cast(nn.Module, model._orig_mod)  # a Module: is_compiled_wrapper checks
        else:
            return model, kind


@dataclass
class Distributed:
    """The process group the monitor runs in (single process when not initialised)."""

    rank: int = 0
    world_size: int = 1
    backend: str | None = None
    wrapper: str | None = None

    @classmethod
    def detect(cls, wrapper: str | None) -> Distributed:
        """Read rank and world size from torch.distributed when initialised."""
        if dist.is_available() and dist.is_initialized():
            return cls(dist.get_rank(), dist.get_world_size(), str(dist.get_backend()), wrapper)
        return cls(wrapper=wrapper)

    @property
    def active(self) -> bool:
        """More than one process."""
        return self.world_size > 1

    @property
    def writer(self) -> bool:
        """Whether this rank writes the diary and calls sinks (rank 0)."""
        return self.rank == 0

    def manifest(self) -> dict[str, Any] | None:
        """The manifest's distributed field (null for one process: nn.DataParallel too)."""
        if not self.active:
            return None
        return {
            "backend": self.backend,
            "world_size": self.world_size,
            "wrapper": self.wrapper,
            "writer_rank": 0,
            "reduced": [
                "activation maxima and minima (max/min over ranks)",
                "loss (mean over ranks)",
            ],
            "repair": "broadcast from rank 0",
        }

    def reduce_max(self, tensor: torch.Tensor) -> torch.Tensor:
        """Element-wise max over ranks (in place)."""
        if self.active:
            dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return tensor

    def reduce_mean(self, tensor: torch.Tensor) -> torch.Tensor:
        """Mean over ranks (in place)."""
        if self.active:
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
            tensor /= self.world_size
        return tensor

    def broadcast(self, tensors: list[torch.Tensor]) -> None:
        """Copy rank 0's values of ``tensors`` to every rank."""
        if self.active:
            for tensor in tensors:
                dist.broadcast(tensor.data, src=0)
