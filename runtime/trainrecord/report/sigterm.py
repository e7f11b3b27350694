"""A polite stop (SIGTERM) reported as ``interrupted``, the process still ending as it would.

Slurm (scancel, preemption, the time limit), ``docker stop`` and Kubernetes stop a job with
SIGTERM. Its default action kills the process at once, so without this nothing is sent and
the run shows as in progress until it goes stale. The seed's ``interrupted`` ("stopped;
can be resumed") is what such a stop is: a preempted job is usually requeued and resumed.

While a :class:`~trainrecord.report.Reporter` is active (from ``started()``, which the
``with`` block calls, to ``close()``) in the main thread, and only when SIGTERM's handler
is the default (``SIG_DFL``), one handler is installed. A handler the user or a framework
installed (or ``SIG_IGN``, or one set outside Python) is never replaced, and the Reporter
then does nothing on SIGTERM. The handler:

1. queues ``interrupted`` (status ``interrupted``, never ``discarded``: the run folder is
   never deleted) for every active Reporter whose final report was not queued yet;
2. gives the waiting reports one shared bound, the largest ``flush_timeout`` (5 s by
   default), to go out;
3. restores ``SIG_DFL`` and sends SIGTERM to the process again, so it ends exactly as it
   would have without reporting: killed by SIGTERM (exit status -15 in Python, 143 in a
   shell), no ``finally`` block, ``atexit`` hook or exception handler run.

Like Ctrl+C's ``KeyboardInterrupt``, the handler runs when the main thread next runs
Python code: a main thread blocked in one long C call is stopped when that call returns.
In a forked child (a DataLoader worker) the inherited handler reports nothing: it restores
``SIG_DFL`` and re-delivers the signal at once. The handler is removed when the last
active Reporter closes in the main thread, and only when it is still the installed one (a
handler installed after it is left in place).

Public API: none; :class:`~trainrecord.report.Reporter` calls :func:`activate` and
:func:`deactivate`.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainrecord.report.reporter import Reporter

log = logging.getLogger("trainrecord.report")

_active: list[Reporter] = []
"""Reporters to report on SIGTERM, in the order they became active."""
_installed_in: int | None = None
"""The pid of the process that installed the handler (a forked child reports nothing)."""


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def activate(reporter: Reporter) -> bool:
    """Report ``reporter`` as interrupted on SIGTERM; returns whether it will be.

    Only in the main thread (signal handlers can only be set there), and only when SIGTERM's
    handler is the default or already this module's.
    """
    global _installed_in
    if not _in_main_thread():
        return False
    if any(r is reporter for r in _active):
        return True
    current = signal.getsignal(signal.SIGTERM)
    if current is not _on_sigterm:
        if current is not signal.SIG_DFL:
            return False  # the user's or a framework's handler (or SIG_IGN): theirs to run
        signal.signal(signal.SIGTERM, _on_sigterm)
        _installed_in = os.getpid()
    _active.append(reporter)
    return True


def deactivate(reporter: Reporter) -> None:
    """Stop reporting ``reporter`` on SIGTERM; the last one restores ``SIG_DFL`` (main
    thread only, and only while this module's handler is the installed one)."""
    _active[:] = [r for r in _active if r is not reporter]
    if not _active and _in_main_thread() and signal.getsignal(signal.SIGTERM) is _on_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def is_installed() -> bool:
    """Whether this module's handler is SIGTERM's handler now."""
    return signal.getsignal(signal.SIGTERM) is _on_sigterm


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    reporters = list(_active) if os.getpid() == _installed_in else []
    _active.clear()
    for reporter in reporters:
        try:
            reporter.interrupted(discarded=False)  # resumable: never discarded, never deleted
        except Exception as exc:  # the process must still end as SIGTERM ends it
            log.warning("trainrecord report: SIGTERM: no interrupted report (%s)", exc)
    bound = max((r.sender.flush_timeout for r in reporters), default=0.0)
    deadline = time.monotonic() + bound
    for reporter in reporters:
        try:
            delivered = reporter.close(max(0.0, deadline - time.monotonic()))
        except Exception:
            delivered = False
        if not delivered:
            log.warning(
                "trainrecord report: SIGTERM: the interrupted report was not delivered "
                "within %.0f s; the receiver keeps the last report it got",
                bound,
            )
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
