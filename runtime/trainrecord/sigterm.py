"""A polite stop (SIGTERM) recorded before the process ends as it would have.

Slurm (scancel, preemption, the time limit), ``docker stop`` and Kubernetes stop a job with
SIGTERM. Its default action kills the process at once: a Reporter's receiver would show the
run as in progress until it went stale, and a Monitor's diary would end without
``run_end``. While a :class:`~trainrecord.report.Reporter` or a
:class:`~trainrecord.Monitor` is active in the main thread, and only when SIGTERM's handler
is the default (``SIG_DFL``), one handler is installed for all of them. A handler the user
or a framework installed (or ``SIG_IGN``, or one set outside Python) is never replaced, and
nothing is recorded on SIGTERM then. The handler:

1. begins every active object's stop: a Reporter queues ``interrupted`` (never
   ``discarded``: the run folder is kept), a Monitor writes ``run_end`` with
   ``error: {"type": "SIGTERM", ...}`` and closes its files;
2. gives the Reporters' waiting reports one shared bound, the largest ``flush_timeout``
   (5 s by default), to go out;
3. restores ``SIG_DFL`` and sends SIGTERM to the process again, so it ends exactly as it
   would have without trainrecord: killed by SIGTERM (exit status -15 in Python, 143 in a
   shell), no ``finally`` block, ``atexit`` hook or exception handler run.

Like Ctrl+C's ``KeyboardInterrupt``, the handler runs when the main thread next runs Python
code: a main thread blocked in one long C call (a forward pass) is stopped when that call
returns. When that code is an object's own bookkeeping (a Monitor's check: its lock held, a
diary line half appended), the object is *busy* and the stop waits for it to leave that
part (:func:`settle`), then runs as above; a check takes milliseconds. In a forked child (a
DataLoader worker) the inherited handler records nothing: it restores ``SIG_DFL`` and
re-delivers the signal at once. The handler is removed when the last active object closes
in the main thread, and only when it is still the installed one (a handler installed after
it is left in place). A handler installed after it that calls it in turn (PyTorch
Lightning chains the handler it finds, then raises at the next batch so that its exception
hooks run) decides alone: called so, this one does nothing, and the Monitor's ``run_end``
comes from the code that closes it (with Lightning's ``SIGTERMException`` as its error).

Objects are held weakly: one dropped without ``close()`` is simply not recorded.

Public API: none; Reporter and Monitor call :func:`activate`, :func:`deactivate`,
:func:`settle`.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType

log = logging.getLogger("trainrecord")


def _never() -> bool:
    return False


@dataclass(frozen=True)
class Stop:
    """What one active object does on SIGTERM.

    ``begin()`` records the stop (cheap, local); ``end(deadline)`` waits, until the
    ``time.monotonic()`` deadline at most, for what began to finish (a report to go out);
    ``bound`` is the seconds ``end`` may need; ``busy()`` says the main thread is inside the
    object's own bookkeeping, where the stop must wait (see :func:`settle`)."""

    begin: Callable[[], None]
    end: Callable[[float], None] = lambda deadline: None
    bound: float = 0.0
    busy: Callable[[], bool] = _never


_active: list[tuple[weakref.ref[object], Stop]] = []
"""Objects to record on SIGTERM, in the order they became active."""
_installed_in: int | None = None
"""The pid of the process that installed the handler (a forked child records nothing)."""
_pending = False
"""SIGTERM arrived while an object was busy: :func:`settle` runs it."""


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def activate(owner: object, stop: Stop) -> bool:
    """Record ``owner``'s stop on SIGTERM; returns whether it will be.

    Only in the main thread (signal handlers can only be set there), and only when SIGTERM's
    handler is the default or already this module's."""
    global _installed_in
    if not _in_main_thread():
        return False
    if any(ref() is owner for ref, _ in _active):
        return True
    current = signal.getsignal(signal.SIGTERM)
    if current is not _on_sigterm:
        if current is not signal.SIG_DFL:
            return False  # the user's or a framework's handler (or SIG_IGN): theirs to run
        signal.signal(signal.SIGTERM, _on_sigterm)
        _installed_in = os.getpid()
    _active.append((weakref.ref(owner), stop))
    return True


def deactivate(owner: object) -> None:
    """Stop recording ``owner`` on SIGTERM; the last one restores ``SIG_DFL`` (main thread
    only, and only while this module's handler is the installed one)."""
    _active[:] = [(ref, stop) for ref, stop in _active if ref() not in (owner, None)]
    if not _active and _in_main_thread() and signal.getsignal(signal.SIGTERM) is _on_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def is_installed() -> bool:
    """Whether this module's handler is SIGTERM's handler now."""
    return signal.getsignal(signal.SIGTERM) is _on_sigterm


def settle() -> None:
    """Called by an object leaving a busy part: a SIGTERM that arrived meanwhile runs now
    (and the process ends)."""
    global _pending
    if _pending and _in_main_thread() and not any(stop.busy() for _, stop in _live()):
        _pending = False
        _stop_all()


def _live() -> list[tuple[object, Stop]]:
    pairs = [(ref(), stop) for ref, stop in _active]
    return [(owner, stop) for owner, stop in pairs if owner is not None]


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    global _pending
    if signal.getsignal(signal.SIGTERM) is not _on_sigterm:
        # A handler installed after this one calls it (Lightning chains the handler it found
        # to its own, then stops training at the next batch and runs its exception hooks):
        # that handler decides how the process ends; the objects see it as their code does.
        return
    if os.getpid() == _installed_in and any(stop.busy() for _, stop in _live()):
        _pending = True  # the busy object calls settle() when it leaves that part
        return
    _stop_all()


def _stop_all() -> None:
    stops = [stop for _, stop in _live()] if os.getpid() == _installed_in else []
    _active.clear()
    for stop in stops:
        try:
            stop.begin()
        except Exception as exc:  # the process must still end as SIGTERM ends it
            log.warning("trainrecord: SIGTERM: %s", exc)
    deadline = time.monotonic() + max((stop.bound for stop in stops), default=0.0)
    for stop in stops:
        try:
            stop.end(deadline)
        except Exception as exc:
            log.warning("trainrecord: SIGTERM: %s", exc)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
