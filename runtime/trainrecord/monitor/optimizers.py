"""Which optimizer steps the model: the one given to the Monitor, the ones it wraps, or one
that replaced it mid-run.

A training loop may replace its optimizer by a new object over the same parameters (Adam
for a warm-up, then SGD). Certificates read the optimizer's state (momentum left on a
dead channel would move it) and repairs zero it: read from the discarded optimizer, a
certificate is false and a repair leaves the real momentum in place. So from the step
before each check up to the check (never between checks), a global optimizer step hook
(:func:`torch.optim.optimizer.register_optimizer_step_post_hook`) notes which optimizers
stepped (:class:`StepWatch`); at the check, :func:`decide` says whether the Monitor's
optimizer still steps the model, was replaced by one other, or whether several others
share its parameters now (then nothing is certified or repaired until one is known). A
Monitor given no optimizer follows the first one seen stepping the model's parameters.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

WRAPPER_ATTRIBUTES = ("_optimizer", "optimizer")
"""Where a framework's pass-through wrapper keeps the optimizer it steps (Lightning's
``LightningOptimizer``, accelerate's ``AcceleratedOptimizer``): its update is the inner
one's. An object holding an optimizer there that keeps state or tensors of its own
(torch_optimizer's ``Lookahead``: ``optimizer``, and slow weights in its own ``state``) has
an update of its own: see :func:`passes_through`."""

BASE_ATTRIBUTES = ("base_optimizer", "_base_optimizer", "optim")
"""Where an optimizer with an update of its own around another keeps that one (SAM, ASAM
and GSAM: ``base_optimizer``; timm's Lookahead: ``_base_optimizer``): it moves the
parameters itself (SAM's ascent step, Lookahead's slow weights) and keeps state of its own
(SAM's ``old_p``, a copy of the parameter it restores) besides the base one's momentum.
torch's ``ZeroRedundancyOptimizer`` keeps its local optimizer in ``optim``: that one holds
only this rank's shard of the parameters and of the state, so it is followed (its steps are
the ZeRO's, repairs reset each rank's shard) but never looked through as a pass-through
wrapper (``WRAPPER_ATTRIBUTES``): what a certificate reads must be the same on every rank,
and a shard is not."""


def inner_optimizer(optimizer: torch.optim.Optimizer | None) -> torch.optim.Optimizer | None:
    """The optimizer a framework's wrapper holds (Lightning's ``LightningOptimizer``, whose
    class is made on the fly as ``LightningSGD``; accelerate's ``AcceleratedOptimizer`` from
    the Hugging Face Trainer): its state and update are the inner one's, and its class is
    what a certificate's proof rests on. A wrapper with an update of its own (SAM's
    ``base_optimizer``; a Lookahead holding ``optimizer`` and slow weights of its own, see
    :func:`passes_through`) is not looked through: its class is the one a proof would need."""
    for _ in range(8):  # (a wrapper of a wrapper)
        inner = next(
            (
                found
                for found in (getattr(optimizer, name, None) for name in WRAPPER_ATTRIBUTES)
                if isinstance(found, torch.optim.Optimizer)
            ),
            None,
        )
        if inner is None or inner is optimizer or not passes_through(optimizer, inner):
            break
        optimizer = inner
    return optimizer


def passes_through(wrapper: Any, inner: torch.optim.Optimizer) -> bool:
    """Whether ``wrapper`` (holding ``inner`` in a ``WRAPPER_ATTRIBUTES`` attribute) is a
    pass-through: its ``state`` is the inner one's (a property, as accelerate's, or the
    same dictionary, as Lightning's copy of the inner ``__dict__``), and no attribute of its
    own holds a tensor. torch_optimizer's ``Lookahead`` keeps its slow weights in a
    ``state`` of its own, and other Lookaheads in a list (``slow_weights``) beside the
    inner ``state``: each moves the parameters itself (toward the slow weights every k
    steps), so a zero gradient and zero inner momentum do not keep a parameter still."""
    try:
        if getattr(wrapper, "state", None) is not getattr(inner, "state", None):
            return False
        own = vars(wrapper)
    except (AttributeError, TypeError, RuntimeError):  # no __dict__, a property that raises
        return True
    inner_attributes = getattr(inner, "__dict__", {})
    for name, value in own.items():
        if value is inner or value is inner_attributes.get(name, _MISSING):
            continue
        if holds_tensor(value, 3):
            return False
    return True


_MISSING = object()


def holds_tensor(value: Any, depth: int) -> bool:
    """Whether ``value`` is a tensor or a list, tuple or dict holding one (``depth`` deep)."""
    if isinstance(value, torch.Tensor):
        return True
    if depth <= 0:
        return False
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return any(holds_tensor(v, depth - 1) for v in value[:64])
    return False


def optimizer_chain(optimizer: torch.optim.Optimizer | None) -> list[torch.optim.Optimizer]:
    """``optimizer`` and every optimizer it holds, through pass-through wrappers and
    ``base_optimizer`` alike (SAM -> its SGD), outermost first; empty for None."""
    out: list[torch.optim.Optimizer] = []
    todo = [optimizer]
    while todo and len(out) < 16:
        current = todo.pop(0)
        if not isinstance(current, torch.optim.Optimizer) or any(current is o for o in out):
            continue
        out.append(current)
        todo += [getattr(current, name, None) for name in WRAPPER_ATTRIBUTES + BASE_ATTRIBUTES]
    return out


def held_parameters(optimizer: torch.optim.Optimizer) -> set[int]:
    """The ids of the tensors ``optimizer``'s parameter groups hold."""
    try:
        return {id(p) for group in optimizer.param_groups for p in group["params"]}
    except (AttributeError, KeyError, TypeError):  # a wrapper without groups of its own
        return set()


@dataclass
class StepWatch:
    """The optimizers that stepped while the watch was installed: a global step post hook
    (one dictionary write per optimizer step), installed when a check is armed and removed
    at the check, so steps between checks pay nothing. The hook holds the optimizers
    weakly and nothing of the Monitor."""

    seen: dict[int, weakref.ref[torch.optim.Optimizer]] = field(default_factory=dict)
    handle: Any = None

    def install(self) -> None:
        """Start noting optimizer steps (again; what was noted is kept until taken)."""
        if self.handle is not None:
            return
        seen = self.seen

        def stepped(optimizer: torch.optim.Optimizer, *_: Any) -> None:
            seen[id(optimizer)] = weakref.ref(optimizer)

        self.handle = register_optimizer_step_post_hook(stepped)

    def remove(self) -> None:
        """Stop noting optimizer steps."""
        if self.handle is not None:
            self.handle.remove()
            self.handle = None

    def take(self) -> list[torch.optim.Optimizer]:
        """The optimizers (still alive) that stepped since the last take, and forget them."""
        found = [o for o in (ref() for ref in self.seen.values()) if o is not None]
        self.seen.clear()
        return found


@dataclass(frozen=True)
class Decision:
    """What the optimizer steps of a check's window say: ``stepped`` (the one followed, or
    one it wraps, stepped), ``keep`` (nothing told otherwise), ``adopt`` the one that
    replaced it (``candidates[0]``), or ``unknown``: several others that hold its parameters
    stepped, none inside another (``candidates``)."""

    kind: str
    candidates: tuple[torch.optim.Optimizer, ...] = ()


def decide(
    followed: list[torch.optim.Optimizer],
    stepped: list[torch.optim.Optimizer],
    in_model: Callable[[], set[int]],
) -> Decision:
    """Decide from the optimizers that ``stepped`` in a check's window.

    ``followed``: the Monitor's optimizer and those it wraps (:func:`optimizer_chain`).
    It ``stepped`` when one of them did. It is kept when nothing stepped (the first check,
    a step the GradScaler skipped, an update that is no torch optimizer's), and when what
    stepped holds none of its parameters (another model's optimizer, the other half of a
    GAN, a head trained at other steps, or while the parameters it holds are frozen): only
    an optimizer over the same parameters replaces it; when it holds none of the model's
    parameters at all, frozen or not (``in_model()``, the ids of every parameter of the
    model, asked only then: the parameters were replaced, ``load_state_dict(assign=True)``,
    and the optimizer built again; or none was followed: the Monitor was given
    ``optimizer=None``), any optimizer over the model's does. One such
    optimizer (a wrapper and what it wraps count as one: the outermost is taken) is
    adopted; several are ``unknown``."""
    ids = {id(o) for o in followed}
    if any(id(o) in ids for o in stepped):
        return Decision("stepped")
    if not stepped:
        return Decision("keep")
    params: set[int] = set()
    for optimizer in followed:
        params |= held_parameters(optimizer)
    model = in_model()
    if params.isdisjoint(model):
        params = model
    candidates = [o for o in stepped if held_parameters(o) & params]
    if not candidates:
        return Decision("keep")
    inside = {id(o) for c in candidates for o in optimizer_chain(c)[1:]}
    outer = tuple(c for c in candidates if id(c) not in inside)
    if len(outer) == 1:
        return Decision("adopt", outer)
    return Decision("unknown", outer or tuple(candidates))
