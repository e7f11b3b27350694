"""Channel statistics on check steps: certified, flat, silent and decayed channels.

For each producer (Conv, ConvTranspose, Linear) the monitor measures the tensor its ReLU
receives: the paired BatchNorm's output, or the producer's own output. Forward hooks,
installed only for the forward pass of a check step, reduce it to a per-channel maximum and
minimum over the batch and every position (a forward pass of the model counts once a
backward pass reaches its output, or a measured module's output in it: one that raised,
caught by the loop, or whose loss was discarded adds nothing; see :class:`ActivationProbe`).
A channel is, in this order of precedence:

* **certified**: proven dead from the weights and the structure (``certificate.py``);
* **silent** (observed): its ReLU input was <= 0 everywhere, so the ReLU output was all
  zeros, at consecutive checks whose batches showed it at least ``silent_min_values``
  values in all (only for producers followed by a ReLU; a unit that is off for the 8
  samples of one small batch is ordinary sparsity, not a silent unit; a channel reported
  silent that fired again needs twice the longest such silence, at most
  ``REVIVED_SILENCE_CAP`` x ``silent_min_values``, and while it is silent
  in between its producer keeps its level: see ``Monitor._silence``);
* **flat**: its input to the ReLU was the same value everywhere in the batch (a constant
  channel carries no information, whatever its value), unless it starts from zero: flat
  at every check since its producer was first checked, its scale (below) exactly 0 and its
  gradient not (LoRA's ``lora_B``, a zero-initialised output layer, ``zero_init_residual``'s
  BatchNorm gamma), so the optimizer step moves it off zero (see
  :func:`starting_from_zero`; weights zeroed later in the run are flat);
* **decayed**: its scale (|gamma| with a BatchNorm, else the norm of its incoming weights)
  is below ``decay_ratio`` times the median over the layer's channels.

A channel a ``torch.nn.utils.prune`` mask holds at zero (its producer's ``weight_mask`` row
all zero, or its BatchNorm's ``weight_mask`` entry zero) is **pruned**: removed on purpose,
in none of the four categories and left out of the channels the level is counted against
(see :func:`pruned_channels`).

The level is ``none`` (no stuck channel), ``some``, ``most`` (half or more) or ``all`` of
the channels not pruned.
A producer's events follow its level with hysteresis: it leaves ``most`` below
``LEAVE_MOST`` of its channels and ``all`` below ``LEAVE_ALL`` (a layer whose count wavers
by a channel around the half writes one event, not one per check), and it leaves a stuck
level for ``none`` (``channels_cleared``) only once it has shown ``silent_min_values``
values per channel at checks in a row with nothing stuck: as much evidence as a channel
needs to be called silent (a unit that fires on one sample in 500, under dropout, is
silent over 256 values half the time; cleared at the first check without it, such a
layer flapped between ``channels`` and ``channels_cleared`` every few hundred steps). A
producer whose channels were just re-initialised by a repair is cleared at once.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import torch
from torch import nn
from torch.nn.modules.module import (
    register_module_forward_hook,
    register_module_forward_pre_hook,
)
from torch.nn.utils import prune

from trainrecord.monitor.compiled import COMPILED_WRAPPER
from trainrecord.monitor.structure import (
    affine_of,
    drop_ended,
    first_tensor,
    in_transform,
    out_axis,
    out_channels,
    own_parameter,
    read,
    tensors_in,
    weight_of,
)

LEAVE_MOST = 0.4  # a producer at most (or all) leaves it below 40 % of its channels stuck
LEAVE_ALL = 0.9  # ... and all below 90 %
BATCH_FIRST_BELOW = 128  # positions per channel (H x W) below which the batch is reduced first


def channel_dim(module: nn.Module, output: torch.Tensor) -> int:
    """The channel dimension of a module's output: last for Linear; 0 for a convolution fed
    one unbatched sample ((C, L), (C, H, W) or (C, D, H, W)); 1 otherwise."""
    if isinstance(module, nn.Linear):
        return -1
    if isinstance(module, nn.modules.conv._ConvNd) and output.dim() == len(module.kernel_size) + 1:
        return 0
    return 1


def channel_extremes(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel max and min over every other dimension, as float32 (float64 for a
    float64 tensor: cast to float32, values that differ below its resolution, or are
    positive below its smallest subnormal, would look flat or silent).

    On a GPU each is one multi-dimension reduction (one kernel launch). On the CPU, for
    channels-second tensors (N, C, ...) with small feature maps (fewer than
    ``BATCH_FIRST_BELOW`` positions) the batch is reduced first (an element-wise max of N
    contiguous slabs, then a short row reduction); with larger maps the contiguous trailing
    dimensions are reduced first, then the batch; on torch 2.13 each order is 1.5 to
    6 times faster than the other on its side of the threshold. Separate ``amax`` and
    ``amin`` passes: they are 2 to 8 times faster than one ``aminmax`` pass over the same
    tensor, and the values are the same (max and min are exact; NaN propagates in both)."""
    dim %= x.dim()
    if x.device.type != "cpu":  # a GPU reduces over several dimensions in one kernel
        dims = tuple(d for d in range(x.dim()) if d != dim)
        high, low = x.amax(dim=dims), x.amin(dim=dims)
    elif dim == x.dim() - 1:
        flat = x.reshape(-1, x.shape[-1])
        high, low = flat.amax(dim=0), flat.amin(dim=0)
    elif dim == 1 and x.dim() > 2:
        channels = x.shape[1]
        if x.numel() == channels * x.shape[0]:  # one position per channel (N, C, 1, 1)
            flat = x.reshape(x.shape[0], channels)
            high, low = flat.amax(dim=0), flat.amin(dim=0)
        elif x.numel() < BATCH_FIRST_BELOW * channels * x.shape[0]:
            rest = tuple(range(1, x.dim() - 1))  # the positions, once the batch is reduced
            high, low = x.amax(dim=0).amax(dim=rest), x.amin(dim=0).amin(dim=rest)
        else:
            flat = x.flatten(2)
            high, low = flat.amax(dim=2).amax(dim=0), flat.amin(dim=2).amin(dim=0)
    else:
        flat = x.movedim(dim, -1).reshape(-1, x.shape[dim])
        high, low = flat.amax(dim=0), flat.amin(dim=0)
    if high.dtype != torch.float32 and high.dtype != torch.float64:  # (no call for these)
        high, low = high.float(), low.float()  # exact: every lower precision fits in float32
    return high, low


_Seen = tuple[str, bool, bool, torch.Tensor, torch.Tensor, int, torch.dtype]
"""One module output measured: name, training mode, outside backward, per-channel max and
min, values per channel, dtype."""


@dataclass
class _Pass:
    """A forward pass of the model begun on a check step: what its modules showed, kept
    apart until it counts (see :class:`ActivationProbe`)."""

    frame: FrameType | None  # the frame that called the model's hooks: live while it runs
    seen: list[_Seen] = field(default_factory=list)
    returned: bool = False
    waits: bool = False  # its output needs a gradient: it counts when backward reaches it
    counted: bool = False
    called: set[int] = field(default_factory=set)  # modules it ran with gradients (ids)
    filled: set[int] = field(default_factory=set)  # of them, run on something (see probe's)
    reached: set[int] = field(default_factory=set)  # parameters its outputs' graphs reach


class ActivationProbe:
    """Forward hooks that keep a per-channel max and min of chosen modules' outputs.

    Forward passes with gradients count (a validation pass under ``torch.no_grad()`` does
    not). A module's passes in training mode are what it is judged on: once one is seen, its
    passes in eval mode are left out, and those seen before it dropped (a validation pass
    run with gradients between two steps, in ``model.eval()``, made units dead on every
    training batch look alive). A module only ever run in eval mode (a frozen eval-mode
    BatchNorm, a model fine-tuned in eval mode) is measured on those passes. An output with
    fewer than two values per channel (a batch of one sample and one position) is not
    measured: every channel of it would look flat.

    Activation checkpointing runs modules again inside backward (the autograd engine's
    graph task is then running). Non-reentrant checkpointing (``use_reentrant=False``) ran
    them with gradients in the forward pass too: their recomputation is the same values
    again and is not counted (each value would count twice towards ``silent_min_values``).
    Reentrant checkpointing ran them under ``no_grad`` in the forward pass: a module seen
    only in backward is measured there, once per recomputation.

    A forward pass of ``root`` (the model) counts when it is trained on: what its modules
    showed is kept apart until a backward pass (``loss.backward()``, ``autograd.grad``)
    reaches its output, or the output of one of the modules measured in it (a loss computed
    from features a forward hook captured, the model's own output unused), and then added.
    So a pass that raises (a bad batch, an out-of-memory error the loop catches, then skips
    or retries the batch; also a ``KeyboardInterrupt`` caught in a notebook, training then
    resumed), and a pass whose output no backward reaches before the check (a loss
    discarded: an evaluation pass in training mode with gradients, a pass for logging) add
    nothing. Their modules saw a batch no step trained on: a retried batch counted its
    values twice towards ``silent_min_values``, a corrupt one made every unit look alive. A
    pass whose output needs no gradient (no tensor of it has a ``grad_fn``: a model that
    keeps its loss as an attribute) counts when it returns. Modules called outside a forward
    pass of ``root`` (a model run piecewise, ``model.forward(x)``, a reentrant checkpoint's
    recomputation) are measured as they come.

    ``note_compiled``: a ``torch.compile`` wrapper of ``root`` being called is noted in
    ``compiled_call``.

    ``called`` holds the ids of every module (watched or not) run with gradients enabled,
    in passes that count: a layer whose module did not run in the check step's forward
    pass may have sat that step out (a task head of round-robin multi-task training,
    when a gradient reached it at other steps: see ``GradientNorms.mark``), which its
    gradient, zero after ``zero_grad(set_to_none=False)``, cannot tell from a detached
    layer's. ``filled`` holds those of them that ran at least once on an output with
    values: a module in ``called`` but not in ``filled`` ran on empty tensors only (an
    expert of a mixture of experts called on the no tokens routed to it), and its gradient
    is all zero by construction. With ``walk``, ``reached`` holds the ids of the
    parameters the autograd graphs of the counted passes' outputs reach (walked as each
    pass returns: a ``grad_fn`` kept here would be held by the output's tensor hook,
    which holds the probe, a cycle through the graph that Python's collector cannot see)."""

    def __init__(
        self,
        modules: dict[str, nn.Module],
        root: nn.Module | None = None,
        note_compiled: bool = True,
        walk: bool = False,
    ) -> None:
        self._root = root  # the model
        self.walk = walk  # walk the graphs of the model's outputs (see reached)
        self.reached: set[int] = set()  # ids of the parameters those of counted passes reach
        self._note_compiled = note_compiled
        self.compiled_call = False  # a torch.compile wrapper of root was called
        self._running: list[_Pass] = []  # the model's forward passes begun, not ended
        self.maxima: dict[str, torch.Tensor] = {}
        self.minima: dict[str, torch.Tensor] = {}
        self.values: dict[str, int] = {}  # values per channel seen (samples x positions)
        self._trained: set[str] = set()  # modules whose kept values come from training mode
        self._forward: set[str] = set()  # modules measured outside backward
        self.transformed = False  # a forward pass ran under a torch.func transform: unseen
        self.dtypes: set[torch.dtype] = set()  # of the outputs measured (autocast shows here)
        self.called: set[int] = set()  # ids of the modules run with gradients enabled
        self.filled: set[int] = set()  # of them, those run on an output with values
        self._modules = list(modules.values())  # held, so that their ids stay theirs
        self._names = {id(m): n for n, m in modules.items()}
        self._removed = False
        self._handles: list[Any] = []  # (see install)

    def install(self) -> None:
        """Install the hooks: one global hook, matched by identity, so nothing is stored on
        the model's modules (a torch.save(model) or copy.deepcopy(model) meanwhile sees no
        trace of it). Called once its holder keeps the probe, and each handle kept as it is
        made: Ctrl+C anywhere in the arming leaves no hook that remove() cannot reach."""
        self._handles.append(register_module_forward_hook(self._hook))
        if self._root is not None:  # (the exit hook after _hook: run when the pass raised)
            self._handles.append(register_module_forward_pre_hook(self._enter))
            self._handles.append(register_module_forward_hook(self._exit, always_call=True))

    def _enter(self, module: nn.Module, args: Any) -> None:
        if module is self._root:
            drop_ended(self._running)  # passes Ctrl+C ended: torch called no hook for them
            self._running.append(_Pass(sys._getframe(1)))

    def _exit(self, module: nn.Module, args: Any, output: Any) -> None:
        if module is not self._root:
            return
        drop_ended(self._running)  # (one ended by Ctrl+C inside this one, caught in it)
        if not self._running:
            return
        running = self._running.pop()
        running.frame = None
        if running.returned and not running.waits:  # no gradient to wait for: it counts now
            self._count(running)
        # (a pass that raised is dropped: what its modules showed never counts)

    def _reached(self, running: _Pass) -> None:
        """A backward pass reached the output of ``running``, or of a module measured in
        it: it counts (once; a pass that raised never does)."""
        if running.returned and not running.counted and not self._removed:
            self._count(running)

    def _count(self, running: _Pass) -> None:
        running.counted = True
        self.called |= running.called
        self.filled |= running.filled
        self.reached |= running.reached
        seen, running.seen = running.seen, []
        for measured in seen:
            self._add(*measured)

    def _hook(self, module: nn.Module, args: Any, output: Any) -> None:
        grad = torch.is_grad_enabled()
        if module is self._root and self._running:
            running = self._running[-1]
            running.returned = True
            if grad and not in_transform():
                roots = []
                for out in tensors_in(output):
                    if out.grad_fn is not None:
                        out.register_hook(functools.partial(_reached, self, running))
                        running.waits = True
                        roots.append(out.grad_fn)
                if self.walk and roots:  # (ids only: a node held here would hold its graph)
                    # one walk over all the outputs: their graphs share nodes (an unrolled
                    # loop's output per step holds every step before it), and a walk per
                    # output went over them again each time, quadratic in their number
                    running.reached.update(graph_leaves(*roots))
        # not inside backward (asked once a call: below too)
        forward = grad and torch._C._current_graph_task_id() == -1
        tensor = first_tensor(output)
        if grad:  # (inside a forward pass of the model: counted with it)
            into = self._running[-1] if self._running and forward else self
            into.called.add(id(module))
            if tensor is None or tensor.numel() > 0:  # (an expert given no token: empty)
                into.filled.add(id(module))
        name = self._names.get(id(module))
        if name is None:
            if (
                self._note_compiled
                and self._root is not None
                and type(module).__name__ == COMPILED_WRAPPER
            ):
                self.compiled_call |= getattr(module, "_orig_mod", None) is self._root
            return
        if not grad:
            return
        if in_transform():  # vmap's wrappers must not escape it (torch asserts on them)
            self.transformed = True
            return
        if tensor is None or tensor.dim() < 2 or tensor.numel() == 0:
            return
        dim = channel_dim(module, tensor)
        if tensor.numel() < 2 * tensor.shape[dim]:  # one value per channel: proves nothing
            return
        training = module.training
        if not training and name in self._trained:  # a validation pass beside training ones
            return
        if not forward and name in self._forward:  # a checkpoint's recomputation
            return
        high, low = channel_extremes(tensor.detach(), dim)  # no graph
        measured = (
            name,
            training,
            forward,
            high,
            low,
            tensor.numel() // tensor.shape[dim],
            tensor.dtype,
        )
        if self._running and forward:  # inside a forward pass of the model: counted later
            running = self._running[-1]
            running.seen.append(measured)
            if tensor.grad_fn is not None and not running.counted:
                # a loss may be computed from an intermediate (a hook's capture) rather than
                # from the model's output: a backward pass reaching this counts the pass too
                tensor.register_hook(functools.partial(_reached, self, running))
        else:
            self._add(*measured)

    def _add(
        self,
        name: str,
        training: bool,
        forward: bool,
        high: torch.Tensor,
        low: torch.Tensor,
        values: int,
        dtype: torch.dtype,
    ) -> None:
        """Take one module output's statistics into the check's."""
        if training:
            if name not in self._trained:  # what eval-mode passes left is dropped
                self._trained.add(name)
                self._forget(name)
        elif name in self._trained:  # a validation pass beside training ones: not judged
            return
        if forward:
            self._forward.add(name)
        elif name in self._forward:  # a checkpoint's recomputation of a pass already seen
            return
        self.values[name] = self.values.get(name, 0) + values
        self.dtypes.add(dtype)
        if name in self.maxima:
            self.maxima[name] = torch.maximum(self.maxima[name], high)
            self.minima[name] = torch.minimum(self.minima[name], low)
        else:
            self.maxima[name], self.minima[name] = high, low

    def _forget(self, name: str) -> None:
        self.maxima.pop(name, None)
        self.minima.pop(name, None)
        self.values.pop(name, None)

    def remove(self) -> None:
        """Remove every hook; passes not counted by now never count."""
        self._removed = True
        self._running.clear()
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


def _reached(probe: ActivationProbe, running: _Pass, grad: torch.Tensor) -> None:
    """The tensor hook on a pass's output (a function, so that the hook holds no frame)."""
    probe._reached(running)


def graph_leaves(*nodes: Any) -> Iterator[int]:
    """The ids of the tensors whose gradients the autograd graph from ``nodes`` (a loss's
    ``grad_fn``, or those of a forward pass's outputs) accumulates (their AccumulateGrad
    nodes: the parameters it reaches), as the walk finds them; each node is visited once,
    however many of ``nodes`` reach it. The graph's structure outlives backward(), which
    frees only the tensors it saved (and the Python object of each node lives as long as
    the node)."""
    seen: set[int] = set()
    todo = list(nodes)
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            yield id(variable)
        todo.extend(after for after, _ in node.next_functions)


@dataclass
class ChannelCounts:
    """One producer's stuck channels at one check (``total``: all its channels, the pruned
    ones included; ``pruned``: those a pruning mask holds at zero, in no category)."""

    total: int
    certified: list[int] = field(default_factory=list)
    flat: list[int] = field(default_factory=list)
    observed: list[int] = field(default_factory=list)
    decayed: list[int] = field(default_factory=list)
    pruned: list[int] = field(default_factory=list)

    @property
    def stuck(self) -> int:
        """Channels in any of the four categories."""
        return len(self.certified) + len(self.flat) + len(self.observed) + len(self.decayed)

    @property
    def level(self) -> str:
        """none, some, most (half or more) or all of the layer's channels (the seed's
        letter: how many of a layer's channels are stuck; a pruned channel is one of them
        and is not stuck)."""
        stuck = self.stuck
        if stuck == 0:
            return "none"
        if stuck >= self.total:
            return "all"
        return "most" if 2 * stuck >= self.total else "some"

    def row(self) -> list[int]:
        """[certified, constant, silent, decayed] for metrics.jsonl."""
        return [len(self.certified), len(self.flat), len(self.observed), len(self.decayed)]


LEVELS = ("none", "some", "most", "all")


def held(level: str, counts: ChannelCounts) -> bool:
    """Whether a producer whose events last said ``level`` stays there with ``counts``: its
    level now is lower, but not below ``LEAVE_MOST`` (from most or all) or ``LEAVE_ALL``
    (from all) of its channels."""
    now = counts.level
    if LEVELS.index(now) >= LEVELS.index(level) or now == "none":
        return False
    if level == "all":
        return counts.stuck >= LEAVE_ALL * counts.total
    return level == "most" and counts.stuck >= LEAVE_MOST * counts.total


def classify(
    total: int,
    certified: set[int],
    high: torch.Tensor | None,
    low: torch.Tensor | None,
    relu: bool,
    scale: torch.Tensor | None,
    decay_ratio: float,
    proven: set[int] | None = None,
    starting: set[int] | None = None,
    pruned: list[int] | None = None,
) -> ChannelCounts:
    """Sort a producer's channels into the four categories (see the module docstring);
    ``proven``: the channels silent now whose silence rests on enough values (None: every
    channel silent now). A channel silent now but not proven yet is in no category, nor is
    one of ``starting`` (zero scale, non-zero gradient: see :func:`starting_from_zero`)
    that is not silent, nor one of ``pruned`` (see :func:`pruned_channels`), which is
    left out of the median scale of the decayed rule too.

    Works on tensors; only the (usually empty) index lists become Python lists."""
    pruned = [c for c in pruned or [] if c not in certified]
    counts = ChannelCounts(total=total, certified=sorted(certified), pruned=pruned)
    taken = torch.zeros(total, dtype=torch.bool)
    if certified:
        taken[sorted(certified)] = True
    if pruned:
        taken[pruned] = True
    if high is not None and low is not None and high.numel() == total:
        silent = (high <= 0) & ~taken if relu else torch.zeros(total, dtype=torch.bool)
        flat = (high == low) & ~taken & ~silent
        if starting:
            moving = torch.zeros(total, dtype=torch.bool)
            moving[sorted(starting)] = True
            flat &= ~moving
            taken |= moving & ~silent  # (its scale is 0: not decayed either)
        counts.observed = silent.nonzero().flatten().tolist()
        if proven is not None:
            counts.observed = [c for c in counts.observed if c in proven]
        counts.flat = flat.nonzero().flatten().tolist()
        taken |= silent | flat
    if scale is not None and scale.numel() == total and total > len(pruned):
        kept = scale if not pruned else scale[~_indexed(total, pruned)]
        median = kept.median()
        if median > 0:
            counts.decayed = ((scale < decay_ratio * median) & ~taken).nonzero().flatten().tolist()
    return counts


def _indexed(total: int, channels: list[int]) -> torch.Tensor:
    """A boolean mask of ``total`` channels, True at ``channels``."""
    mask = torch.zeros(total, dtype=torch.bool)
    mask[channels] = True
    return mask


def prune_mask(module: nn.Module | None, name: str) -> torch.Tensor | None:
    """The mask ``torch.nn.utils.prune`` applies to ``module``'s ``name`` (its
    ``<name>_mask`` buffer, multiplied into ``<name>_orig`` by a forward pre-hook of the
    pruning method), or None when that tensor is not pruned (nothing is computed)."""
    if module is None:
        return None
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, prune.BasePruningMethod) and hook._tensor_name == name:
            mask = module._buffers.get(f"{name}_mask")
            return mask if isinstance(mask, torch.Tensor) else None
    return None


def pruned_channels(producer: nn.Module, batchnorm: nn.Module | None) -> list[int] | None:
    """The output channels of ``producer`` that pruning masks hold at zero: those whose
    row of the producer's ``weight_mask`` is all zero (every incoming weight removed:
    ``prune.ln_structured``/``random_structured`` along the output axis, or a
    ``custom_from_mask`` that zeroes whole rows), and those whose entry of the paired
    BatchNorm's ``weight_mask`` is zero (gamma removed, as network slimming prunes). The
    bias plays no part: a pruned channel outputs its bias (or the BatchNorm's beta), a
    constant by design, whether the bias is masked too or not. None when neither weight is
    pruned; an empty list when a mask removes no whole channel (unstructured pruning)."""
    mask = prune_mask(producer, "weight")
    gamma = prune_mask(batchnorm, "weight")
    if mask is None and gamma is None:
        return None
    total = out_channels(producer)
    out = torch.zeros(total, dtype=torch.bool)
    with torch.no_grad():
        if mask is not None:
            axis = out_axis(producer)
            if mask.dim() > axis and mask.shape[axis] == total:
                rows = mask.detach().movedim(axis, 0).reshape(total, -1)
                out |= ~(rows != 0).any(dim=1).cpu()
        if gamma is not None and gamma.shape == (total,):
            out |= (gamma.detach() == 0).cpu()
    return out.nonzero().flatten().tolist()


@dataclass
class PrunedChannels:
    """Each producer's pruned channels (see :func:`pruned_channels`), computed again only
    when a mask changed: pruning again puts a new mask buffer in place (iterative
    pruning), and a mask edited in place moves its version counter. The masks seen are
    held, so that a new one cannot take a freed one's identity."""

    seen: dict[str, tuple[tuple[Any, ...], list[int] | None]] = field(default_factory=dict)

    def of(self, name: str, producer: nn.Module, batchnorm: nn.Module | None) -> list[int]:
        """The pruned channels of producer ``name`` now (empty when none)."""
        return self.masked(name, producer, batchnorm) or []

    def masked(
        self, name: str, producer: nn.Module, batchnorm: nn.Module | None
    ) -> list[int] | None:
        """As :meth:`of`, but None when no pruning mask applies to the producer."""
        masks = (prune_mask(producer, "weight"), prune_mask(batchnorm, "weight"))
        key: tuple[Any, ...] = (
            *((m, m._version) if m is not None else None for m in masks),
            id(producer),
            id(batchnorm),
        )
        held = self.seen.get(name)
        if held is not None and _same(held[0], key):
            return held[1]
        channels = pruned_channels(producer, batchnorm)
        self.seen[name] = (key, channels)
        return channels


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether two keys of :class:`PrunedChannels` name the same masks at the same
    versions (tensors compared by identity: ``==`` on tensors compares values)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if isinstance(x, tuple) and isinstance(y, tuple):
            if x[0] is not y[0] or x[1] != y[1]:
                return False
        elif x != y:
            return False
    return True


def starting_from_zero(
    producer: nn.Module, batchnorm: nn.Module | None, channels: list[int]
) -> set[int]:
    """The channels among ``channels`` (flat since their producer was first checked) that
    start from zero: their scale, the BatchNorm's gamma or else the producer's incoming
    weights, is exactly 0 while its gradient is not, so the coming optimizer step moves them
    off zero and their output stops being one value. A zero-initialised layer is built so
    (LoRA's ``lora_B``, whose zero product leaves the pretrained model's output unchanged at
    the start; a residual branch's last layer or BatchNorm gamma set to 0,
    ``zero_init_residual``, ReZero): all its channels are flat at the first check, and
    reporting them stuck was a false alarm on every such healthy run. A channel whose scale
    is 0 and gets no gradient stays flat (nothing moves it); one without a gradient to read
    (a parametrized weight) too."""
    if not channels:
        return set()
    affine = affine_of(batchnorm)
    owner = batchnorm if affine is not None and batchnorm is not None else producer
    if not own_parameter(owner, "weight"):  # computed: a copy with no .grad (reading one warns)
        return set()
    param: Any = affine[0] if affine is not None else weight_of(producer)
    axis = 0 if affine is not None else out_axis(producer)
    grad = param.grad
    if not isinstance(grad, torch.Tensor):
        return set()
    if grad.is_sparse or grad.shape != param.shape:
        return set()
    with torch.no_grad():
        index = torch.tensor(channels, device=param.device)
        rows = param.detach().movedim(axis, 0).index_select(0, index).reshape(len(channels), -1)
        grads = grad.detach().movedim(axis, 0).index_select(0, index).reshape(len(channels), -1)
        moving = (rows == 0).all(dim=1) & (grads != 0).any(dim=1)
    return {c for c, m in zip(channels, moving.cpu().tolist(), strict=True) if m}


def channel_scale(producer: nn.Module, batchnorm: nn.Module | None) -> torch.Tensor | None:
    """Per-channel scale on the host: |gamma| of the BatchNorm, else the norm of incoming
    weights."""
    affine = affine_of(batchnorm)
    with torch.no_grad():
        if affine is not None:
            return affine[0].detach().abs().float().cpu()
    norms = incoming_norms(producer)
    return None if norms is None else norms.cpu()


def incoming_norms(producer: nn.Module) -> torch.Tensor | None:
    """The norm of each output channel's incoming weights, float32, on the weight's device
    (None: the producer has no weight)."""
    return incoming_norms_of([producer])[0]


def incoming_norms_of(producers: list[nn.Module]) -> list[torch.Tensor | None]:
    """:func:`incoming_norms` of each of ``producers``, in order, under one ``no_grad`` (a
    check takes those of every producer without a BatchNorm: a transformer's dozens)."""
    out: list[torch.Tensor | None] = []
    with torch.no_grad():  # linalg.vector_norm: Tensor.norm goes through Python-level code
        for producer in producers:
            weight = read(producer, "weight")
            if weight is None:
                out.append(None)
                continue
            rows = weight.detach()
            axis = out_axis(producer)
            if axis:
                rows = rows.movedim(axis, 0)
            if rows.dim() != 2:  # (a 2-D tensor is its own flatten(1), as a Linear's)
                rows = rows.flatten(1)
            if rows.dtype == torch.float64:  # dtype= may widen, never narrow
                out.append(torch.linalg.vector_norm(rows, dim=1).float())
            else:
                out.append(torch.linalg.vector_norm(rows, dim=1, dtype=torch.float32))
    return out


@dataclass
class ChannelTracker:
    """Writes channels when a producer's state changes and channels_cleared on recovery.

    The state is the level together with the set of certified channels; the counts of
    the other categories are in metrics.jsonl at every check.
    """

    list_limit: int = 16
    clear_min_values: int = 0
    """Values per channel a producer must show at checks in a row with nothing stuck
    before it leaves its level for ``none`` (the monitor's ``silent_min_values``: leaving
    needs as much evidence as a silent channel needs to enter)."""
    state: dict[str, tuple[str, tuple[int, ...]]] = field(default_factory=dict)
    quiet: dict[str, int] = field(default_factory=dict)
    """Values per channel seen at checks in a row with nothing stuck, for producers still
    at a stuck level."""
    released: set[str] = field(default_factory=set)
    """Producers whose stuck channels were just repaired: cleared at the next check with
    nothing stuck (a repair is the cause, not a sample)."""

    def observe(
        self,
        step: int,
        layer: str,
        batchnorm: str | None,
        counts: ChannelCounts,
        values: int | None = None,
        pending: bool = False,
    ) -> tuple[str, dict[str, Any]] | None:
        """The event to write for this producer at this check, if any (``values``: the
        values per channel this check showed; None: a clear is not held back;
        ``pending``: a channel reported silent that fired since is silent again, not yet
        for long enough to count: the producer keeps its level and the values with
        nothing stuck start afresh, as for a stuck channel, unless a repair released it)."""
        new = (counts.level, tuple(counts.certified))
        old = self.state.get(layer, ("none", ()))
        if new == old or (new[1] == old[1] and held(old[0], counts)):
            if counts.level != "none":
                self.quiet.pop(layer, None)  # stuck again: the quiet values start afresh
            return None
        if new[0] == "none" and old[0] != "none" and pending and layer not in self.released:
            self.quiet.pop(layer, None)  # a sparse unit between its inputs: not cleared
            return None
        if (
            new[0] == "none"
            and old[0] != "none"
            and values is not None
            and layer not in self.released
        ):
            seen = self.quiet.get(layer, 0) + values
            if seen < self.clear_min_values:
                self.quiet[layer] = seen  # not enough values with nothing stuck yet
                return None
        self.quiet.pop(layer, None)
        self.released.discard(layer)
        self.state[layer] = new
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
        } | ({"n_pruned": len(counts.pruned)} if counts.pruned else {})
