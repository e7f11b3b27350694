"""Which optimizers the Monitor's optimizer is: the one given to it and the ones it wraps
(a framework's pass-through wrapper; SAM's ``base_optimizer``)."""

from __future__ import annotations

import torch

WRAPPER_ATTRIBUTES = ("_optimizer", "optimizer")
"""Where a framework's pass-through wrapper keeps the optimizer it steps (Lightning's
``LightningOptimizer``, accelerate's ``AcceleratedOptimizer``): its update is the inner
one's."""

BASE_ATTRIBUTES = ("base_optimizer", "_base_optimizer")
"""Where an optimizer with an update of its own around another keeps that one (SAM, ASAM
and GSAM: ``base_optimizer``; timm's Lookahead: ``_base_optimizer``): it moves the
parameters itself (SAM's ascent step, Lookahead's slow weights) and keeps state of its own
(SAM's ``old_p``, a copy of the parameter it restores) besides the base one's momentum."""


def inner_optimizer(optimizer: torch.optim.Optimizer | None) -> torch.optim.Optimizer | None:
    """The optimizer a framework's wrapper holds (Lightning's ``LightningOptimizer``, whose
    class is made on the fly as ``LightningSGD``; accelerate's ``AcceleratedOptimizer`` from
    the Hugging Face Trainer): its state and update are the inner one's, and its class is
    what a certificate's proof rests on. A wrapper with an update of its own (SAM's
    ``base_optimizer``) is not looked through: its class is the one a proof would need."""
    for _ in range(8):  # (a wrapper of a wrapper)
        inner = next(
            (
                found
                for found in (getattr(optimizer, name, None) for name in WRAPPER_ATTRIBUTES)
                if isinstance(found, torch.optim.Optimizer)
            ),
            None,
        )
        if inner is None or inner is optimizer:
            break
        optimizer = inner
    return optimizer


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
