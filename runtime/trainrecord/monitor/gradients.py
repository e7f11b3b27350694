"""Per-layer gradient norms in one batched pass, their baselines, and gradient alarms.

A *layer* is a module that owns parameters directly (``named_modules()`` with
``parameters(recurse=False)``): a Conv2d, a Linear, a BatchNorm; a parametrized module's
parametrizations' parameters (``X.parametrizations.weight.original``) are ``X``'s. Its
gradient norm is the L2 norm over all its parameters' gradients. On a check step every parameter's sum of
squares comes from one batched pass over the gradients that exist, then one transfer to the
host, where the sums are grouped per layer in double precision (a sparse gradient, as
``nn.Embedding(sparse=True)`` makes, counts by its stored values). On a GPU the pass is one
``torch._foreach_norm`` call; on the CPU, for float32 and float64 gradients of at least
``DOT_MIN`` elements, it is a BLAS ``dot`` of each gradient with itself (the smaller ones
share one ``_foreach_norm`` call), which on a 2-core CPU reads the gradients 1.3 to 2 times
faster than ``_foreach_norm`` and accumulates about ten times more exactly. A sum of
squares that comes out exactly 0 or infinite in the gradient's precision (an underflow or
overflow of the squares, or a gradient that really is zero or infinite) is taken again in
float64, so a gradient of 1e-25 is vanishing, not absent, and one of 1e20 is exploding, not
non-finite.

A layer's baseline is ``10 ** m`` where ``m`` is the running (exponentially weighted) mean
of ``log10`` of its gradient norm; ``s`` is the running standard deviation of the same.
The layer's band is ``m ± max(sigma_band * s, min_decades)``. After a warm-up of
``warmup`` checks, a layer outside its band on the same side at ``checks_in_a_row`` (2)
checks raises one ``alarm`` (diagnosis ``vanishing`` or ``exploding``; ``no_gradient``,
at once, when its norm is exactly zero or it has no gradient at all, except an all-zero
norm at the layer's first check, which needs the next check too (a zero-initialised layer
after it, LoRA's ``lora_B``, zeroes its gradient until the first step); its grad_norm is
null when it has no gradient at all, as its metrics.jsonl value is, and 0 when its
gradient is all zero; its baseline is null when the layer never had a finite non-zero
norm; a layer that sat the check step out is not judged: no gradient, or an all-zero one
while its modules did not run in the check step's forward pass, its parameters updated
since the last check, and, for an all-zero one, a gradient that reached it at the other
steps since the previous check's, see :meth:`GradientNorms.trained_between` and
:meth:`GradientNorms.mark`; a layer that went without a gradient in some windows and got
one again, a task head drawn at random, is ``no_gradient`` only after more checks in a
row without one than twice its longest such run (at least 1 for a routed layer, one that
sat a check step out and learnt again, see :attr:`GradientAlarms.seated`), at most
``unfed_cap``, 32, see :meth:`GradientAlarms.unfed_needed`) and one ``alarm_cleared``
when it comes back. A fall below the band that the network explains is no ``vanishing``:
the loss fell by at least ``loss_share`` of as many decades below its mean over the same
checks (a converging network), or every layer fell with it (the layer is within its band
of the median layer's fall, and no layer stands above that fall by more than its own
band) and the loss now (median of the last 3 checks) is within 0.2 decades (1.6 x) of
the run's lowest median of 10; an explained fall moves the baseline's mean, not its
spread.
A head whose weights died (scaled to nothing) keeps its own gradient, the output error
times its inputs, while every layer below it loses decades: the network did not fall as
a whole, and those layers are ``vanishing`` (the median alone read it as convergence,
whether the loss jumped or, in a network that never learned, sat at chance). A rise
above the band is no ``exploding`` when the loss rose by at least ``loss_share`` of as
many decades above its mean over the same checks and the loss rule found no spike at
that check (the loss not above its margin): a cross-entropy's gradient grows with the
loss, and a near-converged loss that ticks up two decades (1e-4 to 0.01, under the loss
rule's floor of 5 % of the run's largest baseline) took every layer's gradient two
decades up with it; one alarm per layer pointed at the layers for a blip the loss rule
calls nothing on the run's scale. When the loss rule does find a spike, the layers above
their bands are alarmed with it. The cost: a gradient rise that follows a loss rise
below the loss rule's floor is reported by neither rule. Non-finite norms and norms
outside the band never enter a baseline (nor does a rise the loss explains), so a broken
layer cannot drag its baseline along; an explained fall does.
"""

from __future__ import annotations

import math
import statistics
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import Any, cast

import torch
from torch import nn
from torch.nn.utils import parametrize

WHOLE_MODEL = "model"
"""The layer name of a model that is one module without submodules (a bare ``nn.Linear``,
``nn.Conv2d``): ``named_modules()`` names it ``""``, which no layer may be called."""


PARAMETRIZATIONS = "parametrizations"
"""Where ``torch.nn.utils.parametrize`` keeps a parametrized module's parametrizations: a
``ModuleDict`` of a ``ParametrizationList`` per tensor (``X.parametrizations.weight``),
which holds the tensor's ``original`` (or ``original0``, ``original1``, ...) and the
parametrization modules."""


def named_modules(model: nn.Module) -> dict[str, nn.Module]:
    """``dict(model.named_modules())``, with a model that has no submodules (a bare
    ``nn.Linear``: logistic regression, one convolution) named :data:`WHOLE_MODEL` instead of
    ``""``: it is one layer, and a producer when it is a Conv or Linear (taken apart into a
    layer per parameter, as a container's own parameters are, a Linear was two layers of
    kind ``Parameter``, never a producer, and its run had no structure or manifest). So is
    one whose only submodules are its parametrizations (a bare Linear under
    ``parametrizations.spectral_norm``)."""
    modules = dict(model.named_modules())
    inner = [n for n in modules if n]
    if inner and not parametrize.is_parametrized(model):
        return modules
    if all(n == PARAMETRIZATIONS or n.startswith(PARAMETRIZATIONS + ".") for n in inner):
        return {WHOLE_MODEL: model, **{n: modules[n] for n in inner}}
    return modules


def module_layers(modules: dict[str, nn.Module]) -> dict[str, str]:
    """The layer each module's own parameters belong to, by the module's name in
    ``modules`` (:func:`named_modules`): its own name, except for the modules
    ``torch.nn.utils.parametrize`` keeps under a parametrized module ``X``
    (``X.parametrizations``, ``X.parametrizations.weight`` holding the weight's ``original``,
    and the parametrization modules under it): theirs belong to ``X``, one layer per user
    module, as the older hook-based ``weight_norm``, ``spectral_norm`` and pruning give
    (``X`` over ``weight_orig``, ``weight_g`` and ``weight_v``). Before, ``X`` and
    ``X.parametrizations.weight`` were two layers: two rows, and two alarms for one fault,
    under a name of torch's internals. The parametrized tensor of the model itself (a
    model with submodules) belongs to the layer named after the tensor, as its own
    parameters do (see :func:`parameter_layers`); the model's own module is ``""``."""
    out: dict[str, str] = {}
    inside: dict[str, str] = {}  # path of a module under parametrizations -> its layer
    for index, (name, module) in enumerate(modules.items()):
        path = "" if index == 0 else name  # (the model may be named WHOLE_MODEL)
        parent = path.rpartition(".")[0]
        if path in inside:
            layer = inside[path]
        elif path and parent in inside:  # a parametrization module, or one of its own
            layer = inside[path] = inside[parent]
        else:
            layer = name
        out[name] = layer
        if parametrize.is_parametrized(module):
            base = f"{path}.{PARAMETRIZATIONS}" if path else PARAMETRIZATIONS
            inside[base] = layer
            for tensor in cast(nn.ModuleDict, module.parametrizations):
                inside[f"{base}.{tensor}"] = layer or tensor
    return out


def layer_parameters(modules: dict[str, nn.Module]) -> dict[str, list[tuple[str, nn.Parameter]]]:
    """Every parameter of each layer, trainable or not, in ``named_modules()`` order of the
    layers (see :func:`module_layers`); each named from the layer's module
    (``bias``, ``parametrizations.weight.original``), each once. A parameter the model
    itself owns (its module named ``""``) is a layer by itself, named after it."""
    layer_of = module_layers(modules)
    out: dict[str, list[tuple[str, nn.Parameter]]] = {}
    for name, module in modules.items():
        layer = layer_of[name]
        if layer and layer == name:
            out.setdefault(layer, [])  # its place, before its parametrizations'
        for own, param in module.named_parameters(recurse=False):
            held = out.setdefault(layer or own, [])
            if all(p is not param for _, p in held):
                inner = name[len(layer) + 1 :] if name.startswith(layer + ".") else name
                held.append((f"{inner}.{own}" if layer != name else own, param))
    return {layer: params for layer, params in out.items() if params}


def parameter_layers(model: nn.Module) -> dict[str, list[tuple[str, nn.Parameter]]]:
    """Modules that own trainable parameters, in ``named_modules()`` order, with them.

    A module's parameters are those it holds directly and, for a parametrized module, those
    of its parametrizations (see :func:`module_layers`). A parameter a model with submodules
    owns itself (a ViT's ``pos_embedding``, a ``logit_scale``) has no module name of its
    own: it is a layer by itself, named after the parameter (its kind is ``Parameter``, see
    :func:`layer_kind`). A model without submodules is one layer, :data:`WHOLE_MODEL` (see
    :func:`named_modules`)."""
    out: dict[str, list[tuple[str, nn.Parameter]]] = {}
    for layer, params in layer_parameters(named_modules(model)).items():
        trainable = [(n, p) for n, p in params if p.requires_grad]
        if trainable:
            out[layer] = trainable
    return out


def parameter_owners(
    modules: dict[str, nn.Module], trainable_only: bool = False
) -> dict[int, list[str]]:
    """The layers that hold each parameter, by the parameter's id, named as
    :func:`parameter_layers` names them: a module's name (in ``modules``; the parameters of
    a parametrized module's parametrizations are its own), or, for a parameter the model
    itself holds (its module named ``""``), the parameter's own name. A parameter held by
    more than one is shared (tied weights, tied parametrization originals: a gradient
    reaches it through each of them). ``trainable_only``: only the parameters that require
    gradients (the layers' parameters); otherwise every parameter (what a certificate or a
    repair rests on may be trained again later)."""
    owners: dict[int, list[str]] = {}
    for layer, params in layer_parameters(modules).items():
        for _, param in params:
            if param.requires_grad or not trainable_only:
                owners.setdefault(id(param), []).append(layer)
    return owners


def holders(names: list[str], modules: dict[str, nn.Module]) -> str:
    """Layers of :func:`parameter_owners` in words: modules by name, and a parameter the model
    itself holds as such (``the model itself (its parameter scale)``), not by a bare name
    that reads as a module's."""
    held = [n for n in names if n in modules]
    own = [n for n in names if n not in modules]
    parts = [f"another module ({', '.join(held)})"] if held else []
    if own:
        parts.append(f"the model itself (its parameter {', '.join(own)})")
    return " and ".join(parts)


def layer_kind(modules: dict[str, nn.Module], layer: str) -> str:
    """A layer's kind: its module's class name, or ``Parameter`` for one the model owns."""
    module = modules.get(layer)
    return class_name(module) if module is not None else "Parameter"


def class_name(module: nn.Module) -> str:
    """The name of the class the user gave ``module``: ``Conv2d``, not the
    ``ParametrizedConv2d`` that ``torch.nn.utils.parametrize`` makes it."""
    return parametrize.type_before_parametrizations(module).__name__


class GradientNorms:
    """Computes every layer's gradient norm with one batched pass over the gradients."""

    def __init__(self, layers: dict[str, list[tuple[str, nn.Parameter]]]) -> None:
        self.names = list(layers)
        self.params: list[nn.Parameter] = []
        self.owner: list[int] = []
        for index, name in enumerate(self.names):
            for _, p in layers[name]:
                self.params.append(p)
                self.owner.append(index)
        self._versions: list[int] | None = None
        self.moved: set[str] = set()
        """Layers whose parameters changed in place between the last two calls of
        :meth:`trained_between`, with a gradient or without."""
        self._marks: tuple[GradMarks | None, GradMarks | None] = (None, None)
        """The gradients as :meth:`mark` found them at the step before the previous check
        and at the step before the coming one."""
        self.unfed: set[str] = set()
        """Layers with a gradient at the last check that backward passes reached at the
        other steps since the step before the previous check no more often than at the
        check step itself (see :meth:`_unfed`; what it tells is of a layer whose gradient
        is all zero now)."""
        self.made: set[str] = set()
        """Layers of :attr:`unfed` with a gradient tensor made since the mark before the
        check, taken as made by the check step's backward (see :meth:`_unfed`): a loop
        that replaces gradients (``p.grad = p.grad.clamp(-1, 1)``) makes one at every step
        for a parameter no backward reached, which the caller tells by the loss's graph
        (see ``Monitor._sat_out``)."""

    def mark(self, step: int) -> None:
        """Note each gradient and its version counter, at the step before the check of
        ``step`` (in its ``monitor.step()``, after that step's backward and before its
        ``zero_grad()``): a weak reference (none is kept alive) and the counter, which every
        in-place change moves by one (a ``zero_grad(set_to_none=False)``, a backward that
        reaches the parameter, a clipping). A gradient that is a view (a DDP bucket view)
        shares its base's counter and is not noted. Marked again for the same check, the
        later mark replaces the earlier."""
        refs: list[weakref.ref[torch.Tensor] | None] = []
        versions: list[int] = []
        for p in self.params:
            g = p.grad
            if g is None or g._is_view():
                refs.append(None)
                versions.append(-1)
            else:
                refs.append(weakref.ref(g))
                versions.append(g._version)
        before, last = self._marks
        if last is None or last.step != step:
            before = last
        self._marks = (before, GradMarks(step, refs, versions))

    def _unfed(self, grads: list[torch.Tensor | None], step: int) -> tuple[set[str], set[str]]:
        """Layers with a gradient now that no backward reached at the steps since the one
        before the previous check more often than at the check step ``step`` itself
        (``grads`` as :meth:`grads` gave them): a block left out of the forward pass (its
        gradient all zero under ``zero_grad(set_to_none=False)``, while momentum or weight
        decay still move its parameters), or a parameter whose all-zero gradient a backward
        reached at every step, as at this one (``MultiheadAttention.out_proj``, whose weight
        its holder uses directly). A task head trained at other steps is fed.

        Counted per gradient from the marks (see :meth:`mark`): between the mark before the
        previous check (``s0``) and now, ``n = step - s0 + 1`` steps zeroed the gradient (and
        clipped it, ...) and their backwards reached it; between the mark before this check
        and now, one step did. A gradient with the same tensor throughout whose counter moved
        by no more than ``n`` times its move since the last mark got nothing at the other
        steps that it did not get at this one. A gradient that is not the tensor of the last
        mark was made since, by this step's backward (under ``set_to_none=True``): reached
        at this step (unless the loop made it: see :attr:`made`). A layer some gradient of which cannot be counted (no earlier mark,
        a tensor replaced in between, a view) is not unfed. Also returns the unfed layers
        with a gradient made since the last mark (see :attr:`made`)."""
        before, last = self._marks
        if last is None or last.step != step:
            return set(), set()
        fed = [False] * len(self.names)
        counted = [True] * len(self.names)
        gradless = [True] * len(self.names)
        made = [False] * len(self.names)
        for i, (owner, g) in enumerate(zip(self.owner, grads, strict=True)):
            if g is None:
                continue
            gradless[owner] = False
            ref = last.grads[i]
            if ref is None or ref() is not g:  # made since the last mark: reached now
                if g._is_view():
                    counted[owner] = False
                made[owner] = True
                continue
            old = None if before is None else before.grads[i]
            if before is None or old is None or old() is not g:
                counted[owner] = False
                continue
            now = g._version
            if now - before.versions[i] > (step - before.step + 1) * (now - last.versions[i]):
                fed[owner] = True
        unfed = {
            name
            for name, f, c, none in zip(self.names, fed, counted, gradless, strict=True)
            if c and not f and not none
        }
        return unfed, {name for name, m in zip(self.names, made, strict=True) if m} & unfed

    def trained_between(
        self, grads: list[torch.Tensor | None], step: int | None = None
    ) -> set[str]:
        """Layers without any gradient now (``grads`` as :meth:`grads` gave them) whose
        parameters changed in place since the previous call (their version counters moved):
        an optimizer updated them at steps between checks, as round-robin multi-task training
        does with a task head the checks never land on. Such a layer learns; it is not
        ``no_gradient``. (An optimizer leaves a parameter without a gradient untouched; a
        parameter clamped in place under no_grad() every step would count as trained.)

        Also sets :attr:`moved` and, at the check of ``step``, :attr:`unfed` (see
        :meth:`_unfed`)."""
        self.unfed, self.made = (set(), set()) if step is None else self._unfed(grads, step)
        versions = [p._version for p in self.params]
        before, self._versions = self._versions, versions
        self.moved = set()
        if before is None or len(before) != len(versions):
            return set()
        gradless = [True] * len(self.names)
        moved = [False] * len(self.names)
        for owner, g, was, now in zip(self.owner, grads, before, versions, strict=True):
            if g is not None:
                gradless[owner] = False
            if was != now:
                moved[owner] = True
        self.moved = {name for name, b in zip(self.names, moved, strict=True) if b}
        return {name for name, a, b in zip(self.names, gradless, moved, strict=True) if a and b}

    def compute(self, scale: float = 1.0) -> tuple[dict[str, float | None], bool]:
        """Norm per layer (``None`` for a layer with no gradient at all), and whether any
        gradient existed. ``scale`` divides the norms (a GradScaler's scale)."""
        return self.group(self.read(self.grads()), scale)

    def grads(self) -> list[torch.Tensor | None]:
        """Every parameter's gradient now (None where it has none), in parameter order."""
        return [p.grad for p in self.params]

    def gather(self, grads: list[torch.Tensor | None]) -> Gathered | None:
        """The sum of squares of every gradient in ``grads`` (as :meth:`grads` gave them),
        still on its device (None: no gradient at all). One batched pass; nothing is read
        back to the host here."""
        owners = self.owner
        if any(g is None for g in grads):  # some parameters have no gradient: keep the ones that do
            owners = [o for o, g in zip(self.owner, grads, strict=True) if g is not None]
            grads = [g for g in grads if g is not None]
        if not grads:
            return None
        with torch.no_grad():  # no graph, whatever the gradients require (create_graph=True)
            if any(g.layout != torch.strided for g in grads):  # type: ignore[union-attr]
                grads = [stored_values(g) for g in grads]  # type: ignore[arg-type]
            squares, order = squared_norms(grads)  # type: ignore[arg-type]
        return Gathered(squares, [owners[i] for i in order], [grads[i] for i in order])  # type: ignore[misc]

    def read(self, grads: list[torch.Tensor | None]) -> tuple[list[int], list[float]] | None:
        """:meth:`gather` read back to the host with :meth:`Gathered.exact`: the owner
        and exact sum of squares of each gradient (None: no gradient at all)."""
        gathered = self.gather(grads)
        if gathered is None:
            return None
        return gathered.owners, gathered.exact(gathered.squares.tolist())

    def group(
        self, read: tuple[list[int], list[float]] | None, scale: float = 1.0
    ) -> tuple[dict[str, float | None], bool]:
        """The per-layer norms from each gradient's owner and exact sum of squares: summed
        per layer in double precision on the host (a non-finite norm stays non-finite),
        divided by ``scale``; and whether any gradient existed."""
        result: dict[str, float | None] = dict.fromkeys(self.names)
        if read is None:
            return result, False
        owners, squares = read
        sums = [0.0] * len(self.names)
        for owner, value in zip(owners, squares, strict=True):
            sums[owner] += value
        for i in set(owners):
            # a GradScaler's scale that underflowed to 0 leaves nothing to unscale: NaN (a
            # skipped step), never a ZeroDivisionError out of monitor.step()
            result[self.names[i]] = math.sqrt(sums[i]) / scale if scale > 0 else math.nan
        return result, True


@dataclass(frozen=True)
class GradMarks:
    """The layers' gradients at the step before a check (see :meth:`GradientNorms.mark`),
    in parameter order: a weak reference to each (None: no gradient, or a view) and its
    version counter (-1 for none)."""

    step: int  # the check's
    grads: list[weakref.ref[torch.Tensor] | None]
    versions: list[int]


@dataclass
class Gathered:
    """Sums of squares of the gradients that exist (one device tensor), with the layer that
    owns each and the gradient itself (for a retake in float64)."""

    squares: torch.Tensor
    owners: list[int]
    grads: list[torch.Tensor]

    def exact(self, squares: list[float]) -> list[float]:
        """``squares`` (this pass's values read back), with every value that came out exactly
        0 or infinite (an underflow or overflow of the squares, or a gradient that really is
        zero or infinite) taken again in float64."""
        out = list(squares)
        for i, value in enumerate(out):
            if value == 0.0 or value == math.inf:
                with torch.no_grad():
                    out[i] = (
                        torch.linalg.vector_norm(self.grads[i], dtype=torch.float64).item() ** 2
                    )
        return out


def stored_values(grad: torch.Tensor) -> torch.Tensor:
    """A dense tensor with the same L2 norm as ``grad``: itself when dense, the values of a
    sparse gradient (``nn.Embedding(sparse=True)``; COO entries for one index summed first)."""
    if grad.layout == torch.strided:
        return grad
    if grad.layout == torch.sparse_coo:
        return grad.coalesce().values()
    if grad.layout in (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc):
        return grad.values()
    return grad.to_dense()


BLAS_DTYPES = (torch.float32, torch.float64)
DOT_MIN = 1 << 14  # smaller gradients: one _foreach_norm call costs less than a dot each


def squared_norms(grads: list[torch.Tensor]) -> tuple[torch.Tensor, list[int]]:
    """Each tensor's sum of squares, in one tensor on the first gradient's device, and the
    index in ``grads`` of each value.

    On the CPU a dense float32/float64 tensor of at least ``DOT_MIN`` elements takes a BLAS
    ``dot`` with itself; every other tensor (on a GPU, small, half precision,
    non-contiguous) goes into one ``torch._foreach_norm`` call in float32 (float64 when one
    of them is), whose norms are squared."""
    dots: list[torch.Tensor] = []
    order: list[int] = []
    rest: list[torch.Tensor] = []
    rest_at: list[int] = []
    for i, g in enumerate(grads):
        if (
            g.is_cpu  # (not g.device.type: that makes a device object per gradient)
            and g.dtype in BLAS_DTYPES
            and g.layout == torch.strided
            and g.is_contiguous()
            and DOT_MIN <= g.numel() < 2**31
        ):
            flat = g.view(-1)
            dots.append(torch.dot(flat, flat))
            order.append(i)
        else:
            rest.append(g)
            rest_at.append(i)
    pieces = [torch.stack(dots)] if dots else []
    if rest:
        wide = any(g.dtype == torch.float64 for g in rest)  # float32 may not narrow them
        norms = torch._foreach_norm(rest, 2.0, dtype=torch.float64 if wide else torch.float32)
        device = norms[0].device
        if any(n.device != device for n in norms):
            norms = tuple(n.to(device) for n in norms)
        pieces.append(torch.stack(norms).square())
        order += rest_at
    if len(pieces) == 2 and pieces[1].device != pieces[0].device:
        pieces[1] = pieces[1].to(pieces[0].device)
    return (torch.cat(pieces) if len(pieces) == 2 else pieces[0]), order


def rel_delta(before: float, after: float) -> float:
    """Size of a change in decades, used in messages."""
    return abs(math.log10(after) - math.log10(before))


@dataclass
class LayerBaseline:
    """Running mean and variance of log10 gradient norm of one layer, with the running mean
    of log10 loss at the same checks (what the loss was while the baseline formed)."""

    mean: float = 0.0
    var: float = 0.0
    count: int = 0
    loss_mean: float = 0.0
    loss_count: int = 0

    def update(
        self, log_norm: float, alpha: float, log_loss: float | None = None, *, shift: bool = False
    ) -> None:
        """Add one finite log10 norm (plain mean for the first 1/alpha samples, then EWMA),
        and the check's log10 loss when it has one. ``shift``: the norm is out of the band
        for a reason the network explains; the mean follows it, the spread stays (a level
        that moved is not a noisier one: folding the fall into the variance widened a
        band to 27 decades, and no later fall was ever vanishing)."""
        self.count += 1
        weight = max(alpha, 1.0 / self.count)
        delta = log_norm - self.mean
        self.mean += weight * delta
        if not shift:
            self.var = (1.0 - weight) * (self.var + weight * delta * delta)
        if log_loss is not None:
            self.loss_count += 1
            self.loss_mean += max(alpha, 1.0 / self.loss_count) * (log_loss - self.loss_mean)

    @property
    def std(self) -> float:
        """Running standard deviation of log10 norm."""
        return math.sqrt(max(self.var, 0.0))

    @property
    def value(self) -> float:
        """The baseline: 10 to the running mean of log10 norm."""
        return 10.0**self.mean


@dataclass
class GradientAlarms:
    """Alarm state machine over per-layer gradient norms, one ``observe`` per check."""

    kinds: dict[str, str]
    warmup: int = 5
    sigma_band: float = 4.0
    min_decades: float = 1.0
    alpha: float = 0.1
    checks_in_a_row: int = 2
    """Checks in a row out of the band, on the same side, before a ``vanishing`` or
    ``exploding`` alarm (one easy or one hard batch moves a decade; a gradient that vanishes
    or explodes stays there)."""
    network_layers: int = 3
    """Layers with a baseline needed before a fall the whole network shares is told apart
    from a layer's own."""
    loss_share: float = 0.5
    """A fall of d decades is explained when the loss fell by at least ``loss_share * d``
    decades below its level while the layer's baseline formed."""
    loss_rise: float = 0.2
    """Decades the loss now (median of the last 3 checks) may stand above the lowest median
    of 10 checks of the run for a fall the whole network shares to be explained (Adam at
    100 x its learning rate after convergence: every layer's gradient fell two decades as
    the loss climbed to chance)."""
    rebase_min: int = 10
    """Checks in a row a layer's norm must have stood above its band before the loss rule
    took a lasting spike as the loss's new level, for its baseline to take the new level
    too (half the loss rule's window of 20)."""
    unfed_cap: int = 32
    """Checks in a row whose windows gave an intermittent layer no gradient that make it
    ``no_gradient`` at the most (see :meth:`unfed_needed`): a task head drawn at random
    whose longest gap grew is still reported, within this many checks of the last window
    that fed it, once it is never trained again."""
    unfed: dict[str, int] = field(default_factory=dict)
    """Per layer, the checks in a row, up to the last, whose windows gave it no gradient
    (none, or an all-zero one, and not sat out: see :meth:`observe`)."""
    intermittent: dict[str, int] = field(default_factory=dict)
    """Per layer, the longest run of :attr:`unfed` checks after which a gradient reached it
    again: a layer that learns at some windows only (a task head drawn at random, or taken
    in turn with more tasks than ``check_every + 1``); at least 1 for a routed layer (see
    :attr:`seated`)."""
    seated: set[str] = field(default_factory=set)
    """Layers that sat a check step out (no gradient then, one in its window: a task head
    the forward pass did not choose at that step) and were not fed at a check since. Fed
    at a later check (a gradient, or sat out again) such a layer is routed: the forward
    pass picks it at some steps only, so a window that misses it is no evidence of a bug;
    it becomes intermittent, its longest run at least 1 (no_gradient after 3 unfed checks
    in a row). A block bypassed at a check step sits that check out and is unfed from the
    next: it is not routed."""
    held: dict[str, list[tuple[float, float | None]]] = field(default_factory=dict)
    """Per layer, the log10 norms (and log10 losses) of its latest checks in a row above
    its band, kept out of its baseline (see ``new_level`` in :meth:`observe`)."""
    _losses: deque[float] = field(default_factory=lambda: deque(maxlen=10))
    _best: float | None = None
    baselines: dict[str, LayerBaseline] = field(default_factory=dict)
    active: dict[str, str] = field(default_factory=dict)
    out: dict[str, tuple[str, int]] = field(default_factory=dict)  # side, checks in a row
    checks: int = 0

    def observe(
        self,
        step: int,
        norms: dict[str, float | None],
        loss: float | None = None,
        trained_between: set[str] | frozenset[str] = frozenset(),
        loss_above: bool = False,
        new_level: bool = False,
        whole_window: bool = True,
        routed: set[str] | frozenset[str] = frozenset(),
    ) -> list[tuple[str, dict[str, Any]]]:
        """Update baselines with this check's norms (``loss``: the check's loss value, when
        there is one); return the alarm events to write. A layer in ``trained_between``
        (updated since the last check, and no gradient now, or an all-zero one while its
        modules did not run in this step's forward pass and a gradient reached it at the
        other steps since the previous check's) is not judged at this check when its norm
        is None or 0: its alarm state stays. Nor is a layer whose window gave it no
        gradient (none or an all-zero one now, and not in ``trained_between``) before its
        run of such checks reaches :meth:`unfed_needed`: 1 check, or, for a layer that went
        unfed and was fed again (a task head drawn at random) or is routed (see
        :attr:`seated`), more than twice its longest such run, at most ``unfed_cap`` (an all-zero gradient at a layer's first check is
        not counted: see below; nor is any check whose window is not a whole one,
        ``whole_window`` False: the Monitor's first, whose window is the steps since it
        started, step 0 alone when it starts at a check, so a task head the first step did
        not draw is not made intermittent by it, nor, with ``warmup=0``, ``no_gradient``
        for the whole run when no later check step draws it: a layer without a gradient
        there is not judged). ``loss_above``: the loss rule found
        this check's loss above its margin (a spike, or above it once). ``routed``: layers
        without a gradient whose modules ran on empty tensors only at this check step (an
        expert given no token, see ``Monitor._ran_empty``): routed, as a layer that sat a
        check step out and learnt again is, their longest run at least 1, so such a check
        counts towards a run of unfed checks without alarming at the first (whether the
        window's other steps gave the expert tokens is not known; an expert never routed
        to again is ``no_gradient`` at the 3rd). A rise above the
        band that the loss explains is ``exploding`` only then (see
        :meth:`_rise_explained`). ``new_level``: at this check
        the loss rule took a spike that lasted as the loss's new level (a curriculum step):
        a layer whose norm stood above its band at the last ``rebase_min`` checks or more
        takes the level of those norms (and their losses) as its baseline's mean, its
        spread kept, before this check is judged. Before, those norms, a rise the loss
        explains, never entered the baseline, which stayed at the old task's level for
        good: a later gradient explosion of up to the loss's rise in decades (15-25 x
        after a curriculum step of 30 x) was taken for the loss's own rise, and no
        ``exploding`` was raised."""
        self.checks += 1
        if new_level:
            self._rebase()
        log_loss = math.log10(loss) if loss is not None and 0.0 < loss < math.inf else None
        if log_loss is not None:
            self._losses.append(loss)  # type: ignore[arg-type]
            if len(self._losses) >= 3:
                recent = statistics.median(self._losses)
                self._best = recent if self._best is None else min(self._best, recent)
        seen: list[tuple[str, float | None, LayerBaseline, float | None, float, float]] = []
        fresh: set[str] = set()  # layers judged for the first time (new, or unfrozen again)
        sigma_band, min_decades = self.sigma_band, self.min_decades
        unfed, seated = self.unfed, self.seated
        for layer, norm in norms.items():
            if norm is not None and not math.isfinite(norm):
                continue  # a non-finite gradient is its own event; the alarm state stays
            base = self.baselines.get(layer)
            if norm is None or norm == 0.0:
                if layer in trained_between:
                    self._fed(layer, sat_out=True)
                    continue  # trained at other steps (round-robin tasks): nothing to judge now
                if layer in routed and self.intermittent.get(layer, 0) < 1:
                    self.intermittent[layer] = 1  # (routed: see the docstring)
                if not whole_window:
                    if norm is None:  # (an all-zero one: a first check's, see below)
                        continue  # the Monitor's first check: no run of unfed checks yet
                elif not (base is None and norm == 0.0) and not self._unfed_long_enough(layer):
                    continue  # an intermittent layer's gap within its usual length
            elif layer in unfed or layer in seated:  # (lookups per layer per check, no call)
                self._fed(layer)
            if base is None:  # (setdefault would build a LayerBaseline per layer per check)
                base = self.baselines[layer] = LayerBaseline()
                fresh.add(layer)
            distance = None
            if norm is not None and norm > 0.0 and base.count >= 2:
                distance = math.log10(norm) - base.mean
            # the baseline's spread and band, once per layer (as LayerBaseline.std and
            # _band give them; no baseline changes before the layer is judged below)
            std = math.sqrt(max(base.var, 0.0))
            seen.append((layer, norm, base, distance, std, max(sigma_band * std, min_decades)))
        distances = [d for _, _, _, d, _, _ in seen if d is not None]
        shift = statistics.median(distances) if len(distances) >= self.network_layers else None
        if shift is not None and any(
            d is not None and d - shift > band for _, _, _, d, _, band in seen
        ):
            shift = None  # a layer kept its gradient (a dead head's): not the whole network
        events: list[tuple[str, dict[str, Any]]] = []
        for layer, norm, base, distance, std, band in seen:
            diagnosis, sigma = _diagnosis(norm, distance, std, band)
            if diagnosis == "exploding" and norm is not None:  # kept out of the baseline
                above = self.held.setdefault(layer, [])
                above.append((math.log10(norm), log_loss))
                del above[: -2 * self.rebase_min]
            else:
                self.held.pop(layer, None)
            explained = diagnosis == "vanishing" and self._explained(
                distance, base, log_loss, shift
            )
            if explained:
                diagnosis = sigma = None  # the network converging, not this layer vanishing
            risen = (
                diagnosis == "exploding"
                and not loss_above
                and self._rise_explained(distance, base, log_loss)
            )
            if risen:  # the loss's own rise, which the loss rule calls no spike
                diagnosis = sigma = None
            elif diagnosis is None and norm is not None and norm > 0:
                base.update(math.log10(norm), self.alpha, log_loss, shift=explained)
            side, run = self.out.get(layer, ("", 0))
            run = run + 1 if diagnosis == side else 1
            if diagnosis in ("vanishing", "exploding"):
                self.out[layer] = (diagnosis, run)
            else:
                self.out.pop(layer, None)
            if self.checks <= self.warmup:
                continue
            if layer in fresh and norm == 0.0 and layer not in self.active:
                # An all-zero gradient at a layer's first check is what a zero-initialised
                # layer after it gives (LoRA's lora_A below lora_B = 0, whose first step
                # moves B): no_gradient if it is still all zero at its next check.
                continue
            current = self.active.get(layer)
            if (
                diagnosis in ("vanishing", "exploding")
                and current != diagnosis
                and run < self.checks_in_a_row
            ):
                continue  # out of the band once: an alarm if it stays there at the next check
            if diagnosis is not None and current != diagnosis:
                self.active[layer] = diagnosis
                events.append(
                    (
                        "alarm",
                        {
                            "step": step,
                            "severity": "warning",
                            "layer": layer,
                            "kind": self.kinds[layer],
                            "diagnosis": diagnosis,
                            "grad_norm": norm,  # None: no gradient at all (as in metrics)
                            "baseline": base.value if base.count else None,
                            "sigma": sigma,
                        },
                    )
                )
            elif diagnosis is None and current is not None:
                del self.active[layer]
                events.append(
                    (
                        "alarm_cleared",
                        {
                            "step": step,
                            "layer": layer,
                            "diagnosis": current,
                            "grad_norm": norm,
                            "baseline": base.value,
                        },
                    )
                )
        return events

    def unfed_needed(self, layer: str) -> int:
        """Checks in a row whose windows give ``layer`` no gradient that make it
        ``no_gradient``: 1, or, for a layer that went unfed and was fed again, or is routed
        (:attr:`intermittent`), more than twice its longest such run, at most
        :attr:`unfed_cap`."""
        longest = self.intermittent.get(layer, 0)
        return 1 if longest == 0 else min(2 * longest + 1, self.unfed_cap)

    def _unfed_long_enough(self, layer: str) -> bool:
        """Count a check whose window gave ``layer`` no gradient; whether its run of them
        is long enough to judge it (see :meth:`unfed_needed`)."""
        run = self.unfed[layer] = self.unfed.get(layer, 0) + 1
        return run >= self.unfed_needed(layer)

    def _fed(self, layer: str, sat_out: bool = False) -> None:
        """A gradient reached ``layer`` in this check's window (``sat_out``: at its other
        steps, not the check step's): its run of unfed checks, if any, ends, and is
        remembered when it is its longest; a layer that sat an earlier check step out is
        routed (see :attr:`seated`)."""
        run = self.unfed.pop(layer, 0)
        if layer in self.seated:
            self.seated.discard(layer)
            run = max(run, 1)
        elif sat_out and layer not in self.intermittent:
            self.seated.add(layer)
        if run:
            self.intermittent[layer] = max(self.intermittent.get(layer, 0), run)

    def forget(self, layer: str) -> None:
        """A new module under ``layer``'s name (a replaced head): its baseline, its alarm,
        its unfed run and its intermittency were the old module's."""
        for state in (self.baselines, self.active, self.unfed, self.intermittent):
            state.pop(layer, None)
        self.seated.discard(layer)

    def unchecked(self, layer: str) -> None:
        """``layer`` is no longer checked (frozen, or its module removed): its alarm and its
        run of unfed checks end (a frozen layer is not unfed); its baseline and its longest
        unfed run are kept for when it is checked again."""
        self.active.pop(layer, None)
        self.unfed.pop(layer, None)

    def _rebase(self) -> None:
        """The loss's new level is taken (see ``new_level`` in :meth:`observe`): each layer
        whose norm stood above its band at ``rebase_min`` checks in a row or more, by a rise
        the loss's own rise explains (:meth:`_rise_explained` at the medians of those norms
        and of their losses), takes the median of those norms as its baseline's mean (and
        of their losses as the loss level it formed at); its spread is kept (a level that
        moved is not a noisier one). A loss that is not positive has no decades to compare:
        the layer takes the new level. A layer that rose by more than the loss explains
        exploded on its own at the curriculum step: its baseline and its alarm stay (before,
        a fc1 whose gradient went 10**4 x at the same step as a 30 x loss step was cleared,
        at 10**5.5 x its old level, when the loss rule took the new level)."""
        for layer, above in self.held.items():
            base = self.baselines.get(layer)
            if base is None or len(above) < self.rebase_min:
                continue
            level = statistics.median(n for n, _ in above)
            losses = [loss for _, loss in above if loss is not None]
            loss_level = statistics.median(losses) if losses else None
            if (
                loss_level is not None
                and base.loss_count >= 2
                and not self._rise_explained(level - base.mean, base, loss_level)
            ):
                continue  # its own explosion, not the loss's new level
            base.mean = level
            if loss_level is not None:
                base.loss_mean = loss_level
        self.held.clear()

    def new_loss_series(self) -> None:
        """Forget the losses of the model before a change of its modules (a replaced head):
        the lowest median the loss now is compared with is the new model's (the old
        model's lower loss made every network-wide fall after it look like a network
        failing, see :meth:`_explained`). The layers' baselines are kept or dropped by the
        caller."""
        self._losses.clear()
        self._best = None

    def _band(self, base: LayerBaseline) -> float:
        return max(self.sigma_band * base.std, self.min_decades)

    def _explained(
        self,
        distance: float | None,
        base: LayerBaseline,
        log_loss: float | None,
        shift: float | None,
    ) -> bool:
        """Whether a fall below the band is the network's, not the layer's: the loss fell by
        at least ``loss_share`` of the fall's decades (a converging network: a
        cross-entropy's gradient shrinks with it, a squared error's with its root), or the
        whole network's gradients fell with it (the median layer's fall; within the band of
        it, and ``shift`` is None when some layer stayed above it by more than its band)
        while the loss now (median of the last 3 checks) is within ``loss_rise`` decades of
        the lowest median of 10 checks of the run."""
        if distance is None:
            return False
        rise = log_loss - base.loss_mean if log_loss is not None and base.loss_count >= 2 else None
        if rise is not None and rise <= self.loss_share * distance:
            return True
        if self._climbed() > self.loss_rise:
            return False  # every layer falling while the loss climbs: the network is failing
        return shift is not None and distance - shift >= -self._band(base)

    def _rise_explained(
        self, distance: float | None, base: LayerBaseline, log_loss: float | None
    ) -> bool:
        """Whether a rise above the band is the loss's own: the loss rose by at least
        ``loss_share`` of the rise's decades above its level while the layer's baseline
        formed (a cross-entropy's gradient grows with the loss near convergence). The
        caller asks only when the loss rule found no spike; such a norm stays out of the
        baseline (the level it formed at is the one to come back to)."""
        if distance is None or log_loss is None or base.loss_count < 2:
            return False
        return log_loss - base.loss_mean >= self.loss_share * distance

    def _climbed(self) -> float:
        """Decades the loss now (the median of the last 3 checks) stands above the lowest
        median of 10 checks in the run (0 until three checks had a positive finite loss):
        3 checks follow a climb within two checks, as a vanishing alarm needs."""
        if len(self._losses) < 3 or self._best is None:
            return 0.0
        now = statistics.median(list(self._losses)[-3:])
        return math.log10(now) - math.log10(self._best)


def _diagnosis(
    norm: float | None, distance: float | None, std: float, band: float
) -> tuple[str | None, float | None]:
    """A layer's diagnosis at a check and its distance from the baseline in sigmas, from its
    norm, the distance in decades of its log10 norm from the baseline's mean (None: no
    baseline yet), the baseline's spread (``std``) and band (``GradientAlarms._band``)."""
    if norm is None or norm == 0.0:
        return "no_gradient", None
    if distance is None:
        return None, None
    sigma = distance / std if std > 0 else (math.copysign(math.inf, distance))
    if distance < -band:
        return "vanishing", _finite_sigma(sigma)
    if distance > band:
        return "exploding", _finite_sigma(sigma)
    return None, None


def _finite_sigma(sigma: float) -> float | None:
    return sigma if math.isfinite(sigma) else None
