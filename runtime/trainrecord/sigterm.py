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

A main thread blocked in one C call that waits on other processes (a collective of
torch.distributed: DDP's backward, a Monitor's check) can wait until the collective's
timeout (30 minutes with gloo, 10 with NCCL), long after the scheduler's grace period. An
object that may block so asks for a *watch* (``activate(..., watch=True)``: a Monitor
under DistributedDataParallel): a thread is woken by the signal itself (through
``signal.set_wakeup_fd``, only while no other wakeup fd is set, as asyncio's is) and, when
the main thread has not begun the stop within ``BLOCKED_GRACE`` seconds, begins it from that
thread (a Monitor writes ``run_end`` and closes its files; the main thread, blocked, touches
none of them), then ends the process by SIGTERM as above. A forked child drops the watch.

Objects are held weakly: one dropped without ``close()`` is simply not recorded.

Public API: none; Reporter and Monitor call :func:`activate`, :func:`deactivate`,
:func:`settle`.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
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
_stopping = threading.Event()
"""The stop has begun (in the main thread, or in the watch's thread)."""
_stop_lock = threading.Lock()

BLOCKED_GRACE = 3.0
"""Seconds a watched SIGTERM waits for the main thread to begin the stop before the watch's
thread begins it (the main thread blocked in a collective)."""
STOP_BOUND = 5.0
"""Seconds the watch's thread gives the objects' stops before it ends the process anyway."""


class _Watch:
    """A thread woken by SIGTERM through ``signal.set_wakeup_fd`` (see the module docstring)."""

    def __init__(self) -> None:
        self.reader, self.writer = socket.socketpair()
        self.writer.setblocking(False)
        self.previous = signal.set_wakeup_fd(self.writer.fileno(), warn_on_full_buffer=False)
        self.thread = threading.Thread(target=self._run, name="trainrecord-sigterm", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                data = self.reader.recv(64)
            except OSError:
                return
            if not data:
                return
            if signal.SIGTERM in data and os.getpid() == _installed_in:
                _stop_in_thread()

    def close(self) -> None:
        """Give the wakeup fd back (main thread) and let the thread end. Only while it is
        still the watch's: one set since (asyncio's ``add_signal_handler``) is left in place,
        as its owner's signal callbacks need it."""
        with contextlib.suppress(ValueError):
            current = signal.set_wakeup_fd(self.previous)
            if current != self.writer.fileno():  # another's since: put it back
                signal.set_wakeup_fd(current)
                log.warning(
                    "trainrecord: another wakeup fd (asyncio's add_signal_handler?) replaced "
                    "the SIGTERM watch's while a Monitor was open, so a SIGTERM during a "
                    "blocked collective was not seen by the watch; it is left in place"
                )
        for end in (self.writer, self.reader):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()


_watch: _Watch | None = None


def _drop_watch_in_child() -> None:
    """A forked child's SIGTERM must not wake its parent's watch."""
    global _watch
    if _watch is not None:
        _watch = None
        with contextlib.suppress(ValueError):
            signal.set_wakeup_fd(-1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_watch_in_child)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def activate(owner: object, stop: Stop, *, watch: bool = False) -> bool:
    """Record ``owner``'s stop on SIGTERM; returns whether it will be.

    Only in the main thread (signal handlers can only be set there), and only when SIGTERM's
    handler is the default or already this module's. ``watch``: the main thread may block in
    a collective: stop from a thread when it does not (see the module docstring)."""
    global _installed_in, _watch
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
    _stopping.clear()
    if watch and _watch is None:
        try:
            _watch = _Watch()
        except (OSError, ValueError):
            _watch = None
        else:
            if _watch.previous != -1:  # another wakeup fd (asyncio's): left in place
                _watch.close()
                _watch = None
    return True


def deactivate(owner: object) -> None:
    """Stop recording ``owner`` on SIGTERM; the last one restores ``SIG_DFL`` (main thread
    only, and only while this module's handler is the installed one)."""
    global _watch
    _active[:] = [(ref, stop) for ref, stop in _active if ref() not in (owner, None)]
    if not _active and _in_main_thread() and _watch is not None:
        _watch.close()
        _watch = None
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


def _stop_in_thread() -> None:
    """In the watch's thread: when the main thread has not begun the stop within
    ``BLOCKED_GRACE`` seconds, begin it here, then end the process by SIGTERM."""
    if _stopping.wait(BLOCKED_GRACE) or signal.getsignal(signal.SIGTERM) is not _on_sigterm:
        return  # the main thread runs it, or a handler installed later decides (Lightning)
    with _stop_lock:
        if _stopping.is_set():
            return
        _stopping.set()
    log.warning(
        "trainrecord: SIGTERM: the main thread is blocked (a collective waiting for another "
        "process?): stopping from a thread"
    )
    stops = [stop for _, stop in _live()]
    _active.clear()

    bound = max((stop.bound for stop in stops), default=0.0)

    def run() -> None:
        for stop in stops:
            try:
                stop.begin()
            except Exception as exc:
                log.warning("trainrecord: SIGTERM: %s", exc)
        deadline = time.monotonic() + bound  # (a Reporter's reports: as in the main thread)
        for stop in stops:
            try:
                stop.end(deadline)
            except Exception as exc:
                log.warning("trainrecord: SIGTERM: %s", exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(STOP_BOUND + bound)  # (a line half-written by the blocked thread holds a lock)
    _end_by_sigterm()


def _end_by_sigterm() -> None:
    """End the process by SIGTERM from any thread: ``signal.signal`` works in the main thread
    only, so SIGTERM's C handler is reset through libc; exit status 143 when that fails."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
        libc.signal.restype = ctypes.c_void_p
        libc.signal(signal.SIGTERM, None)  # SIG_DFL
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(STOP_BOUND)
    finally:
        os._exit(128 + signal.SIGTERM)


def _stop_all() -> None:
    with _stop_lock:
        if _stopping.is_set():
            return  # the watch's thread is stopping the process
        _stopping.set()
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
