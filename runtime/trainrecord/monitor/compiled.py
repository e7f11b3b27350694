"""torch.compile support: the compiled wrapper peeled off, and check steps run eagerly.

A model compiled with ``torch.compile`` is an ``OptimizedModule`` whose parameters are
named ``_orig_mod.<name>``; the monitor observes the original module, so layer names are
the same as in an uncompiled run. (``model.compile()``, in place, keeps the module and its
names.)

The channel statistics need forward hooks, and TorchDynamo does not mix with hooks that
come and go: hooks present when a function is first compiled are traced into it (graph
breaks at every hooked module, on every later step, hooked or not), and hooks added after
it was compiled are not seen at all (``torch._dynamo.config.skip_nnmodule_hook_guards``,
on by default): the check would silently measure nothing. So while a check step's hooks
are installed (from the end of the step before it until the check), the monitor sets the
compiler's stance to ``force_eager``: the check step's forward and backward run eagerly,
with the hooks, exactly as in an uncompiled run, and every other step runs the compiled
code, which never saw a hook. The stance is process-wide: any compiled function called in
that window (a compiled optimizer step, for instance) runs eagerly too, once per check.
The stance is only touched when TorchDynamo has been imported (nothing compiled, nothing
to do), and is restored at the check, at ``close()`` and when the monitor is disarmed.
Creating a ``torch.optim`` optimizer imports TorchDynamo (torch 2.13), so a Monitor created
before ``torch.compile`` in a real loop enters the stance at every arming too; the check's
hooks note a compiled wrapper of the monitored model being called (its global hooks see
the wrapper), and the manifest then says the model is compiled. With ``check_every=1``
every step is a check step: the compiled code never runs.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from torch import nn

COMPILED_WRAPPER = "OptimizedModule"
"""The class torch.compile wraps a module in (torch._dynamo.eval_frame)."""


def is_compiled_wrapper(model: nn.Module) -> bool:
    """True for the wrapper ``torch.compile(module)`` returns."""
    return type(model).__name__ == COMPILED_WRAPPER and isinstance(
        getattr(model, "_orig_mod", None), nn.Module
    )


def is_compiled(model: nn.Module) -> bool:
    """True when calling ``model`` runs compiled code: ``torch.compile(model)`` or
    ``model.compile()``."""
    return is_compiled_wrapper(model) or getattr(model, "_compiled_call_impl", None) is not None


class EagerStance:
    """Holds the compiler's stance at ``force_eager`` between :meth:`enter` and :meth:`exit`.

    Shared by every monitor in the process (a GAN's two, say): the stance is set by the
    first one to enter and given back when the last one exits, so one monitor's check never
    ends another's eager window."""

    _lock = threading.Lock()
    _holders = 0
    _held: Any = None

    def __init__(self) -> None:
        self.active = False

    def enter(self) -> None:
        """Run compiled code eagerly from now on (no-op when nothing was ever compiled,
        or when called inside a compiled region, where the stance cannot change)."""
        if self.active or "torch._dynamo" not in sys.modules:
            return
        cls = type(self)
        with cls._lock:
            if cls._holders == 0:
                import torch.compiler

                try:
                    cls._held = torch.compiler.set_stance("force_eager")
                except RuntimeError:  # "attempted to set_stance in a torch.compile region"
                    return
            cls._holders += 1
            self.active = True

    def exit(self) -> None:
        """Give the stance back to what it was before the first :meth:`enter` (when this is
        the last holder)."""
        if not self.active:
            return
        cls = type(self)
        with cls._lock:
            self.active = False
            cls._holders -= 1
            if cls._holders == 0 and cls._held is not None:
                held, cls._held = cls._held, None
                held.__exit__(None, None, None)
