"""A check's gradient read on a worker thread, while the optimizer steps.

On the CPU the gradient read of a check (one pass over every gradient, memory-bound, and
free of Python's global lock) can run beside the optimizer's step: ``Deferred`` runs it on
one worker thread per monitor and the training thread goes on at once. The check's
bookkeeping (norms per layer, alarms, loss events, the metrics row) stays on the training
thread: it runs in the optimizer's step post-hook, once the read is verified. (Python
bookkeeping on the worker would hold the global lock the training thread needs between
its operations, and cost it as much as it saves.)

That is only exact when nothing writes to the gradients in place between
``monitor.step()`` and the end of ``optimizer.step()``: a ``clip_grad_norm_`` there, a
GradScaler's ``unscale_``, or an optimizer that adds weight decay to the gradient in place
would race with the read. So the monitor *learns* it first, at no cost: after a check it
reads synchronously, it records every gradient's version counter (``Tensor._version``,
bumped by every in-place operation) and compares them in the optimizer's step post-hook.
Only when they are unchanged, and the optimizer stepped before the next ``monitor.step()``,
is the next check deferred. A deferred read is verified the same way before it is used:
its versions are compared on the training thread in the optimizer's step post-hook (every
in-place operation issued by then has finished and bumped its counter, so unchanged
versions mean the read saw the gradients as ``monitor.step()`` saw them). If they changed
after all (the loop changed its ways), the read is discarded, the norms are taken again
from the gradients as they are, a warning is logged, and every later check reads
synchronously.

An error met by the read or the bookkeeping is raised at the next ``monitor.step()`` or
``close()`` (not out of ``optimizer.step()``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import torch

Read = Callable[[list[torch.Tensor | None]], Any]
Finish = Callable[[Any], None]

DISCARDED = (
    "the gradients were modified in place between monitor.step() and the end of "
    "optimizer.step(); this check's norms are those of the modified gradients, and "
    "every later check reads them synchronously"
)


class Deferred:
    """One worker thread that runs a check's gradient read; verification and bookkeeping
    on the training thread."""

    def __init__(self, on_discard: Callable[[str], None]) -> None:
        self.trusted = False  # the loop left the gradients alone after the last sync check
        self.never = False  # a deferred read was discarded: every later check is synchronous
        self.pending = False  # a launch, a watch or an error waits for the next step()
        self._on_discard = on_discard
        self._watched: list[tuple[torch.Tensor, int]] | None = None
        self._job: _Job | None = None  # launched, not yet verified
        self._error: BaseException | None = None
        self._jobs: list[_Job | None] = []
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def watch(self, grads: list[torch.Tensor | None]) -> None:
        """After a synchronous check: learn at the optimizer's step whether the gradients
        stay unmodified until then."""
        self.trusted = False
        if not self.never:
            self._watched = versions(grads)
            self.pending = True

    def launch(self, grads: list[torch.Tensor | None], read: Read, finish: Finish) -> None:
        """Run ``read(grads)`` on the worker now; ``finish(result)`` runs once the read is
        verified (see the module docstring)."""
        job = _Job(grads, read, finish)
        self._job = job
        self.pending = True
        self._start()
        with self._wake:
            self._jobs.append(job)
            self._wake.notify()

    def optimizer_stepped(self) -> None:
        """The optimizer's step post-hook: learn, and verify and finish a launched read."""
        if self._watched is not None:
            self.trusted = unchanged(self._watched)
            self.never = self.never or not self.trusted
            self._watched = None
        self._conclude()

    def before_step(self) -> None:
        """``monitor.step()`` while something is pending. When the optimizer did not step
        since the last check: conclude a launched read now, and trust nothing until a
        synchronous check shows the loop's ways again. Then raise what the read or the
        bookkeeping met."""
        if self._watched is not None or self._job is not None:
            self._watched = None
            self.trusted = False
            self._conclude()
        self.settle()

    def settle(self) -> None:
        """Conclude what is pending; raise what the read or the bookkeeping met."""
        self._conclude()
        error, self._error = self._error, None
        self.pending = self._watched is not None
        if error is not None:
            raise error

    def close(self) -> None:
        """Settle, then stop the worker."""
        try:
            self.settle()
        finally:
            if self._thread is not None and self._pid == os.getpid():
                with self._wake:
                    self._jobs.append(None)
                    self._wake.notify()
                self._thread.join()
            self._thread = None

    def _conclude(self) -> None:
        job, self._job = self._job, None
        self.pending = self._watched is not None or self._error is not None
        if job is None:
            return
        valid = unchanged(job.versions)  # before waiting: nothing else runs here meanwhile
        job.done.wait()
        try:
            if job.error is not None:
                raise job.error
            if valid:
                job.finish(job.result)
                return
            self.trusted, self.never = False, True
            self._on_discard(DISCARDED)
            job.finish(job.read(job.grads))
        except BaseException as error:  # raised at the next monitor.step() or close()
            self._error = self._error or error
            self.pending = True
        finally:
            job.grads, job.versions, job.result = [], [], None

    def _start(self) -> None:
        if self._thread is not None and self._pid == os.getpid():
            return
        self._pid = os.getpid()  # a forked child starts its own worker
        self._jobs.clear()
        self._thread = threading.Thread(target=self._work, name="trainrecord-check", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        while True:
            with self._wake:
                while not self._jobs:
                    self._wake.wait()
                job = self._jobs.pop(0)
            if job is None:
                return
            try:
                job.result = job.read(job.grads)
            except BaseException as error:
                job.error = error
            finally:
                job.done.set()


class _Job:
    def __init__(self, grads: list[torch.Tensor | None], read: Read, finish: Finish) -> None:
        self.grads = grads
        self.versions = versions(grads)
        self.read = read
        self.finish = finish
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()


def versions(grads: list[torch.Tensor | None]) -> list[tuple[torch.Tensor, int]]:
    """Each gradient that exists with its version counter now."""
    return [(g, g._version) for g in grads if g is not None]


def unchanged(seen: list[tuple[torch.Tensor, int]]) -> bool:
    """True when no gradient in ``seen`` was modified in place since."""
    return all(g._version == v for g, v in seen)
