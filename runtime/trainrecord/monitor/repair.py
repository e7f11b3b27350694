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
pending gradients: the state of the optimizer the Monitor follows and of every optimizer
it wraps (SAM's ``base_optimizer`` holds the momentum). A state tensor that is the
parameter itself (SAM's ``old_p`` after its restore, ``p.data = old_p``) is left alone:
zeroing it would zero the new weights; one that is a copy of the parameter (SAM's
``old_p`` before the restore, slow weights: known by name, ``COPY_KEYS``, or else by its
distance to the parameter) gets the new values, so that restoring it keeps the repair. So
does a copy an optimizer keeps in a list attribute of its own beside its state (a Lookahead's
``self.slow_weights = [[p.clone() for p in g["params"]] for g in param_groups]``): matched to
the parameters by position, only when the list mirrors the param groups exactly (one tensor
of each parameter's shape per parameter, per group or flat in the groups' order); a list
laid out otherwise that holds tensors of a repaired parameter's shape is left as it is and
named in the repair's ``method`` (its next synchronisation may pull the channels back).

A factored state entry (torch's ``Adafactor`` keeps ``row_var`` and ``col_var``, the
parameter's shape with the last dimension, or the one before it, reduced to 1) has the
channels' slices reset where it keeps the channel axis (``row_var`` of a Linear's weight,
both factors of a Conv weight: Adafactor factors the last two dimensions, the kernel's); a
factor reduced over the channel axis (``col_var`` of a Linear's weight, one value per input
column over every row) is shared with the channels not repaired and is kept, and the
repair's ``method`` names it, as it names any state entry laid out otherwise (whose
channels' part cannot be found). The size of the jump is measured over every tensor touched.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn

from trainrecord.monitor.certificate import Producer
from trainrecord.monitor.distributed import Distributed
from trainrecord.monitor.optimizers import holds_tensor
from trainrecord.monitor.structure import (
    affine_of,
    bias_of,
    in_axis,
    out_axis,
    running_stats_of,
    weight_of,
)

MOMENT_KEYS = frozenset(
    {
        "momentum_buffer",
        "exp_avg",
        "exp_avg_sq",
        "max_exp_avg_sq",
        "square_avg",
        "grad_avg",
        "acc_delta",
        "sum",
        "exp_inf",
        "prev",
    }
)
"""State entries of torch's optimizers that hold moments of the gradient (never a copy of
the parameter): always zeroed on the repaired slices."""

FRESH: dict[str, Callable[[dict[str, Any]], float]] = {
    "step_size": lambda group: float(group.get("lr", 0.0)),  # Rprop: a zero step never moves
    "sum": lambda group: float(group.get("initial_accumulator_value", 0.0)),  # Adagrad
}
"""State entries whose fresh value is not zero: a repaired slice gets the value torch's
optimizer gives a new parameter (from its param group), not zero (Rprop's step sizes at
zero froze the repaired channels and the zeroed outgoing weights for good)."""

COPY_KEYS = frozenset(
    {
        "old_p",  # SAM, ASAM, GSAM: the weights before the ascent step, restored after it
        "lookahead_slow_buff",  # Lookahead (pytorch-optimizer, Ranger): the slow weights
        "slow_buffer",  # Lookahead (torch_optimizer, lonePatient): the slow weights
        "slow_param",
        "ax",  # torch's ASGD: the averaged weights
        "z",  # schedule-free optimizers: the base sequence of weights
        "x0",  # D-Adaptation: the initial weights
        "p0",  # Prodigy: the initial weights
        "slow_weights",  # Lookahead kept in a list beside the state (lonePatient, others)
        "slow_params",
    }
)
"""State entries known to be copies of the parameter (weights, not moments): given the
new values on the repaired slices, however far they are from the parameter (SAM's
``old_p`` after a large ascent step, a producer whose whole weight is zero)."""

LIST_DEPTH = 2
"""How deep in an optimizer's own attribute a list of per-parameter tensors is looked for:
one list per param group (``[[p.clone() for p in g["params"]] for g in param_groups]``) or
one flat list in the groups' order."""

COPY_DISTANCE = 0.5
"""A parameter-shaped state tensor of another name (neither a moment nor a known copy)
within this fraction of the parameter's norm of the parameter (before the repair) is a
copy of it, not a moment: a moment of the gradient is nowhere near the weights."""


@dataclass
class Repairer:
    """Performs repairs and builds repair events. ``optimizers``: the optimizer the Monitor
    follows and those it wraps, whose state the repair resets."""

    optimizers: list[torch.optim.Optimizer]
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
        undo: list[Callable[[], None]] | None = None,
        drawn: dict[tuple[str, tuple[int, ...]], torch.Tensor] | None = None,
    ) -> dict[str, Any]:
        """Repair ``channels`` of ``producer``; returns the repair event's fields. The
        ``consumer``'s input columns of channel ``c`` are ``c * block`` to
        ``c * block + block - 1`` (``block`` > 1: the channels were flattened). ``undo``:
        before anything changes, a function that puts back the slices the repair changes
        is appended to it (a check interrupted by Ctrl+C is undone and run again).
        ``drawn``: the new weights drawn, by producer and channels; a repair found there (a
        check run again) takes those instead of drawing again (see :meth:`_saved`)."""
        module, bn = producer.module, producer.bn_module
        weight, bias, affine = weight_of(module), bias_of(module), affine_of(bn)
        index = torch.tensor(channels, dtype=torch.long, device=weight.device)
        axis = out_axis(module)
        touched: list[tuple[torch.Tensor, int, torch.Tensor]] = [(weight, axis, index)]
        labels = [f"{producer.name} weight"]
        if bias is not None:
            touched.append((bias, 0, index))
            labels.append(f"{producer.name} bias")
        if affine is not None:
            touched += [(affine[0], 0, index), (affine[1], 0, index)]
            labels += [f"{producer.batchnorm} weight", f"{producer.batchnorm} bias"]
        columns = index
        if consumer is not None:
            if block > 1:
                offsets = torch.arange(block, device=index.device)
                columns = (index.unsqueeze(1) * block + offsets).flatten()
            touched.append((weight_of(consumer[1]), in_axis(consumer[1]), columns))
            labels.append(f"{consumer[0]} weight")
        key = (producer.name, tuple(channels))
        if undo is not None:
            undo.append(self._saved(touched, bn, weight.device, key, drawn))
        before = [t.detach().clone() for t, _, _ in touched]
        copies = self._copies(touched)
        with torch.no_grad():
            fan_in, _ = nn.init._calculate_fan_in_and_fan_out(weight)  # as torch's
            bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
            shape = list(weight.shape)
            shape[axis] = len(channels)
            new = drawn.get(key) if drawn is not None else None
            if new is None:
                new = self._draw(torch.Size(shape), bound, weight)
                if drawn is not None:
                    drawn[key] = new
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
        slices, copied, kept, unknown = self._reset_state(touched, labels, copies)
        lists = [
            f"{name} of {label}"
            for (param, _, _), label in zip(touched, labels, strict=True)
            for name in self.unmatched_lists(param)
        ]
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
        if copied:
            kind += (
                f"; {copied} copies of the weights in the optimizer state (as SAM's old_p) "
                "given the new values"
            )
        if kept:
            kind += (
                f"; {len(kept)} factored optimizer-state entries reduced over the channel "
                f"axis, so shared with the channels not repaired, kept as they were "
                f"({', '.join(kept)})"
            )
        if unknown:
            kind += (
                f"; {len(unknown)} optimizer-state entries laid out unlike the parameter, "
                f"whose part for these channels is not known, left as they were "
                f"({', '.join(unknown)})"
            )
        if lists:
            kind += (
                f"; {len(lists)} tensors in lists an optimizer keeps beside its state, not "
                f"one per parameter as its param groups hold them, whose part for these "
                f"channels is not known, left as they were ({', '.join(lists)})"
            )
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

    def _saved(
        self,
        touched: list[tuple[torch.Tensor, int, torch.Tensor]],
        bn: nn.Module | None,
        device: torch.device,
        key: tuple[str, tuple[int, ...]],
        drawn: dict[tuple[str, tuple[int, ...]], torch.Tensor] | None,
    ) -> Callable[[], None]:
        """A function that puts back what a repair of ``touched`` changes: the channels'
        slices of those tensors, of the BatchNorm's running statistics, of the parameters'
        optimizer state (factored state too) and of their gradients, and the generator the
        new weights come from.

        Only the slices: the loop may have trained on between the interrupted check and
        its run again (Ctrl+C caught, ``optimizer.step()``, the next batch), and what it
        changed elsewhere in those tensors stays (putting the whole tensors back undid that
        optimizer step on the repaired layers and their momentum). A gradient slice is put
        back only while it is as the repair left it (zero: no backward since, whose
        gradient is the one the check reads now). The generator is put back only when the
        new weights were not kept in ``drawn`` (the run again takes those; drawing again
        from a global generator put back would replay the numbers the loop drew since)."""
        slices: list[tuple[torch.Tensor, int, torch.Tensor, torch.Tensor]] = []
        grads: list[tuple[torch.Tensor, torch.Tensor, int, torch.Tensor, torch.Tensor]] = []

        def keep(tensor: torch.Tensor, dim: int, index: torch.Tensor) -> None:
            at = index.to(tensor.device)
            slices.append((tensor, dim, at, tensor.detach().index_select(dim, at).clone()))

        for param, dim, index in touched:
            keep(param, dim, index)
            for _, value, _ in self._state(param):
                keep(value, dim, index)
            for _, value, _ in self._state(param, shaped=False):
                if _factor_layout(value, param, dim) == "channels":
                    keep(value, dim, index)
            grad = param.grad
            if grad is not None:
                at = index.to(grad.device)
                grads.append((param, grad, dim, at, grad.index_select(dim, at).clone()))
        running = running_stats_of(bn) if bn is not None else None
        if running is not None:
            channels = touched[0][2]
            for stat in running:
                keep(stat, 0, channels)
        generator = self._generator
        state = generator.get_state() if generator is not None else None
        host = torch.get_rng_state() if self.seed is None else None
        accelerator = (
            torch.cuda.get_rng_state(device)
            if self.seed is None and device.type == "cuda"
            else None
        )

        def put_back() -> None:
            with torch.no_grad():
                for tensor, dim, at, values in slices:
                    tensor.index_copy_(dim, at, values)
                for param, grad, dim, at, values in grads:
                    if param.grad is grad and not bool(grad.index_select(dim, at).any()):
                        grad.index_copy_(dim, at, values)
            if drawn is not None and key in drawn:
                return  # the run again takes the same new weights: nothing drawn again
            if self.seed is not None:
                if state is None:
                    self._generator = None  # made again from the seed at the next draw
                elif self._generator is not None:
                    self._generator.set_state(state)
            else:
                assert host is not None
                torch.set_rng_state(host)
                if accelerator is not None:
                    torch.cuda.set_rng_state(accelerator, device)

        return put_back

    def _state(
        self, param: torch.Tensor, shaped: bool = True
    ) -> list[tuple[str, torch.Tensor, dict[str, Any]]]:
        """The parameter-shaped state tensors of ``param`` in every optimizer followed, with
        the param group holding it there (each once: a wrapper may show its inner
        optimizer's state as its own); ``shaped`` False: the others (not 0-dimensional:
        a step count is no slice of anything)."""
        out: list[tuple[str, torch.Tensor, dict[str, Any]]] = []
        seen: set[int] = set()
        for optimizer in self.optimizers:
            state = optimizer.state.get(param, {})
            groups: list[dict[str, Any]] = getattr(optimizer, "param_groups", [])
            group = next((g for g in groups if _holds(g, param)), {})
            items = list(state.items()) if isinstance(state, dict) else []
            if shaped:  # a list-held copy (a Lookahead's slow_weights) is parameter-shaped
                items += [(key, value) for key, value in _listed(optimizer, param)]
            for key, value in items:
                if (
                    isinstance(value, torch.Tensor)
                    and (value.shape == param.shape) == shaped
                    and (shaped or value.dim() > 0)
                    and id(value) not in seen
                ):
                    seen.add(id(value))
                    out.append((str(key), value, group))
        return out

    def unmatched_lists(self, param: torch.Tensor) -> list[str]:
        """The optimizers' own list attributes that hold tensors but not one per parameter
        laid out as the param groups (see :func:`_listed`): what they hold for ``param`` is
        not known, so a repair leaves them as they are and names them."""
        names: list[str] = []
        for optimizer in self.optimizers:
            names += [key for key, value in _listed(optimizer, param) if value is None]
        return names

    def _copies(self, touched: list[tuple[torch.Tensor, int, torch.Tensor]]) -> set[int]:
        """The ids of the state tensors that are copies of their parameter: those of a
        known copy's name (``COPY_KEYS``), and others near it (see ``COPY_DISTANCE``),
        looked at before the repair changes the parameter."""
        copies: set[int] = set()
        with torch.no_grad():
            for param, _, _ in touched:
                norm = float(param.detach().double().norm())
                for key, value, _ in self._state(param):
                    if key in MOMENT_KEYS or key in FRESH or _same_memory(value, param):
                        continue
                    if key in COPY_KEYS:
                        copies.add(id(value))
                        continue
                    if norm == 0.0:
                        continue  # no distance to judge an unknown entry by: zeroed
                    gap = float((value.detach().double() - param.detach().double()).norm())
                    if gap <= COPY_DISTANCE * norm:
                        copies.add(id(value))
        return copies

    def _reset_state(
        self,
        touched: list[tuple[torch.Tensor, int, torch.Tensor]],
        labels: list[str],
        copies: set[int],
    ) -> tuple[int, int, list[str], list[str]]:
        """Zero the channels' slices (``index`` along ``dim`` of each touched tensor) of
        every optimizer-state tensor and pending gradient; a state tensor that is the
        parameter's memory is left alone, and a copy of the parameter (``copies``) gets the
        new values. A factored entry keeping the channel axis has its slices reset too
        (see the module's docstring). Returns how many state tensors were reset, how many
        copied to, and the factored entries kept (reduced over the channel axis) and the
        entries laid out otherwise, as "key of label"."""
        zeroed = copied = 0
        kept: list[str] = []
        unknown: list[str] = []
        with torch.no_grad():
            for (param, dim, index), label in zip(touched, labels, strict=True):
                idx = index.to(param.device)
                if param.grad is not None:
                    param.grad.index_fill_(dim, idx, 0.0)
                for key, value, group in self._state(param):
                    if _same_memory(value, param):
                        continue  # it is the parameter: zeroing it would undo the repair
                    at = idx.to(value.device)
                    if id(value) in copies:
                        new = param.detach().index_select(dim, idx).to(value.device, value.dtype)
                        value.index_copy_(dim, at, new)
                        copied += 1
                    else:  # zero, or the fresh value of an entry whose fresh value is not
                        fresh = FRESH.get(key)
                        value.index_fill_(dim, at, fresh(group) if fresh else 0.0)
                        zeroed += 1
                for key, value, group in self._state(param, shaped=False):
                    layout = _factor_layout(value, param, dim)
                    if layout is None:
                        unknown.append(f"{key} of {label}")
                    elif layout == "shared":
                        kept.append(f"{key} of {label}")
                    else:  # the factor keeps the channel axis: its slices are the channels'
                        fresh = FRESH.get(key)
                        at = idx.to(value.device)
                        value.index_fill_(dim, at, fresh(group) if fresh else 0.0)
                        zeroed += 1
        return zeroed, copied, kept, unknown


def _listed(optimizer: Any, param: torch.Tensor) -> list[tuple[str, torch.Tensor | None]]:
    """The tensors for ``param`` in lists that ``optimizer`` keeps as attributes of its own
    beside its ``state`` (a Lookahead's ``self.slow_weights = [[p.clone() for p in
    g["params"]] for g in param_groups]``), as ``(attribute, tensor)``. A list is matched
    to the parameters by position only when it mirrors them exactly: one list per param
    group holding as many tensors as the group holds parameters (or one flat list of every
    group's parameters in order), each of its parameter's shape. A list laid out otherwise
    (a group added since, ``add_param_group``) that holds a tensor of ``param``'s shape,
    not a parameter itself, gives ``(attribute, None)``: its part for ``param`` is not
    known. ``param_groups``, ``state`` and ``defaults`` are not looked at."""
    try:
        own = vars(optimizer)
        params = [list(g["params"]) for g in optimizer.param_groups]
    except (TypeError, AttributeError, KeyError):
        return []
    flat = [p for group in params for p in group]
    where = [(i, j) for i, group in enumerate(params) for j, p in enumerate(group) if p is param]
    if not where:
        return []
    held = {id(p) for p in flat}
    out: list[tuple[str, torch.Tensor | None]] = []
    for name, value in own.items():
        if name in ("param_groups", "state", "defaults") or not isinstance(value, list):
            continue
        if not value or not holds_tensor(value, LIST_DEPTH):
            continue
        if _mirrors(value, params):
            out.append((name, value[where[0][0]][where[0][1]]))
        elif _mirrors([value], [flat]):
            out.append((name, value[next(k for k, p in enumerate(flat) if p is param)]))
        elif _shaped_like(value, param, held, LIST_DEPTH):
            out.append((name, None))
    return out


def _shaped_like(value: Any, param: torch.Tensor, params: set[int], depth: int) -> bool:
    """Whether ``value`` is, or holds in lists and tuples ``depth`` deep, a tensor of
    ``param``'s shape that is none of the parameters (ids in ``params``)."""
    if isinstance(value, torch.Tensor):
        return value.shape == param.shape and id(value) not in params
    if depth <= 0 or not isinstance(value, (list, tuple)):
        return False
    return any(_shaped_like(v, param, params, depth - 1) for v in value)


def _mirrors(lists: list[Any], params: list[list[torch.Tensor]]) -> bool:
    """Whether ``lists`` holds, for each list of ``params``, a list (or tuple) of as many
    tensors, each of its parameter's shape."""
    if len(lists) != len(params):
        return False
    for held, group in zip(lists, params, strict=True):
        if not isinstance(held, (list, tuple)) or len(held) != len(group):
            return False
        for value, p in zip(held, group, strict=True):
            if not isinstance(value, torch.Tensor) or value.shape != p.shape:
                return False
    return True


def _factor_layout(
    value: torch.Tensor, param: torch.Tensor, dim: int
) -> Literal["channels", "shared"] | None:
    """How a state tensor not of ``param``'s shape lies along its channel axis ``dim``:
    ``"channels"`` for a factor of the parameter's shape that keeps that axis (Adafactor's
    ``row_var``: ``(out, 1)`` for an ``(out, in)`` weight, ``(out, in, kh, 1)`` for a
    Conv's; the channels' slices are theirs), ``"shared"`` for one reduced over it (one
    value for all the channels: a Linear weight's ``col_var`` along its output axis), None
    for a tensor that is no factor (as many dimensions, each the parameter's size or
    reduced to 1)."""
    if value.dim() != param.dim():
        return None
    if any(v not in (1, p) for v, p in zip(value.shape, param.shape, strict=True)):
        return None
    return "channels" if value.shape[dim] == param.shape[dim] else "shared"


def _holds(group: dict[str, Any], param: torch.Tensor) -> bool:
    """Whether a param group holds ``param`` (by identity: ``in`` compares tensors)."""
    return any(p is param for p in group.get("params", ()))


def _same_memory(value: torch.Tensor, param: torch.Tensor) -> bool:
    """Whether ``value`` lies in ``param``'s memory (``p.data = old_p`` makes them one)."""
    try:
        return (
            value.device == param.device
            and value.untyped_storage().data_ptr() == param.untyped_storage().data_ptr()
        )
    except (RuntimeError, NotImplementedError):  # a tensor without storage (a fake one)
        return value is param
