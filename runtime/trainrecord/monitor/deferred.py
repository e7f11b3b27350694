"""A check's gradient read and bookkeeping on a worker thread, while the optimizer steps.

On the CPU the gradient read of a check (one pass over every gradient, memory-bound) and
the bookkeeping that follows (alarms, loss events, the metrics row) can run beside the
optimizer's step, which reads the same gradients: ``Deferred`` runs them on one worker
thread per monitor and the training thread goes on at once.

That is only exact when nothing writes to the gradients in place between
``monitor.step()`` and the end of ``optimizer.step()``: a ``clip_grad_norm_`` there, a
GradScaler's ``unscale_``, or an optimizer that adds weight decay to the gradient in place
would race with the read. So the monitor *learns* it first, at no cost: after a check it
reads synchronously, it records every gradient's version counter (``Tensor._version``,
bumped by every in-place operation) and compares them in the optimizer's step post-hook.
Only when they are unchanged, and the optimizer stepped before the next ``monitor.step()``,
is the next check deferred. A deferred check is verified the same way before anything it
read is used: its versions are compared on the training thread in the optimizer's step
post-hook (every in-place operation issued by then has finished and bumped its counter,
so unchanged versions mean the read saw the gradients as ``monitor.step()`` saw them).
If they changed after all (the loop changed its ways), the read is discarded, the norms
are taken again on the training thread from the gradients as they are, a warning is
logged, and every later check reads synchronously.

The bookkeeping of a verified read goes on in the background; the next check, and
``close()``, wait for it and raise any error it met.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import torch

Read = Callable[[list[torch.Tensor | None]], Any]
Finish = Callable[[Any], None]


class Deferred:
    """One worker thread that runs a check's read and, once verified, its bookkeeping."""

    def __init__(self, on_discard: Callable[[str], None]) -> None:
        self.trusted = False  # the loop left the gradients alone after the last sync check
        self.never = False  # a deferred read was discarded: every later check is synchronous
        self._on_discard = on_discard
        self.pending = False  # a launch or a watch waits for the optimizer's step
        self._watched: list[tuple[torch.Tensor, int]] | None = None
        self._job: _Job | None = None  # launched, not yet verified
        self._running: _Job | None = None  # verified (or discarded), maybe still running
        self._jobs: list[tuple[_Job, list[torch.Tensor | None]] | None] = []
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._pid = 0

    # -- learning -------------------------------------------------------------------------

    def watch(self, grads: list[torch.Tensor | None]) -> None:
        """After a synchronous check: learn at the optimizer's step whether the gradients
        stay unmodified until then."""
        self.trusted = False
        if not self.never:
            self._watched = versions(grads)
            self.pending = True

    def optimizer_stepped(self) -> None:
        """The optimizer's step post-hook: learn, and verify a launched read."""
        if self._watched is not None:
            self.trusted = unchanged(self._watched)
            self.never = self.never or not self.trusted
            self._watched = None
        if self._job is not None:
            self._verify(self._job)
        self.pending = False

    def step_without_optimizer(self) -> None:
        """``monitor.step()`` came before the optimizer stepped: verify what is pending now
        (a launched read), and trust nothing until a synchronous check shows the loop's
        ways again."""
        self._watched = None
        self.trusted = False
        if self._job is not None:
            self._verify(self._job)
        self.pending = False

    # -- deferring ------------------------------------------------------------------------

    def launch(self, grads: list[torch.Tensor | None], read: Read, finish: Finish) -> None:
        """Run ``read(grads)`` on the worker now and ``finish(result)`` once verified."""
        job = _Job(grads, versions(grads), read, finish)
        self._job = job
        self.pending = True
        self._start()
        with self._wake:
            self._jobs.append((job, grads))  # the worker's own reference to the gradients
            self._wake.notify()

    def settle(self) -> None:
        """Verify what is pending, wait until the worker is done, raise what it met."""
        if self._job is not None:
            self._verify(self._job)
        job, self._running = self._running, None
        if job is not None:
            job.done.wait()
            if job.error is not None:
                raise job.error

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

    # -- inside ---------------------------------------------------------------------------

    def _verify(self, job: _Job) -> None:
        self._job = None
        self.pending = self._watched is not None
        self._running = job
        job.valid = unchanged(job.versions)
        job.verified.set()
        grads, job.grads, job.versions = job.grads, [], []  # the worker keeps its own
        if job.valid:
            return
        self.trusted, self.never = False, True
        job.done.wait()  # the worker discards its read and finishes nothing
        self._running = None
        self._on_discard(
            "the gradients were modified in place between monitor.step() and the end of "
            "optimizer.step(); this check's norms are those of the modified gradients, and "
            "every later check reads them synchronously"
        )
        job.finish(job.read(grads))

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
                item = self._jobs.pop(0)
            if item is None:
                return
            job, grads = item
            item = None
            try:
                result = job.read(grads)
                del grads  # nothing holds the gradients once read
                job.verified.wait()
                if job.valid:
                    job.finish(result)
            except BaseException as error:  # raised on the training thread at settle()
                job.error = error
            finally:
                job.done.set()


class _Job:
    def __init__(
        self,
        grads: list[torch.Tensor | None],
        seen: list[tuple[torch.Tensor, int]],
        read: Read,
        finish: Finish,
    ) -> None:
        self.grads = grads
        self.versions = seen
        self.read = read
        self.finish = finish
        self.valid = False
        self.error: BaseException | None = None
        self.verified = threading.Event()
        self.done = threading.Event()


def versions(grads: list[torch.Tensor | None]) -> list[tuple[torch.Tensor, int]]:
    """Each gradient that exists with its version counter now."""
    return [(g, g._version) for g in grads if g is not None]


def unchanged(seen: list[tuple[torch.Tensor, int]]) -> bool:
    """True when no gradient in ``seen`` was modified in place since."""
    return all(g._version == v for g, v in seen)
