"""The model's structure, learnt from the dataflow of the first sampled step.

Forward pre- and post-hooks on every leaf module, installed for the forward pass of the
first check step only, note which autograd node each module received and produced. A
BatchNorm whose input is a producer's (Conv, ConvTranspose, Linear) output node is paired with it; a ReLU
whose input is a layer's output node follows that layer (``relu_after``). Walking the
autograd graph from ``loss.grad_fn`` (or from the model's outputs when no loss tensor is
given) counts the consumers of every node: a ReLU is the *only* consumer of a layer when
the layer's output node has exactly one parent and that parent is the ReLU's node. From
the ReLU's output, channel-preserving steps (pooling and dropout modules, functional
pooling such as ``F.max_pool2d``, a mean or sum over the positions, a flatten) lead to the
module that consumes the channels (its input weights are the outgoing weights a
function-preserving repair zeroes; after a flatten of maps of ``S`` positions, channel
``c`` is the consumer's input columns ``c*S`` to ``c*S + S - 1``). With gradient accumulation the first check step runs
several forward passes; the structure is that of the one the graph belongs to.

A forward pass of the model that raises (a bad batch the loop skips, an out-of-memory
error it catches before retrying the batch) is forgotten as it raises: its calls are
dropped (its nodes are in no loss graph; kept, each of its ReLUs looked like a second
consumer of its layer, and the producers lost their certificate and repair for the whole
run). A forward-hook with ``always_call`` notices the exception: torch runs it for an
``Exception``, not for a ``KeyboardInterrupt`` (caught in a notebook, training then
resumed); such a pass is found at the next pass of the model or at the check, its frame no
longer on the stack (:func:`drop_ended`), and forgotten then. Passes are those of the
model's ``__call__``: a model run piecewise, or through ``model.forward(x)``, has none, and
every call is taken.

Activation checkpointing runs modules again inside backward. Those recomputations are not
forward passes and are left out. Reentrant checkpointing (``use_reentrant=True``) runs its
modules' forward pass under ``no_grad``, so a module seen only in a recomputation ran inside
such a checkpoint: its dataflow is hidden (``Structure.recomputed``), and nothing is
learnt or certified from it. Non-reentrant checkpointing runs the forward pass with
gradients: its structure is learnt as without a checkpoint.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, cast

import torch
from torch import nn
from torch.nn.modules.module import (
    register_module_forward_hook,
    register_module_forward_pre_hook,
)
from torch.nn.utils import parametrize

PRODUCERS: tuple[type[nn.Module], ...] = (
    nn.Conv1d,
    nn.Conv2d,
    nn.Conv3d,
    nn.ConvTranspose1d,
    nn.ConvTranspose2d,
    nn.ConvTranspose3d,
    nn.Linear,
)
"""Modules whose output channels are checked (a transposed convolution with ``groups`` > 1
aside: see :func:`is_producer`)."""


def is_producer(module: nn.Module) -> bool:
    """Whether ``module`` is a channel producer: a Conv, Linear, or transposed convolution
    of one group (a grouped one's weight interleaves its output channels by group)."""
    if isinstance(module, nn.modules.conv._ConvTransposeNd):
        return module.groups == 1
    return isinstance(module, PRODUCERS)


def out_axis(module: nn.Module) -> int:
    """The axis of ``module.weight`` that indexes output channels: 1 for a transposed
    convolution (in, out, ...), else 0."""
    return 1 if isinstance(module, nn.modules.conv._ConvTransposeNd) else 0


def in_axis(module: nn.Module) -> int:
    """The axis of ``module.weight`` that indexes input channels (see :func:`out_axis`)."""
    return 1 - out_axis(module)


def out_channels(module: nn.Module) -> int:
    """A producer's number of output channels."""
    return int(weight_of(module).shape[out_axis(module)])


# ``nn.Module`` types every attribute it looks up (parameters, buffers, submodules) as
# ``Tensor | Module``: these read the ones the monitor uses, typed as what they are.


def read(module: nn.Module, name: str) -> Any:
    """``module``'s attribute ``name`` as its forward pass uses it (None when it has none),
    read without changing anything: a parametrized one (``torch.nn.utils.parametrize``) is
    computed with its parametrization's modules in eval mode. In training mode
    ``parametrizations.spectral_norm`` runs a power iteration at every read, moving its
    ``_u`` and ``_v`` buffers: the Monitor's reads at a check changed the weights the run
    trained (a run with a watch-only Monitor differed from the same run without one)."""
    if not parametrize.is_parametrized(module, name):
        return getattr(module, name, None)
    parts = cast(nn.ModuleDict, module.parametrizations)[name]
    modes = [(part, part.training) for part in parts.modules()]
    try:
        for part, _ in modes:
            part.training = False
        return getattr(module, name)
    finally:
        for part, mode in modes:
            part.training = mode


def own_parameter(module: nn.Module, name: str) -> bool:
    """Whether ``module``'s attribute ``name`` is a Parameter it holds itself, not one
    computed from others at each forward pass (a parametrization, ``weight_norm``, a
    pruning mask's ``weight_orig * weight_mask``). Nothing is computed to tell."""
    return isinstance(module._parameters.get(name), nn.Parameter)


def computed(module: nn.Module, name: str) -> bool:
    """Whether ``module``'s attribute ``name`` is a tensor computed from other parameters at
    each forward pass (see :func:`own_parameter`), not a Parameter it holds, nor absent (``bias=False``,
    a BatchNorm with ``affine=False``)."""
    if own_parameter(module, name):
        return False
    if parametrize.is_parametrized(module, name):
        return True
    return name not in module._parameters and isinstance(getattr(module, name, None), torch.Tensor)


def computed_parts(
    parts: list[tuple[nn.Module | None, str | None]],
) -> Iterator[tuple[str, str]]:
    """(name, role) of each weight and bias of the named modules ``parts`` (a producer, its
    BatchNorm) that is computed (see :func:`computed`)."""
    for module, name in parts:
        if module is None or name is None:
            continue
        for role in ("weight", "bias"):
            if computed(module, role):
                yield name, role


def weight_of(module: nn.Module) -> torch.Tensor:
    """The weight of a producer or of a consumer (Conv, ConvTranspose, Linear: they always
    have one; a parametrization's is a computed tensor, not a Parameter: see :func:`read`)."""
    return cast(torch.Tensor, read(module, "weight"))


def bias_of(module: nn.Module) -> torch.Tensor | None:
    """The bias of a producer or of a consumer; None when it has none (``bias=False``)."""
    return cast("torch.Tensor | None", read(module, "bias"))


def affine_of(bn: nn.Module | None) -> tuple[torch.Tensor, torch.Tensor] | None:
    """A BatchNorm's (weight, bias); None without a BatchNorm, or when it has neither
    (``affine=False``)."""
    if bn is None:
        return None
    weight = read(bn, "weight")
    if weight is None:
        return None
    return cast(torch.Tensor, weight), cast(torch.Tensor, read(bn, "bias"))


def running_stats_of(bn: nn.Module) -> tuple[torch.Tensor, torch.Tensor] | None:
    """A BatchNorm's (running_mean, running_var); None when it keeps none
    (``track_running_stats=False``)."""
    if getattr(bn, "running_mean", None) is None:
        return None
    return cast(torch.Tensor, bn.running_mean), cast(torch.Tensor, bn.running_var)


BATCHNORMS: tuple[type[nn.Module], ...] = (
    nn.BatchNorm1d,
    nn.BatchNorm2d,
    nn.BatchNorm3d,
    nn.SyncBatchNorm,  # (convert_sync_batchnorm for DDP: statistics over every rank's batch)
)
OTHER_NORMS: tuple[type[nn.Module], ...] = (
    nn.GroupNorm,
    nn.InstanceNorm1d,
    nn.InstanceNorm2d,
    nn.InstanceNorm3d,
    nn.LayerNorm,
    nn.LocalResponseNorm,
)
"""Normalisations that are not paired (the record's field is ``batchnorm``): a producer whose
output they take is named in its reason. A GroupNorm normalises a zero channel against its
group (the zero-weights route of a certificate fails) and re-initialising one channel changes
its group's statistics (a repair is never function-preserving under it)."""
RELUS: tuple[type[nn.Module], ...] = (nn.ReLU, nn.ReLU6)
"""ReLU modules: ReLU6 (MobileNet's) is a ReLU clipped at 6, the same below 0 (output and
derivative 0), so silence, certificates and repair hold for it as for a ReLU."""
FUNCTIONAL_RELU = "F.relu"
"""The ``relu`` of a layer whose output goes to ``torch.relu``/``F.relu`` (no module) alone."""
RELU_NODES = frozenset({"ReluBackward0", "ReluBackward1"})
"""Autograd nodes of relu and relu_ (how a functional ReLU shows in the graph)."""
CHANNEL_PRESERVING: tuple[type[nn.Module], ...] = (
    nn.MaxPool1d,
    nn.MaxPool2d,
    nn.MaxPool3d,
    nn.AvgPool1d,
    nn.AvgPool2d,
    nn.AvgPool3d,
    nn.AdaptiveAvgPool1d,
    nn.AdaptiveAvgPool2d,
    nn.AdaptiveAvgPool3d,
    nn.AdaptiveMaxPool1d,
    nn.AdaptiveMaxPool2d,
    nn.AdaptiveMaxPool3d,
    nn.Dropout,
    nn.Dropout1d,
    nn.Dropout2d,
    nn.Dropout3d,
    nn.Identity,
)
POOLING_NODES = frozenset(
    {
        "MaxPool2DWithIndicesBackward0",
        "MaxPool3DWithIndicesBackward0",
        "AvgPool2DBackward0",
        "AvgPool3DBackward0",
        "AdaptiveAvgPool2DBackward0",
        "AdaptiveAvgPool3DBackward0",
        "AdaptiveMaxPool2DBackward0",
        "AdaptiveMaxPool3DBackward0",
    }
)
"""Autograd nodes of functional pooling over the positions of each channel (``F.max_pool2d``
and the like): a channel that is zero everywhere stays zero everywhere."""
REDUCE_NODES = frozenset({"MeanBackward1", "SumBackward1"})
"""``x.mean(dims)`` and ``x.sum(dims)``: channel-preserving when only positions are reduced."""
VIEW_NODES = frozenset({"ViewBackward0", "UnsafeViewBackward0"})
"""``torch.flatten``, ``x.view``, ``x.reshape`` (logical order, whatever the memory format)."""
COPY_NODES = frozenset({"CloneBackward0"})
"""A copy (``contiguous()``, the one before a reshape of a channels_last tensor)."""


def is_other_activation(module: nn.Module) -> bool:
    """An activation module that is not a ReLU (GELU, SiLU, Hardswish, LeakyReLU...): its
    zero output does not mean no gradient, so it proves no channel silent."""
    return type(module).__module__ == "torch.nn.modules.activation" and not isinstance(
        module, (*RELUS, nn.MultiheadAttention)
    )


def in_transform() -> bool:
    """Whether a torch.func transform (``vmap``, ``grad``...) is running: its tensors are
    wrappers that must not escape it, and they belong to the transform's parameters (a
    ``functional_call`` ensemble's stacked copies), not the module's own."""
    return torch._C._functorch.maybe_current_level() is not None


def tensors_in(value: Any) -> Iterator[torch.Tensor]:
    """Every tensor in a module's input or output (a tensor, or tuples, lists and dicts of
    them), in order."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from tensors_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors_in(item)


def first_tensor(value: Any) -> torch.Tensor | None:
    """The first tensor in a module's input or output (see :func:`tensors_in`)."""
    if isinstance(value, torch.Tensor):  # (the usual case, without a generator)
        return value
    return next(tensors_in(value), None)


@dataclass
class Structure:
    """What the first sampled step showed about the model's dataflow."""

    pairs: dict[str, str] = field(default_factory=dict)
    relu_after: list[str] = field(default_factory=list)
    relu_of: dict[str, str] = field(default_factory=dict)
    relu_sole: dict[str, bool] = field(default_factory=dict)
    single_consumer: dict[str, bool] = field(default_factory=dict)
    consumer: dict[str, str] = field(default_factory=dict)
    consumer_block: dict[str, int] = field(default_factory=dict)  # input columns per channel
    calls: dict[str, int] = field(default_factory=dict)
    graph: str | None = None
    relu_nodes: dict[str, Any] = field(default_factory=dict)  # functional ReLUs' graph nodes
    other_norm: dict[str, str] = field(default_factory=dict)  # producer -> GroupNorm etc.
    other_activation: dict[str, str] = field(default_factory=dict)  # layer -> GELU etc.
    # modules run with gradients only when recomputed in backward (a reentrant checkpoint)
    recomputed: set[str] = field(default_factory=set)

    def event(self, step: int) -> dict[str, Any]:
        """The fields of the structure event."""
        return {
            "step": step,
            "pairs": dict(self.pairs),
            "relu_after": list(self.relu_after),
            "graph": self.graph,
        }


@dataclass
class _Call:
    module: str
    kind: nn.Module
    input: Any
    output: Any
    spatial: int


@dataclass
class _Running:
    """A forward pass of the model that has begun: how much was recorded before it."""

    calls: int
    ends: int
    frame: FrameType | None  # the frame that called the model's hooks: live while it runs
    returned: bool = False


def drop_ended(running: list[Any]) -> list[Any]:
    """Pop from the top of ``running`` (forward passes of the model begun and not ended,
    innermost last, each with the ``frame`` that called its pre-hook) the passes whose
    frame is no longer on the stack; return them, innermost first. torch calls its
    always-called forward hooks for an ``Exception`` only: a pass that a
    ``KeyboardInterrupt`` ended (Ctrl+C, caught by the loop, training then resumed) is
    found here, at the next pass of the model or at the check."""
    if not running:
        return []
    live: set[int] = set()
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        live.add(id(frame))
        frame = frame.f_back
    ended = []
    while running and id(running[-1].frame) not in live:
        ended.append(running.pop())
    return ended


class StructureProbe:
    """Hooks for one forward pass that record which module fed which."""

    def __init__(self, modules: dict[str, nn.Module], root: nn.Module) -> None:
        self.modules = modules
        self.calls: list[_Call] = []
        self._pending: dict[int, list[tuple[Any, int]]] = {}
        self._outputs: list[torch.Tensor] = []
        self._ends: list[int] = []  # len(calls) at the end of each forward pass of the model
        self._running: list[_Running] = []  # the model's forward passes begun, not ended
        self._recorded: list[_Call] | None = None  # every call, once finish() began
        self._names: dict[int, str] = {}
        self.transformed = False  # a forward pass ran under a torch.func transform: unseen
        self._in_backward: set[str] = set()  # modules run again inside backward
        for name, module in modules.items():
            # leaves, and the layers the structure is about even when they have children
            # (a Conv under torch.nn.utils.parametrizations.weight_norm holds its
            # parametrization as a child module)
            if name and (
                isinstance(module, PRODUCERS + BATCHNORMS + RELUS)
                or not any(True for _ in module.children())
            ):
                self._names[id(module)] = name
        self._root_module = root
        self._handles: list[Any] = []  # (see install)

    def install(self) -> None:
        """Install the hooks: global hooks, matched by identity, so nothing is stored on the
        model's modules (a torch.save(model) or copy.deepcopy(model) meanwhile sees no trace
        of the probe). Called once its holder keeps the probe, and each handle kept as it is
        made: Ctrl+C anywhere in the arming leaves no hook that remove() cannot reach."""
        self._handles.append(register_module_forward_pre_hook(self._pre))
        self._handles.append(register_module_forward_hook(self._post))
        # after _post: run when the model's forward pass raised too (torch >= 2.1)
        self._handles.append(register_module_forward_hook(self._exit, always_call=True))

    def _pre(self, module: nn.Module, args: Any) -> None:
        if module is self._root_module:
            for ended in drop_ended(self._running):  # Ctrl+C ended it: no hook saw that
                self._forget(ended)
            self._running.append(_Running(len(self.calls), len(self._ends), sys._getframe(1)))
        if id(module) not in self._names or not torch.is_grad_enabled():
            return
        if in_transform():
            self.transformed = True
            return
        if torch._C._current_graph_task_id() != -1:  # a checkpoint's recomputation
            self._in_backward.add(self._names[id(module)])
            return
        tensor = first_tensor(args)
        node = tensor.grad_fn if tensor is not None else None
        spatial = 1
        if tensor is not None and tensor.dim() > 2:
            for size in tensor.shape[2:]:
                spatial *= int(size)
        self._pending.setdefault(id(module), []).append((node, spatial))

    def _post(self, module: nn.Module, args: Any, output: Any) -> None:
        if module is self._root_module:
            if self._running:
                self._running[-1].returned = True
            self._root(output)
        name = self._names.get(id(module))
        if name is None or not torch.is_grad_enabled() or in_transform():
            return
        stack = self._pending.get(id(module))
        if not stack or torch._C._current_graph_task_id() != -1:
            return
        node, spatial = stack.pop()
        tensor = first_tensor(output)
        out_node = tensor.grad_fn if tensor is not None else None
        self.calls.append(_Call(name, module, node, out_node, spatial))

    def _exit(self, module: nn.Module, args: Any, output: Any) -> None:
        """The end of a module's forward pass, returned or raised: a forward pass of the
        model that raised (a bad batch, an out-of-memory error the loop catches, then skips
        or retries the batch) is forgotten. Its nodes are in no loss graph: kept, they made
        each of its ReLUs look like a second consumer of its layer and every module look
        called twice, for the whole run."""
        if module is not self._root_module:
            return
        for ended in drop_ended(self._running):  # (Ctrl+C inside this pass, caught in it)
            self._forget(ended)
        if not self._running:
            return
        running = self._running.pop()
        running.frame = None
        if not running.returned:
            self._forget(running)

    def _forget(self, running: _Running) -> None:
        """Forget a forward pass of the model that did not return, and what followed it."""
        del self.calls[running.calls :]
        del self._ends[running.ends :]
        del self._outputs[running.ends :]
        if not self._running:  # (what the modules that raised left begun)
            self._pending.clear()

    def _root(self, output: Any) -> None:
        if in_transform():
            return
        tensor = first_tensor(output)
        if tensor is not None and tensor.grad_fn is not None:
            self._outputs.append(tensor)
            self._ends.append(len(self.calls))

    def _one_pass(self, roots: list[Any], parents: dict[int, list[Any]]) -> list[_Call]:
        """The calls of the one forward pass the graph from ``roots`` belongs to.

        With gradient accumulation the check step runs several forward passes (one per
        micro-batch) and the loss given to ``step()`` is one of them: mixing the passes would
        count every module as called once per micro-batch and every other pass's nodes as
        consumed by nothing. The pass is the one with the most outputs in that graph (the
        last such pass on a tie). Calls after the last complete pass are left out: activation
        checkpointing runs its modules again inside backward, on nodes of no graph (those
        calls are not recorded at all now). A pass that raised is not here (see
        :meth:`_exit`). Without any complete pass (a model called piecewise) every call is
        taken."""
        bounds = [0, *self._ends]
        passes = [self.calls[a:b] for a, b in itertools.pairwise(bounds) if b > a]
        if not passes:
            return self.calls
        if len(passes) == 1:
            return passes[0]
        reachable = set(parents) | {id(r) for r in roots}
        return max(
            reversed(passes), key=lambda calls: sum(id(c.output) in reachable for c in calls)
        )

    @property
    def saw_forward(self) -> bool:
        """Whether a forward pass with gradients ran while the probe was installed."""
        return bool(self.calls)

    def remove(self) -> None:
        """Remove every hook."""
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def finish(self, loss: torch.Tensor | None) -> Structure:
        """Remove the hooks and work out the structure from what was recorded (again when
        called again: Ctrl+C during a check that is then run again)."""
        self.remove()
        for ended in drop_ended(self._running):  # no pass is running at a check
            self._forget(ended)
        if self._recorded is None:
            self._recorded = self.calls
        self.calls = self._recorded
        structure = Structure()
        roots: list[Any] = []
        if loss is not None and loss.grad_fn is not None:
            roots, structure.graph = [loss.grad_fn], "loss"
        elif self._outputs:  # the last forward pass's outputs
            roots, structure.graph = [self._outputs[-1].grad_fn], "model outputs"
        parents = _parents(roots)
        self.calls = self._one_pass(roots, parents)
        structure.recomputed = self._in_backward - {c.module for c in self.calls}
        owner: dict[int, str] = {}
        for call in self.calls:
            structure.calls[call.module] = structure.calls.get(call.module, 0) + 1
            if call.output is not None and call.output is not call.input:
                owner[id(call.output)] = call.module
        relu_outputs = {id(c.output) for c in self.calls if isinstance(c.kind, RELUS)}
        for call in self.calls:
            if call.input is None:
                continue
            source = owner.get(id(call.input))
            if source is None:
                continue
            source_kind = self.modules[source]
            if isinstance(call.kind, BATCHNORMS) and isinstance(source_kind, PRODUCERS):
                structure.pairs[source] = call.module
            elif isinstance(call.kind, OTHER_NORMS) and isinstance(source_kind, PRODUCERS):
                structure.other_norm[source] = call.module
            elif is_other_activation(call.kind):
                structure.other_activation.setdefault(source, call.module)
            if isinstance(call.kind, RELUS):
                if source not in structure.relu_after:
                    structure.relu_after.append(source)
                structure.relu_of[source] = call.module
                users = parents.get(id(call.input), []) if parents else None
                sole = users is not None and len(users) == 1 and id(users[0]) in relu_outputs
                structure.relu_sole[source] = structure.relu_sole.get(source, True) and sole
        if parents:
            self._functional_relus(structure, owner, parents)
            for call in self.calls:
                if isinstance(call.kind, PRODUCERS) and call.output is not None:
                    users = parents.get(id(call.output), [])
                    one = len(users) == 1
                    previous = structure.single_consumer.get(call.module, True)
                    structure.single_consumer[call.module] = previous and one
            self._consumers(structure, parents)
        return structure

    def _functional_relus(
        self, structure: Structure, owner: dict[int, str], parents: dict[int, list[Any]]
    ) -> None:
        """Layers whose output only a functional ReLU (``F.relu(x)``, ``torch.relu_``)
        consumes: a producer's BatchNorm, or a producer without one. Not in ``relu_after``
        (the seed's field lists what ReLU *modules* receive), but their ReLU is known: their
        channels can be silent and certified like those before a ReLU module."""
        for call in self.calls:
            name = call.module
            if name in structure.relu_of or call.output is None or call.output is call.input:
                continue
            if isinstance(call.kind, BATCHNORMS):
                source = owner.get(id(call.input)) if call.input is not None else None
                if source is None or structure.pairs.get(source) != name:
                    continue
            elif not isinstance(call.kind, PRODUCERS) or name in structure.pairs:
                continue
            users = parents.get(id(call.output), [])
            relus = [u for u in users if type(u).__name__ in RELU_NODES]
            if relus:
                structure.relu_of[name] = FUNCTIONAL_RELU
                structure.relu_sole[name] = len(users) == 1
                structure.relu_nodes[name] = relus[0]

    def _consumers(self, structure: Structure, parents: dict[int, list[Any]]) -> None:
        by_input: dict[int, list[_Call]] = {}
        for call in self.calls:
            # a module that hands its input on as it is (Identity, Dropout(p=0) or in eval
            # mode) is no consumer: its output node is its input node
            passes = call.output is call.input and isinstance(call.kind, CHANNEL_PRESERVING)
            if call.input is not None and not passes:
                by_input.setdefault(id(call.input), []).append(call)
        owner: dict[int, str] = {}  # the first module to output each node
        for call in self.calls:
            if call.output is not None and call.output is not call.input:
                owner.setdefault(id(call.output), call.module)
        relus: dict[str, list[_Call]] = {}  # the ReLU modules fed by each layer's output
        for call in self.calls:
            if isinstance(call.kind, RELUS) and call.input is not None:
                source = owner.get(id(call.input))
                if source is not None:
                    relus.setdefault(source, []).append(call)
        for producer in (
            structure.pairs.keys() | set(structure.relu_after) | set(structure.relu_nodes)
        ):
            layer = structure.pairs.get(producer, producer)
            module = self.modules.get(producer)
            if module is None or not is_producer(module):
                continue
            if not structure.relu_sole.get(layer, False) or (
                layer != producer and not structure.single_consumer.get(producer, False)
            ):
                continue  # the units also reach the output another way: none consumes them alone
            found: tuple[str, int] | None = None
            if layer in structure.relu_nodes:
                found = self._follow(structure.relu_nodes[layer], module, by_input, parents)
            for relu in relus.get(layer, []):
                found = self._follow(relu.output, module, by_input, parents)
            if found is not None:
                structure.consumer[producer] = found[0]
                if found[1] > 1:
                    structure.consumer_block[producer] = found[1]

    def _follow(
        self,
        node: Any,
        producer: nn.Module,
        by_input: dict[int, list[_Call]],
        parents: dict[int, list[Any]],
    ) -> tuple[str, int] | None:
        """The module that alone consumes the channels of ``node`` (the output of
        ``producer``'s ReLU), through channel-preserving steps only, with the number of its
        input columns per channel (``S`` after a flatten of maps of ``S`` positions, else
        1); None when anything else is met (a second consumer, an addition, a permute...).
        A Linear producer's channels are its last dimension: only dropout may stand between
        it and a Linear consumer."""
        block = 1
        flattened = False
        conv = not isinstance(producer, nn.Linear)
        channels = out_channels(producer)
        for _ in range(16):
            users_in_graph = parents.get(id(node), []) if node is not None else []
            if len(users_in_graph) != 1:
                return None
            users = by_input.get(id(node), [])
            if len(users) > 1:
                return None
            if not users:  # no module: a functional step, seen in the autograd graph
                if not conv:
                    return None
                step = users_in_graph[0]
                kind = type(step).__name__
                sizes = tuple(getattr(step, "_saved_self_sym_sizes", ()) or ())
                if flattened:
                    return None
                if kind in VIEW_NODES and len(sizes) > 2:
                    block, flattened = _positions(sizes), True
                elif kind in COPY_NODES:
                    pass
                elif not (
                    kind in POOLING_NODES or (kind in REDUCE_NODES and _over_positions(step, sizes))
                ):
                    return None
                node = step
                continue
            user = users[0]
            if isinstance(user.kind, PRODUCERS):
                return _consumes(user, conv, channels, block, flattened)
            if not conv and not isinstance(user.kind, DROPOUTS):
                return None
            if isinstance(user.kind, nn.Flatten) and not flattened:
                if user.kind.start_dim != 1 or user.kind.end_dim != -1:
                    return None
                block, flattened = user.spatial, True
            elif not isinstance(user.kind, CHANNEL_PRESERVING) or (
                flattened and not isinstance(user.kind, DROPOUTS)
            ):
                return None
            node = user.output
        return None


DROPOUTS: tuple[type[nn.Module], ...] = (nn.Dropout, nn.Identity)
"""What may stand between a flatten and its Linear (element-wise)."""


def _positions(sizes: tuple[int, ...]) -> int:
    """The positions per channel of a tensor of ``sizes`` (N, C, ...)."""
    count = 1
    for size in sizes[2:]:
        count *= int(size)
    return count


def _over_positions(step: Any, sizes: tuple[int, ...]) -> bool:
    """Whether a mean or sum node reduced positions only (dimensions 2 and after)."""
    dims = getattr(step, "_saved_dim", None)
    if not sizes or len(sizes) < 3 or not isinstance(dims, tuple) or not dims:
        return False
    rank = len(sizes)
    # the dims are stored as unsigned 64-bit integers: -1 reads 2**64 - 1
    normal = [(d - 2**64 if d >= 2**63 else d) % rank for d in dims]
    return all(d >= 2 for d in normal)


def _consumes(
    user: _Call, conv: bool, channels: int, block: int, flattened: bool
) -> tuple[str, int] | None:
    """``user`` (a Conv/Linear) as the consumer of ``channels`` channels (of a Conv
    producer when ``conv``, else of a Linear one) of ``block`` input columns each, when its
    input really is those channels; else None."""
    if isinstance(user.kind, nn.Linear):
        if user.kind.in_features != channels * block:
            return None
        if conv and not flattened and user.spatial != 1:  # a Linear over maps' last axis
            return None
        return user.module, block
    if not conv or flattened or getattr(user.kind, "groups", 1) != 1:
        return None
    return (user.module, 1) if getattr(user.kind, "in_channels", None) == channels else None


def _parents(roots: list[Any]) -> dict[int, list[Any]]:
    """For every autograd node reachable from ``roots``, the nodes that consume it."""
    parents: dict[int, list[Any]] = {}
    seen: set[int] = set()
    stack = [r for r in roots if r is not None]
    for r in stack:
        seen.add(id(r))
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            parents.setdefault(id(child), []).append(node)
            if id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return parents
