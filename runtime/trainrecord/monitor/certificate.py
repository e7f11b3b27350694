"""Certificates: channels proven dead from the weights and the structure.

A channel ``c`` of a producer ``P`` followed by a ReLU ``R`` is dead for every finite input
when the tensor ``R`` receives is ``<= 0`` whatever the input, and no gradient can reach the
parameters that decide it:

* with a training-mode BatchNorm ``B`` after ``P``: ``beta_c <= 0`` and either
  ``gamma_c == 0`` (``B`` outputs ``beta_c``), or ``P``'s incoming weights and bias of ``c``
  are all zero (``P`` outputs exactly 0, batch statistics give ``x_hat = 0``, ``B`` outputs
  ``beta_c``);
* without a BatchNorm: ``P``'s incoming weights of ``c`` are all zero and its bias is
  ``<= 0`` (or absent).

The ReLU's derivative at a value ``<= 0`` is 0, so when ``R`` is the only consumer of that
tensor no gradient reaches gamma, beta or the incoming weights. They stay put when the
optimizer's state of those slices is zero and weight decay only shrinks them toward zero
without crossing it. Each condition checked here is listed in ``assumes``; when channels
look dead from their weights but a condition fails, a ``certificate_refused`` event says
which (once per layer and reason).

Only channels observed constant or silent at the check are examined (a dead channel is
both), so a healthy network costs nothing here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from trainrecord.monitor.gradients import class_name, holders
from trainrecord.monitor.structure import (
    Structure,
    affine_of,
    bias_of,
    computed_parts,
    out_axis,
    weight_of,
)

MOMENTUM_KEYS = ("momentum_buffer", "exp_avg")
"""Optimizer-state entries that move a parameter when its gradient is zero."""
KNOWN_OPTIMIZERS = ("SGD", "Adam", "AdamW")


@dataclass
class Producer:
    """A producer layer and what the structure says about it."""

    name: str
    module: nn.Module
    batchnorm: str | None
    bn_module: nn.Module | None
    relu: str | None
    relu_sole: bool
    single_consumer: bool
    calls: int
    other_norm: str | None = None  # a GroupNorm (or other unpaired norm) taking its output
    other_norm_module: nn.Module | None = None
    other_activation: tuple[str, str] | None = None  # (name, class) of a non-ReLU activation
    recomputed: bool = False  # run inside a reentrant activation checkpoint: dataflow unseen
    shared: tuple[str, str] | None = None  # a parameter it owns or its BatchNorm's, and
    # the others holding it, in words (tied weights: see gradients.holders)

    def static_reason(self) -> str | None:
        """Why this producer can never be certified, or None when it can be."""
        if self.recomputed:
            return (
                f"{self.name} ran inside a reentrant activation checkpoint "
                "(torch.utils.checkpoint with use_reentrant=True: its forward pass runs "
                "without gradients and again inside backward), whose dataflow the monitor "
                "cannot see: its BatchNorm and ReLU are unknown; with use_reentrant=False "
                "it is measured and certified as without a checkpoint"
            )
        if self.relu is None and self.other_norm is not None:
            kind = class_name(self.other_norm_module) if self.other_norm_module else "norm"
            return (
                f"the output of {self.name} goes through the {kind} {self.other_norm}, which "
                "is not paired (only a BatchNorm is: the record's batchnorm field), so no "
                "ReLU receives it unmodified"
            )
        if self.relu is None and self.other_activation is not None:
            name, kind = self.other_activation
            return (
                f"the output of {self.batchnorm or self.name} goes to the {kind} {name}, not a "
                "ReLU (only a ReLU's zero output means no gradient flows back)"
            )
        if self.relu is None:
            return (
                f"no ReLU (module or F.relu) receives the output of "
                f"{self.batchnorm or self.name} unmodified"
            )
        if not self.relu_sole:
            return (
                f"the ReLU {self.relu} is not the only consumer of the output of "
                f"{self.batchnorm or self.name}: another path can carry gradient back"
            )
        if self.calls > 1:
            return f"{self.name} is called {self.calls} times per forward pass (shared weights)"
        if self.shared is not None:
            role, others = self.shared
            return (
                f"a parameter of {self.name} ({role}) is shared with {others}: gradient "
                f"reaches it through that other use, whatever the ReLU {self.relu} passes "
                "back"
            )
        parts = [(self.module, self.name), (self.bn_module, self.batchnorm)]
        computed = next(computed_parts(parts), None)
        if computed is not None:
            owner, role = computed
            return (
                f"the {role} of {owner} is computed from other parameters (a "
                "parametrization, weight norm or pruning mask): the proof would rest on a "
                "copy, which the parameters it is computed from can move"
            )
        return None


def producers_from(
    structure: Structure,
    modules: dict[str, nn.Module],
    names: list[str],
    owners: dict[int, list[str]],
) -> list[Producer]:
    """Producer descriptions for the named producers (Conv, ConvTranspose, Linear);
    ``owners``: the layers holding each parameter (see
    :func:`~trainrecord.monitor.gradients.parameter_owners`)."""
    out = []
    for name in names:
        bn = structure.pairs.get(name)
        measured = bn or name
        out.append(
            Producer(
                name=name,
                module=modules[name],
                batchnorm=bn,
                bn_module=modules.get(bn) if bn else None,
                relu=structure.relu_of.get(measured),
                relu_sole=structure.relu_sole.get(measured, False),
                single_consumer=structure.single_consumer.get(name, False),
                calls=structure.calls.get(name, 0),
                other_norm=structure.other_norm.get(name),
                other_activation=_activation(structure, modules, measured),
                other_norm_module=modules.get(structure.other_norm.get(name, "")),
                recomputed=name in structure.recomputed,
                shared=_shared(name, modules, bn, owners),
            )
        )
    return out


def _shared(
    name: str, modules: dict[str, nn.Module], bn: str | None, owners: dict[int, list[str]]
) -> tuple[str, str] | None:
    """The first parameter a proof or a repair of ``name``'s channels rests on (its weight
    and bias, its BatchNorm's) that another module (or the model itself) holds too, and
    those holders in words."""
    held = [(name, role, modules[name]._parameters.get(role)) for role in ("weight", "bias")]
    if bn is not None:
        held += [(bn, role, modules[bn]._parameters.get(role)) for role in ("weight", "bias")]
    for owner, role, param in held:
        others = [m for m in owners.get(id(param), []) if m != owner]
        if isinstance(param, nn.Parameter) and others:
            return (role if owner == name else f"{owner}'s {role}"), holders(others, modules)
    return None


def _activation(
    structure: Structure, modules: dict[str, nn.Module], layer: str
) -> tuple[str, str] | None:
    """The name and class of the non-ReLU activation module ``layer``'s output goes to."""
    name = structure.other_activation.get(layer)
    return (name, class_name(modules[name])) if name in modules else None


def _state_slices_zero(
    optimizer: torch.optim.Optimizer | None, params: list[tuple[torch.Tensor, torch.Tensor, int]]
) -> list[str]:
    """Names of optimizer-state entries that are non-zero on the given (param, index, axis)
    slices."""
    if optimizer is None:
        return []
    moving = []
    for param, index, axis in params:
        state = optimizer.state.get(param, {})
        for key in MOMENTUM_KEYS:
            value = state.get(key)
            if (
                isinstance(value, torch.Tensor)
                and value.shape == param.shape
                and bool(value.index_select(axis, index).ne(0).any())
            ):
                moving.append(key)
    return sorted(set(moving))


def _group_of(optimizer: torch.optim.Optimizer, param: torch.Tensor) -> dict[str, Any] | None:
    for group in optimizer.param_groups:
        if any(p is param for p in group["params"]):
            return group
    return None


def _decay_reason(
    optimizer: torch.optim.Optimizer | None, params: list[torch.Tensor]
) -> tuple[str | None, list[str]]:
    """(refusal reason, assumptions) about how the optimizer moves zero-gradient params."""
    if optimizer is None:
        return None, [
            "no optimizer was given and none was seen stepping the model's parameters yet: "
            "nothing but gradients changes these weights"
        ]
    kind = type(optimizer).__name__
    if kind not in KNOWN_OPTIMIZERS:
        return (
            f"optimizer {kind} is not one whose update of a zero-gradient parameter is "
            f"known to the monitor ({', '.join(KNOWN_OPTIMIZERS)})"
        ), []
    assumes: list[str] = []
    for param in params:
        group = _group_of(optimizer, param)
        if group is None:
            return "a parameter of these channels is not in the optimizer", []
        wd = float(group.get("weight_decay", 0.0) or 0.0)
        lr = (
            float(group["lr"])
            if not isinstance(group["lr"], torch.Tensor)
            else float(group["lr"].item())
        )
        if wd == 0.0:
            continue
        if kind == "Adam":
            return (
                "Adam with weight_decay > 0 adds the decay to the gradient and the adaptive "
                "step can carry a parameter past zero"
            ), []
        momentum = float(group.get("momentum", 0.0) or 0.0) if kind == "SGD" else 0.0
        limit = (1.0 - math.sqrt(momentum)) ** 2 if momentum > 0 else 1.0
        if lr * wd >= limit:
            return (
                f"lr x weight_decay = {lr * wd:.3g} is not below {limit:.3g}: weight decay "
                "could carry a parameter past zero"
            ), []
        text = (
            f"weight decay only shrinks these parameters toward zero: lr x weight_decay "
            f"stays below {limit:.3g} (it is {lr * wd:.3g} at this step)"
        )
        if text not in assumes:
            assumes.append(text)
    if not assumes:
        assumes.append("no weight decay applies to these parameters (weight_decay = 0)")
    return None, assumes


@dataclass
class Certifier:
    """Checks candidate channels, writes certificates and refusals."""

    optimizer: torch.optim.Optimizer | None
    list_limit: int = 16
    unknown: str | None = None
    """Why the optimizer stepping the model is not known now (several replaced the one
    followed): every certificate is refused with this reason while it is set."""
    refused: set[tuple[str, str]] = field(default_factory=set)
    certified: dict[str, tuple[int, ...]] = field(default_factory=dict)
    silent_by_weights: dict[str, set[int]] = field(default_factory=dict)
    """Per producer, the candidates of the last check whose weights make the ReLU's input
    <= 0 for every input now (gamma = 0 and beta <= 0; or all-zero incoming weights and
    bias with beta <= 0 under a training-mode BatchNorm, bias <= 0 without one), whether or
    not the optimizer lets a certificate hold: silent now without counting values."""

    def check(
        self, step: int, producer: Producer, candidates: list[int]
    ) -> tuple[set[int], list[tuple[str, dict[str, Any]]]]:
        """Certified channels among ``candidates`` (observed constant or silent), and events."""
        self.silent_by_weights[producer.name] = set()
        if not candidates:
            self.certified.pop(producer.name, None)
            return set(), []
        routes = self._dead_from_weights(producer, candidates)
        bn = producer.bn_module
        self.silent_by_weights[producer.name] = {
            c for c, route in routes.items() if route == "gamma" or bn is None or bn.training
        }
        if not routes:
            self.certified.pop(producer.name, None)
            return set(), []
        channels = sorted(routes)
        reason, assumes = self._conditions(producer, routes)
        if reason is not None:
            self.certified.pop(producer.name, None)
            key = (producer.name, reason)
            if key in self.refused:
                return set(), []
            self.refused.add(key)
            return set(), [
                (
                    "certificate_refused",
                    {
                        "step": step,
                        "severity": "info",
                        "layer": producer.name,
                        "batchnorm": producer.batchnorm,
                        "count": len(channels),
                        "reason": reason,
                    },
                )
            ]
        if self.certified.get(producer.name) == tuple(channels):
            return set(channels), []
        self.certified[producer.name] = tuple(channels)
        return set(channels), [
            (
                "certificate",
                {
                    "step": step,
                    "severity": "proof",
                    "layer": producer.name,
                    "batchnorm": producer.batchnorm,
                    "channels": channels[: self.list_limit],
                    "count": len(channels),
                    "statement": self._statement(producer, routes, step),
                    "assumes": assumes,
                },
            )
        ]

    def _dead_from_weights(self, producer: Producer, candidates: list[int]) -> dict[int, str]:
        """channel -> route ("gamma" or "weights") for channels dead from their weights."""
        module, bn = producer.module, producer.bn_module
        weight, module_bias, affine = weight_of(module), bias_of(module), affine_of(bn)
        index = torch.tensor(candidates, dtype=torch.long, device=weight.device)
        with torch.no_grad():
            axis = out_axis(module)
            rows = weight.index_select(axis, index).movedim(axis, 0)
            w_zero = rows.flatten(1).eq(0).all(dim=1)
            bias = module_bias.index_select(0, index) if module_bias is not None else None
            routes: dict[int, str] = {}
            if affine is not None:
                bn_weight, bn_bias = affine
                gamma = bn_weight.index_select(0, index.to(bn_weight.device))
                beta = bn_bias.index_select(0, index.to(bn_weight.device))
                b_zero = bias.eq(0) if bias is not None else torch.ones_like(w_zero)
                gamma_route = (gamma.eq(0) & beta.le(0)).tolist()
                weight_route = (
                    w_zero.to(beta.device) & b_zero.to(beta.device) & beta.le(0)
                ).tolist()
            elif bn is None:
                b_le = bias.le(0) if bias is not None else torch.ones_like(w_zero)
                gamma_route = [False] * len(candidates)
                weight_route = (w_zero & b_le).tolist()
            else:
                return {}
        for c, g, w in zip(candidates, gamma_route, weight_route, strict=True):
            if g:
                routes[c] = "gamma"
            elif w:
                routes[c] = "weights"
        return routes

    def _conditions(
        self, producer: Producer, routes: dict[int, str]
    ) -> tuple[str | None, list[str]]:
        static = producer.static_reason()
        if static is not None:
            return static, []
        bn, module = producer.bn_module, producer.module
        if bn is not None and not bn.training:
            return (
                f"BatchNorm {producer.batchnorm} is in eval mode: the proof needs batch statistics",
                [],
            )
        uses_weights = any(r == "weights" for r in routes.values())
        if uses_weights and not producer.single_consumer:
            return (
                f"the output of {producer.name} has another consumer besides "
                f"{producer.batchnorm or producer.relu}: gradient can reach its weights"
            ), []
        weight, bias = weight_of(module), bias_of(module)
        all_index = torch.tensor(sorted(routes), dtype=torch.long, device=weight.device)
        slices: list[tuple[torch.Tensor, torch.Tensor, int]] = []
        params: list[torch.Tensor] = []
        if bn is not None:
            affine = affine_of(bn)
            # routes come from the BatchNorm's weight and bias: without them (affine=False)
            # _dead_from_weights found none, and check() returned before asking
            assert affine is not None
            bn_weight, bn_bias = affine
            bn_index = all_index.to(bn_weight.device)
            slices += [(bn_weight, bn_index, 0), (bn_bias, bn_index, 0)]
            params += [bn_weight, bn_bias]
        if uses_weights or bn is None:
            slices.append((weight, all_index, out_axis(module)))
            params.append(weight)
            if bias is not None:
                slices.append((bias, all_index, 0))
                params.append(bias)
        if self.unknown is not None:
            return self.unknown, []
        moving = _state_slices_zero(self.optimizer, slices)
        if moving:
            return (
                f"the optimizer state ({', '.join(moving)}) of these channels is not zero: "
                "it would still move them"
            ), []
        reason, decay = _decay_reason(self.optimizer, params)
        if reason is not None:
            return reason, []
        assumes = []
        if bn is not None:
            assumes.append(
                f"BatchNorm {producer.batchnorm} stays in training mode (batch statistics)"
            )
        assumes.append(
            f"the ReLU {producer.relu} stays the only consumer of the output of "
            f"{producer.batchnorm or producer.name}, as in the first sampled step's dataflow"
        )
        if uses_weights and bn is not None:
            assumes.append(f"{producer.name} stays the only consumer feeding {producer.batchnorm}")
        name = type(self.optimizer).__name__ if self.optimizer is not None else "none"
        assumes.append(
            f"the optimizer ({name}) state of these channels is zero at this step "
            "(no momentum_buffer or exp_avg left to move them)"
        )
        assumes += decay
        assumes.append(
            "nothing outside the optimizer changes these weights (no manual edit, "
            "checkpoint load or repair)"
        )
        assumes.append("the inputs are finite")
        return None, assumes

    @staticmethod
    def _statement(producer: Producer, routes: dict[int, str], step: int) -> str:
        gamma = sum(1 for r in routes.values() if r == "gamma")
        weights = len(routes) - gamma
        parts = []
        if producer.bn_module is not None:
            if gamma:
                parts.append(
                    f"{gamma} have BatchNorm weight 0 and bias <= 0, so "
                    f"{producer.batchnorm} outputs their bias"
                )
            if weights:
                parts.append(
                    f"{weights} have all-zero incoming weights and bias in "
                    f"{producer.name} and BatchNorm bias <= 0, so {producer.batchnorm} "
                    "outputs their bias"
                )
        else:
            parts.append(
                f"{weights} have all-zero incoming weights and bias <= 0, so "
                f"{producer.name} outputs their bias"
            )
        return (
            f"At step {step}, {len(routes)} channels of {producer.name} output exactly 0 after "
            f"the ReLU {producer.relu} for every finite input: {'; '.join(parts)}; the ReLU "
            "passes no gradient at a value <= 0, so their parameters stay where they are."
        )
