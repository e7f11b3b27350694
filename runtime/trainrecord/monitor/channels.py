"""Channel statistics on check steps: certified, flat, silent and decayed channels.

For each producer (Conv/Linear) the monitor measures the tensor its ReLU receives: the
paired BatchNorm's output, or the producer's own output. Forward hooks, installed only for
the forward pass of a check step, reduce it to a per-channel maximum and minimum over the
batch and every position. A channel is, in this order of precedence:

* **certified**: proven dead from the weights and the structure (``certificate.py``);
* **silent** (observed): its ReLU input was <= 0 everywhere in the batch, so the ReLU
  output was all zeros (only for producers followed by a ReLU);
* **flat**: its input to the ReLU was the same value everywhere in the batch (a constant
  channel carries no information, whatever its value);
* **decayed**: its scale (|gamma| with a BatchNorm, else the norm of its incoming weights)
  is below ``decay_ratio`` times the median over the layer's channels.

The level is ``none`` (no stuck channel), ``some``, ``most`` (half or more) or ``all``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from trainrecord.monitor.structure import first_tensor


def channel_dim(module: nn.Module) -> int:
    """The channel dimension of a module's output: last for Linear, 1 otherwise."""
    return -1 if isinstance(module, nn.Linear) else 1


class ActivationProbe:
    """Forward hooks that keep a per-channel max and min of chosen modules' outputs."""

    def __init__(self, modules: dict[str, nn.Module]) -> None:
        self.maxima: dict[str, torch.Tensor] = {}
        self.minima: dict[str, torch.Tensor] = {}
        self._handles = [m.register_forward_hook(self._hook(n)) for n, m in modules.items()]

    def _hook(self, name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: Any, output: Any) -> None:
            if not (torch.is_grad_enabled() and module.training):
                return
            tensor = first_tensor(output)
            if tensor is None or tensor.dim() < 2:
                return
            with torch.no_grad():
                x = tensor.detach()
                dim = channel_dim(module) % x.dim()
                others = tuple(d for d in range(x.dim()) if d != dim)
                high, low = x.amax(dim=others).float(), x.amin(dim=others).float()
            if name in self.maxima:
                self.maxima[name] = torch.maximum(self.maxima[name], high)
                self.minima[name] = torch.minimum(self.minima[name], low)
            else:
                self.maxima[name], self.minima[name] = high, low

        return hook

    def remove(self) -> None:
        """Remove every hook."""
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


@dataclass
class ChannelCounts:
    """One producer's stuck channels at one check."""

    total: int
    certified: list[int] = field(default_factory=list)
    flat: list[int] = field(default_factory=list)
    observed: list[int] = field(default_factory=list)
    decayed: list[int] = field(default_factory=list)

    @property
    def stuck(self) -> int:
        """Channels in any of the four categories."""
        return len(self.certified) + len(self.flat) + len(self.observed) + len(self.decayed)

    @property
    def level(self) -> str:
        """none, some, most (half or more) or all."""
        stuck = self.stuck
        if stuck == 0:
            return "none"
        if stuck >= self.total:
            return "all"
        return "most" if 2 * stuck >= self.total else "some"

    def row(self) -> list[int]:
        """[certified, constant, silent, decayed] for metrics.jsonl."""
        return [len(self.certified), len(self.flat), len(self.observed), len(self.decayed)]


def classify(
    total: int,
    certified: set[int],
    high: list[float] | None,
    low: list[float] | None,
    relu: bool,
    scale: list[float] | None,
    decay_ratio: float,
) -> ChannelCounts:
    """Sort a producer's channels into the four categories (see the module docstring)."""
    counts = ChannelCounts(total=total, certified=sorted(certified))
    median = None
    if scale is not None and scale:
        ordered = sorted(scale)
        median = ordered[len(ordered) // 2]
    for c in range(total):
        if c in certified:
            continue
        if high is not None and low is not None and c < len(high):
            if relu and high[c] <= 0.0:
                counts.observed.append(c)
                continue
            if high[c] == low[c]:
                counts.flat.append(c)
                continue
        if (
            median is not None
            and median > 0
            and scale is not None
            and scale[c] < decay_ratio * median
        ):
            counts.decayed.append(c)
    return counts


def channel_scale(producer: nn.Module, batchnorm: nn.Module | None) -> list[float] | None:
    """Per-channel scale: |gamma| of the BatchNorm, else the norm of incoming weights."""
    with torch.no_grad():
        if batchnorm is not None and getattr(batchnorm, "weight", None) is not None:
            return batchnorm.weight.detach().abs().float().tolist()
        weight = getattr(producer, "weight", None)
        if weight is None:
            return None
        return weight.detach().flatten(1).float().norm(dim=1).tolist()


@dataclass
class ChannelTracker:
    """Writes channels when a producer's state changes and channels_cleared on recovery.

    The state is the level together with the set of certified channels; the counts of
    the other categories are in metrics.jsonl at every check.
    """

    list_limit: int = 16
    state: dict[str, tuple[str, tuple[int, ...]]] = field(default_factory=dict)

    def observe(
        self, step: int, layer: str, batchnorm: str | None, counts: ChannelCounts
    ) -> tuple[str, dict[str, Any]] | None:
        """The event to write for this producer at this check, if any."""
        new = (counts.level, tuple(counts.certified))
        old = self.state.get(layer, ("none", ()))
        self.state[layer] = new
        if new == old:
            return None
        if counts.level == "none":
            event, severity = "channels_cleared", "info"
        else:
            event = "channels"
            severity = "warning" if counts.level in ("most", "all") or counts.certified else "info"
        limit = self.list_limit
        return event, {
            "step": step,
            "severity": severity,
            "layer": layer,
            "batchnorm": batchnorm,
            "channels": counts.total,
            "level": counts.level,
            "n_certified": len(counts.certified),
            "n_flat": len(counts.flat),
            "n_observed": len(counts.observed),
            "n_decayed": len(counts.decayed),
            "certified": counts.certified[:limit],
            "flat": counts.flat[:limit],
            "observed": counts.observed[:limit],
        }
