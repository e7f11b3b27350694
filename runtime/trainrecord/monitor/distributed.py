"""torch.distributed support: unwrapping DDP, the writer rank, reductions across ranks.

Under DistributedDataParallel every rank runs the monitor with the same check schedule;
gradients are already averaged by DDP, so per-layer norms agree. What differs per rank
(activation statistics of the local batch, the local loss) is reduced at check steps in
two ``all_reduce`` calls of one flat tensor each, whose layout every rank agrees on
whatever it measured (see :class:`CheckReduction`). The process group is the DDP
wrapper's (``DistributedDataParallel(..., process_group=g)``), else the default one; only
its rank 0 writes the diary and calls sinks. Repairs are broadcast from that rank so
parameters stay identical. FSDP shards parameters, so per-layer norms and channel weights
are not available on one rank: it is refused.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, replace
from typing import Any, cast

import torch
import torch.distributed as dist
from torch import nn

from trainrecord.errors import TrainrecordError
from trainrecord.monitor.compiled import is_compiled_wrapper
from trainrecord.monitor.structure import Structure


class UnsupportedModel(TrainrecordError, TypeError):
    """The model is wrapped in a way the monitor cannot observe (FSDP)."""


def unwrap(model: nn.Module) -> tuple[nn.Module, str | None, nn.Module | None]:
    """The module to observe, the data-parallel wrapper's name and the
    DistributedDataParallel wrapper (None: none given): DDP and DataParallel give their
    ``.module``, and ``torch.compile``'s wrapper its original module, in any nesting (see
    :mod:`trainrecord.monitor.compiled`)."""
    kind: str | None = None
    ddp: nn.Module | None = None
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
            if ddp is None and isinstance(model, nn.parallel.DistributedDataParallel):
                ddp = model
            kind, model = kind or name, cast(nn.Module, model.module)
        elif is_compiled_wrapper(model):
            model = cast(nn.Module, model._orig_mod)  # a Module: is_compiled_wrapper checks
        else:
            return model, kind, ddp


class JoinRefused(TrainrecordError, RuntimeError):
    """The DDP wrapper was given to ``torch.distributed.algorithms.Join`` for uneven inputs:
    a rank that ran out of inputs takes no part in the checks' collectives."""


class RanksDisagree(TrainrecordError, RuntimeError):
    """The ranks reached one check at different steps (a start_step or check_every that
    differs between them): their observations cannot be paired."""


@dataclass
class Distributed:
    """The process group the monitor runs in (single process when not initialised): the
    DDP wrapper's group when it has one, else the default group; ``rank`` and
    ``world_size`` are within that group, whose rank 0 writes."""

    rank: int = 0
    world_size: int = 1
    backend: str | None = None
    wrapper: str | None = None
    group: Any = None
    ranks: list[int] | None = None  # the group's global ranks (None: every rank)
    ddp: weakref.ref[nn.Module] | None = None  # the DistributedDataParallel wrapper

    @classmethod
    def detect(cls, wrapper: str | None, ddp: nn.Module | None = None) -> Distributed:
        """Read rank and world size from torch.distributed when initialised (within the
        process group of ``ddp``, the DistributedDataParallel wrapper, when given)."""
        if not (dist.is_available() and dist.is_initialized()):
            return cls(wrapper=wrapper)
        group = getattr(ddp, "process_group", None)
        if group is not None and group is dist.group.WORLD:
            group = None
        ranks = None
        if group is not None:
            ranks = sorted(dist.get_process_group_ranks(group))
            if len(ranks) == dist.get_world_size():
                group, ranks = None, None  # the same ranks as the default group's
        backend = str(dist.get_backend(group))
        held = weakref.ref(ddp) if ddp is not None else None
        return cls(
            dist.get_rank(group), dist.get_world_size(group), backend, wrapper, group, ranks, held
        )

    @property
    def active(self) -> bool:
        """More than one process."""
        return self.world_size > 1

    @property
    def writer(self) -> bool:
        """Whether this rank writes the diary and calls sinks (the group's rank 0)."""
        return self.rank == 0

    @property
    def writer_rank(self) -> int:
        """The global rank of the group's rank 0."""
        return 0 if self.ranks is None else self.ranks[0]

    def manifest(self) -> dict[str, Any] | None:
        """The manifest's distributed field (null for one process: nn.DataParallel too)."""
        if not self.active:
            return None
        return {
            "backend": self.backend,
            "world_size": self.world_size,
            "wrapper": self.wrapper,
            "writer_rank": self.writer_rank,
            "process_group": (
                "default (every rank)"
                if self.ranks is None
                else f"the DistributedDataParallel wrapper's: global ranks {self.ranks}"
            ),
            "reduced": [
                "activation maxima and minima (max/min over ranks)",
                "values per channel (summed over ranks)",
                "loss (mean over the ranks that gave one)",
            ],
            "repair": f"broadcast from rank {self.writer_rank}",
        }

    def reduce_max(self, tensor: torch.Tensor) -> torch.Tensor:
        """Element-wise max over ranks (in place)."""
        if self.active:
            dist.all_reduce(tensor, op=dist.ReduceOp.MAX, group=self.group)
        return tensor

    def reduce_sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """Element-wise sum over ranks (in place)."""
        if self.active:
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM, group=self.group)
        return tensor

    def broadcast(self, tensors: list[torch.Tensor]) -> None:
        """Copy the writer's values of ``tensors`` to every rank."""
        if self.active:
            for tensor in tensors:
                dist.broadcast(tensor.data, src=self.writer_rank, group=self.group)

    def agree_schedule(
        self, start_step: int, check_every: int, device: torch.device, refused: bool = False
    ) -> int | None:
        """Raise :class:`RanksDisagree` on every rank when the ranks were given different
        ``start_step`` or ``check_every`` (one all_reduce of five integers, at the Monitor's
        creation, which every rank makes before training). A check's own step comparison
        catches only ranks that meet at one check; ranks whose checks never meet (start
        steps off by a non-multiple of check_every) would pair a check's collectives with
        DDP's gradient buckets: a collective timeout or abort, not this error.

        ``refused``: this rank refuses the Monitor for a reason of its own process (another
        Monitor open on its model). Returns the group rank of a rank that refused it (the
        highest; this one's own when it did), None when none did: every rank then refuses
        together, after this collective, instead of the others waiting in it for a rank
        that raised before it (gloo: "Connection closed by peer" once that rank's process
        ends, or the collective timeout while it lives on; NCCL: a hang)."""
        if not self.active:
            return self.rank if refused else None
        both = torch.tensor(
            [
                start_step,
                -start_step,
                check_every,
                -check_every,
                self.rank + 1 if refused else 0,
            ],
            dtype=torch.int64,
            device=device,
        )
        dist.all_reduce(both, op=dist.ReduceOp.MAX, group=self.group)
        high, low, every_high, every_low, refusing = (int(v) for v in both.tolist())
        starts, everys = (-low, high), (-every_low, every_high)
        if starts[0] != starts[1] or everys[0] != everys[1]:
            raise RanksDisagree(
                "trainrecord.Monitor: the ranks were given different "
                + " and ".join(
                    f"{field} ({one} on one rank, {other} on another)"
                    for field, (one, other) in (("start_step", starts), ("check_every", everys))
                    if one != other
                )
                + f"; this rank has start_step={start_step}, check_every={check_every}: "
                "their checks would not meet. Give every rank the same start_step (the step "
                "the run resumes at) and check_every (see README, DistributedDataParallel)"
            )
        return refusing - 1 if refusing else None

    def agree_opened(self, failed: bool, device: torch.device) -> int | None:
        """The group rank of a rank that could not open its Monitor's record (the highest;
        this one's own when it failed), None when none failed: one all_reduce of one
        integer at the Monitor's creation, after the writing rank opened (or failed to open)
        diary.jsonl and metrics.jsonl and wrote run_start. Only the writer opens files, so
        only it can refuse here (a record it will not continue, a diary another writer
        holds, an unreadable signing key, a sink that cannot start); without this, it
        raised alone and every other rank went on to wait in the first check's collective
        for it (gloo: the collective timeout or "Connection closed by peer"; NCCL: a hang)."""
        if not self.active:
            return self.rank if failed else None
        flag = torch.tensor([self.rank + 1 if failed else 0], dtype=torch.int64, device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=self.group)
        failing = int(flag.item())
        return failing - 1 if failing else None

    def agreed(
        self, learnt: tuple[Structure, set[str]] | None, device: torch.device
    ) -> tuple[Structure, set[str]] | None:
        """The writer's structure and the modules its first check measured, on every rank
        (one ``broadcast_object_list``, at a check that learns the structure only).

        Which layers feed a ReLU, their BatchNorm and consumer, and so which channels can be
        silent, certified or repaired, come from the structure; learnt by each rank from its
        own forward pass, ranks that routed differently (find_unused_parameters) would
        decide differently and pair one producer's repair broadcast with another's. Every
        rank decides from the writer's, as one process would from its own; the ReLUs'
        graph nodes (only used while learning) are not sent."""
        if learnt is not None:
            learnt = (replace(learnt[0], relu_nodes={}), learnt[1])
        box: list[Any] = [learnt if self.writer else None]
        dist.broadcast_object_list(
            box,
            src=self.writer_rank,
            group=self.group,
            device=device if device.type != "cpu" else None,
        )
        return cast("tuple[Structure, set[str]] | None", box[0])

    def refuse_join(self) -> None:
        """Raise :class:`JoinRefused` (on every rank alike, before any collective) when the
        DDP wrapper was given to ``Join`` without ``throw_on_early_termination=True``: a
        rank that ran out of inputs shadows DDP's collectives, not the checks', and gloo
        aborts a process on the mismatch (NCCL hangs)."""
        ddp = self.ddp() if self.ddp is not None else None
        config = getattr(ddp, "_join_config", None)
        if getattr(config, "enable", False) and not getattr(
            config, "throw_on_early_termination", False
        ):
            raise JoinRefused(
                "trainrecord.Monitor: the DistributedDataParallel model was given to "
                "torch.distributed.algorithms.Join for uneven inputs: a rank that runs out "
                "of inputs takes no part in the checks' collectives, so the checks cannot "
                "run. Give every rank the same number of steps (DistributedSampler with "
                "drop_last=True), or use Join(..., throw_on_early_termination=True), which "
                "stops every rank together at the first rank out of inputs"
            )

    def reduce_check(
        self,
        step: int,
        loss: torch.Tensor | None,
        extremes: list[tuple[torch.Tensor, torch.Tensor] | int],
        values: list[int],
        device: torch.device,
        stopped: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A check's two collectives, of a layout every rank agrees on whatever it measured.

        ``extremes``: per producer (every one, in a fixed order) this rank's channel maxima
        and minima, or its channel count when this rank did not measure it; ``values``: the
        values per channel this rank saw of each (0 when not measured). Returns, still on
        ``device``, the all_reduce(MAX) of ``[step, -step, maxima..., -minima...]`` (a
        producer not measured here gives the identities, -inf and +inf; a NaN is taken as
        +inf, so a NaN on any rank leaves every rank a non-finite value: no verdict) and the
        all_reduce(SUM) of ``[loss, ranks that gave a loss, stopped, values per
        producer...]`` (``stopped``: this rank's record could not be written, so every rank
        stops checking at this check, together)."""
        dtype = torch.float32 if device.type == "mps" else torch.float64  # (mps: no float64)
        highs: list[torch.Tensor] = []
        lows: list[torch.Tensor] = []
        for part in extremes:  # (joined first, converted once: a kernel less per producer)
            if isinstance(part, int):
                highs.append(torch.full((part,), -math.inf, device=device))
                lows.append(torch.full((part,), math.inf, device=device))
            else:
                highs.append(part[0].to(device))
                lows.append(part[1].to(device))
        head = torch.tensor([step, -step], dtype=dtype, device=device)
        both = (
            torch.cat([head, torch.cat(highs).to(dtype), torch.cat(lows).to(dtype).neg_()])
            if extremes
            else head  # (no producer: the step alone)
        )
        both.masked_fill_(both.isnan(), math.inf)
        self.reduce_max(both)
        given = [0.0, 0.0] if loss is None else [0.0, 1.0]
        given.append(1.0 if stopped else 0.0)
        sums = torch.tensor(given + [float(v) for v in values], dtype=dtype, device=device)
        if loss is not None:
            sums[:1] = loss.detach().reshape(1).to(dtype)
        self.reduce_sum(sums)
        return both, sums

    def read_check(
        self, step: int, maxed: torch.Tensor, summed: torch.Tensor, sizes: list[int]
    ) -> tuple[float | None, int, bool, list[int], torch.Tensor, torch.Tensor]:
        """What :meth:`reduce_check` gave, on the host: the loss (the mean over the ranks
        that gave one; None when none did), how many ranks gave one, whether a rank's
        record stopped (every rank then stops checking), the values per channel
        of each producer summed over ranks (0: measured on no rank), and every producer's
        channel maxima and minima over ranks, in the reduction's dtype (float64 but on
        mps: as the one-process path keeps a float64 model's values, 1e-50 stays above 0
        and two values apart below float32's resolution stay apart). Raises :class:`RanksDisagree` on
        every rank alike when the ranks reached this check at different steps."""
        latest, earliest = int(maxed[0].item()), int(-maxed[1].item())
        if latest != earliest:
            raise RanksDisagree(
                f"trainrecord.Monitor: the ranks reached one check at different steps "
                f"(step {earliest} on one rank, step {latest} on another; this rank is at "
                f"step {step}): their observations cannot be paired. Every rank must give the "
                "Monitor the same start_step and check_every and call monitor.step() once per "
                "optimizer step (see README, DistributedDataParallel)"
            )
        total = sum(sizes)
        high = maxed[2 : 2 + total]
        low = maxed[2 + total :].neg()
        ranks = int(summed[1].item())
        loss = float(summed[0].item()) / ranks if ranks else None
        stopped = bool(summed[2].item() > 0)
        values = [int(v) for v in summed[3:].tolist()]
        return loss, ranks, stopped, values, high, low
