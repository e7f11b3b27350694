"""Repair: re-initialise stuck channels, reset their optimizer state, record the jump.

For each repaired channel ``c`` of a producer: its incoming weights are drawn again from
the layer's default initialisation (uniform in ``±1/sqrt(fan_in)``, as ``reset_parameters``
of Conv, ConvTranspose and Linear), its bias and BatchNorm bias are set to 0, its BatchNorm weight to 1 and
running statistics to (0, 1). When the module that consumes the channel is known from the
dataflow, its outgoing weights (input column ``c`` of the consumer; columns ``c*S`` to
``c*S + S - 1`` of a Linear fed the flattened maps of ``S`` positions) are zeroed, as ReDo
does: the network computes the same function at the moment of the repair, and the
outgoing weights learn from the next step on. Every optimizer-state tensor of those
parameters (momentum, Adam's moments) has the channels' slices zeroed, and so do the
pending gradients. The size of the jump is measured over every tensor touched.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from trainrecord.monitor.certificate import Producer
from trainrecord.monitor.distributed import Distributed
from trainrecord.monitor.structure import (
    affine_of,
    bias_of,
    in_axis,
    out_axis,
    running_stats_of,
    weight_of,
)


@dataclass
class Repairer:
    """Performs repairs and builds repair events."""

    optimizer: torch.optim.Optimizer | None
    seed: int | None = None
    list_limit: int = 16
    dist: Distributed | None = None
    _generator: torch.Generator | None = None

    @property
    def rng(self) -> str:
        """Where the new weights come from."""
        if self.seed is None:
            return "global torch RNG"
        return f"torch.Generator seeded with {self.seed}"

    def _draw(self, shape: torch.Size, bound: float, like: torch.Tensor) -> torch.Tensor:
        if self.seed is None:
            return torch.empty(shape, dtype=like.dtype, device=like.device).uniform_(-bound, bound)
        if self._generator is None:
            self._generator = torch.Generator(device="cpu")
            self._generator.manual_seed(self.seed)
        values = torch.rand(shape, generator=self._generator, dtype=torch.float32)
        return ((values * 2 - 1) * bound).to(device=like.device, dtype=like.dtype)

    def repair(
        self,
        step: int,
        producer: Producer,
        channels: list[int],
        consumer: tuple[str, nn.Module] | None,
        block: int = 1,
    ) -> dict[str, Any]:
        """Repair ``channels`` of ``producer``; returns the repair event's fields. The
        ``consumer``'s input columns of channel ``c`` are ``c * block`` to
        ``c * block + block - 1`` (``block`` > 1: the channels were flattened)."""
        module, bn = producer.module, producer.bn_module
        weight, bias, affine = weight_of(module), bias_of(module), affine_of(bn)
        index = torch.tensor(channels, dtype=torch.long, device=weight.device)
        axis = out_axis(module)
        touched: list[tuple[torch.Tensor, int, torch.Tensor]] = [(weight, axis, index)]
        if bias is not None:
            touched.append((bias, 0, index))
        if affine is not None:
            touched += [(affine[0], 0, index), (affine[1], 0, index)]
        columns = index
        if consumer is not None:
            if block > 1:
                offsets = torch.arange(block, device=index.device)
                columns = (index.unsqueeze(1) * block + offsets).flatten()
            touched.append((weight_of(consumer[1]), in_axis(consumer[1]), columns))
        before = [t.detach().clone() for t, _, _ in touched]
        with torch.no_grad():
            fan_in, _ = nn.init._calculate_fan_in_and_fan_out(weight)  # as torch's
            bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
            shape = list(weight.shape)
            shape[axis] = len(channels)
            new = self._draw(torch.Size(shape), bound, weight)
            weight.index_copy_(axis, index, new)
            if bias is not None:
                bias.index_fill_(0, index, 0.0)
            if bn is not None:
                bn_index = index.to(affine[0].device) if affine is not None else index
                if affine is not None:
                    affine[0].index_fill_(0, bn_index, 1.0)
                    affine[1].index_fill_(0, bn_index, 0.0)
                running = running_stats_of(bn)
                if running is not None:
                    running[0].index_fill_(0, bn_index, 0.0)
                    running[1].index_fill_(0, bn_index, 1.0)
            if consumer is not None:
                consumer_weight = weight_of(consumer[1])
                consumer_weight.index_fill_(
                    in_axis(consumer[1]), columns.to(consumer_weight.device), 0.0
                )
        if self.dist is not None:
            self.dist.broadcast([t for t, _, _ in touched])
        slices = self._reset_state(touched)
        delta = math.sqrt(
            sum(
                float((t.detach() - b).double().square().sum())
                for (t, _, _), b in zip(touched, before, strict=True)
            )
        )
        norm_before = math.sqrt(sum(float(b.double().square().sum()) for b in before))
        norm_after = math.sqrt(
            sum(float(t.detach().double().square().sum()) for t, _, _ in touched)
        )
        kind = "Kaiming-uniform (+-1/sqrt(fan_in)) re-initialisation of incoming weights, bias 0"
        if bn is not None:
            kind += f", {producer.batchnorm} weight 1, bias 0, running stats (0, 1)"
        if consumer is not None:
            columns_note = (
                f" ({block} input columns per channel: the maps were flattened)"
                if block > 1
                else ""
            )
            kind += (
                f"; outgoing weights in {consumer[0]} zeroed{columns_note}, so the function "
                "is unchanged at the repair (as ReDo)"
            )
        else:
            kind += "; the consumer of the channels is unknown, so the function changes"
        return {
            "step": step,
            "severity": "action",
            "layer": producer.name,
            "batchnorm": producer.batchnorm,
            "channels": channels[: self.list_limit],
            "count": len(channels),
            "method": kind,
            "optimizer_slices_reset": slices,
            "modification_class": "discrete",
            "bound": None,
            "delta_norm": delta,
            "weight_norm_before": norm_before,
            "weight_norm_after": norm_after,
            "relative_change": delta / norm_before if norm_before > 0 else None,
            "rng": self.rng,
        }

    def _reset_state(self, touched: list[tuple[torch.Tensor, int, torch.Tensor]]) -> int:
        """Zero the channels' slices (``index`` along ``dim`` of each touched tensor) of
        every optimizer-state tensor and pending gradient."""
        count = 0
        with torch.no_grad():
            for param, dim, index in touched:
                idx = index.to(param.device)
                if param.grad is not None:
                    param.grad.index_fill_(dim, idx, 0.0)
                if self.optimizer is None:
                    continue
                for value in self.optimizer.state.get(param, {}).values():
                    if isinstance(value, torch.Tensor) and value.shape == param.shape:
                        value.index_fill_(dim, idx.to(value.device), 0.0)
                        count += 1
        return count
