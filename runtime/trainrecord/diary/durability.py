"""Writing lines durably: one ``os.write`` per line, fsync by policy, an exclusive lock.

Every line is written with a single ``os.write`` of the whole line and its newline on an
``O_APPEND`` descriptor, on the caller's thread, so it reaches the kernel at once (a killed
process loses at most the line being written, which can only be torn at the end of the
file). ``fsync`` makes it survive a power cut: always at the points the caller marks as
mandatory (``write_line(..., sync=True)``: run_start, critical events, run_end; and
``close()``), synchronously on the caller's thread before the call returns, and in between
by policy:

* ``"always"``: after every line, inline on the caller's thread;
* ``"interval"`` (default): in the background. After a write the file is scheduled for an
  fsync due ``fsync_interval`` seconds (default 1.0) after its last fsync, or at once when
  that was longer ago, so a line is fsynced at most ``fsync_interval`` seconds after it was
  written, without waiting for a next write; several writes within one interval share one
  fsync. The caller never waits for these fsyncs: one daemon thread per process
  (:class:`_SyncScheduler`, started at the first such write, again in a forked child) does
  them all, sleeping on a condition until the earliest deadline;
* ``"critical"``: only at the mandatory points.

A per-file lock guards fsync and close: the background thread reads the descriptor under
it and skips a file that is closed or broken, so it never fsyncs a closed descriptor or one
whose number was reused; ``close()`` and ``sync()`` take the file off the schedule (and
wait for a background fsync of the file already under way, which they follow with their
own). A
background fsync that fails does not stop the thread: its ``OSError`` is kept and raised by
the file's next ``write_line``, ``sync`` or ``close`` on the caller's thread (before
``write_line`` writes anything), and the file is marked broken from then on, as after a
failed write (no further writes; no fsync at close), since after a failed fsync the kernel
may have dropped the unwritten pages and a later fsync can succeed without them.

An exclusive ``flock`` keeps a second writer off the same file (where the platform has it).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from pathlib import Path
from typing import Literal

from trainrecord.errors import RecordRefused

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks; one writer is on you
    fcntl = None  # type: ignore[assignment]

FsyncPolicy = Literal["always", "interval", "critical"]
FSYNC_POLICIES: tuple[str, ...] = ("always", "interval", "critical")


class AppendFile:
    """An append-only file written line by line, locked against other writers."""

    def __init__(
        self,
        path: Path,
        *,
        fsync_policy: FsyncPolicy = "interval",
        fsync_interval: float = 1.0,
        lock_rule: str = "diary.writer.locked",
    ) -> None:
        if fsync_policy not in FSYNC_POLICIES:
            raise RecordRefused.one(
                "diary.writer.fsync_policy",
                ["fsync_policy"],
                f"fsync_policy must be one of {', '.join(FSYNC_POLICIES)}",
                fsync_policy,
            )
        self.path = path
        self.fsync_policy = fsync_policy
        self.fsync_interval = float(fsync_interval)
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            if fcntl is not None:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise RecordRefused.one(
                lock_rule,
                [path.name],
                "another writer has this file open: another process, or an earlier "
                "Monitor or writer in this one (a notebook cell run again) that was not "
                "closed; close() it (or use it in a with block) before writing here",
            ) from None
        # a writer dropped without close() (an exception left its owner unreachable) gives
        # its descriptor and lock back when collected, so the run can be opened again
        self._finalizer = weakref.finalize(self, os.close, self.fd)
        self._last_sync = time.monotonic()
        self.broken = False
        # guards fsync and close; made anew in a forked child (the parent's background
        # thread may have held it at the fork, and no thread of the child will release it)
        self._lock = threading.Lock()
        self._lock_pid = os.getpid()
        # pid of the process whose scheduler holds this file for a background fsync; 0: none
        self._scheduled_pid = 0
        self._error: BaseException | None = None  # a background fsync's failure, not yet raised

    def write_line(self, data: bytes, *, sync: bool = False) -> None:
        """Append ``data`` (one line, ending in a newline) and fsync as the policy says."""
        if self._error is not None:
            self._raise_background_error()
        if self.broken:
            raise OSError(f"{self.path}: an earlier write failed; the file needs verification")
        view = memoryview(data)
        try:
            while view:
                written = os.write(self.fd, view)
                view = view[written:]
        except OSError:
            self.broken = True
            raise
        if sync or self.fsync_policy == "always":
            self.sync()
        elif self.fsync_policy == "interval" and self._scheduled_pid != os.getpid():
            # not yet scheduled in this process; once it is, the fsync to come starts after
            # this write (the scheduler unmarks the file before it fsyncs), so it covers it
            _scheduler().schedule(self, self._last_sync + self.fsync_interval)

    def sync(self) -> None:
        """fsync the file now, on this thread."""
        if self._scheduled_pid:
            _scheduler().cancel(self)
        with self._guard():
            if self._error is not None:
                self._raise_background_error(locked=True)
            self._last_sync = time.monotonic()  # it covers what was written before it began
            os.fsync(self.fd)

    def close(self) -> None:
        """fsync and close (idempotent); raise a background fsync's error not yet raised."""
        if self.fd < 0:
            return
        if self._scheduled_pid:
            _scheduler().cancel(self)
        with self._guard():
            error, self._error = self._error, None
            if error is not None:
                self.broken = True
            try:
                if not self.broken:
                    os.fsync(self.fd)
            finally:
                self._finalizer.detach()  # the number may be reused once closed
                os.close(self.fd)
                self.fd = -1
        if error is not None:
            raise error

    def _guard(self) -> threading.Lock:
        """The lock over fsync and close, a fresh one in a process forked since it was made."""
        pid = os.getpid()
        if self._lock_pid != pid:
            self._lock = threading.Lock()
            self._lock_pid = pid
        return self._lock

    def _raise_background_error(self, *, locked: bool = False) -> None:
        """Raise (once) the error a background fsync met; the file is broken from now on."""
        if locked:
            error, self._error = self._error, None
        else:
            with self._guard():
                error, self._error = self._error, None
        if error is not None:
            self.broken = True
            raise error

    def _background_sync(self) -> None:
        """fsync on the scheduler's thread, unless the file was closed or broke meanwhile."""
        with self._guard():
            if self.fd < 0 or self.broken or self._error is not None:
                return
            # set first: a line written while this fsync runs is due an interval from now
            self._last_sync = time.monotonic()
            try:
                os.fsync(self.fd)
            except Exception as exc:  # kept for the caller's thread; the thread lives on
                self._error = exc


class _SyncScheduler:
    """One daemon thread per process doing the "interval" policy's fsyncs at their deadlines.

    ``_due`` maps each scheduled file to its deadline (``time.monotonic()``); the thread waits
    on ``_cond`` until the earliest one (without a timeout when nothing is due), unmarks that
    file and fsyncs it outside the condition, so scheduling never waits for an fsync.
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._cond = threading.Condition(threading.Lock())
        # weak: a file whose writer was dropped unclosed is not kept open for its fsync
        self._due: weakref.WeakKeyDictionary[AppendFile, float] = weakref.WeakKeyDictionary()
        self._thread: threading.Thread | None = None

    def schedule(self, file: AppendFile, deadline: float) -> None:
        """fsync ``file`` in the background at ``deadline`` (or its earlier one, if it has it)."""
        with self._cond:
            if file._scheduled_pid == self.pid:
                return
            file._scheduled_pid = self.pid
            self._due[file] = deadline
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="trainrecord-fsync", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def cancel(self, file: AppendFile) -> None:
        """Take ``file`` off the schedule (a background fsync already under way still runs)."""
        with self._cond:
            if self._due.pop(file, None) is not None:
                file._scheduled_pid = 0

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    # a snapshot: a dropped writer's file may be collected at any allocation,
                    # even while the entries are read (it then leaves no entry to read)
                    due = list(self._due.items())
                    if not due:
                        self._cond.wait()
                        continue
                    file, deadline = min(due, key=lambda item: item[1])
                    del due  # (strong references)
                    delay = deadline - time.monotonic()
                    if not delay > 0:  # due (a NaN interval counts as due at once)
                        del self._due[file]
                        file._scheduled_pid = 0
                        break
                    del file  # not held while waiting: its writer may be dropped meanwhile
                    self._cond.wait(min(delay, threading.TIMEOUT_MAX))
            file._background_sync()
            del file  # hold no closed file until the next deadline


_SCHEDULER: _SyncScheduler | None = None
_SCHEDULER_LOCK = threading.Lock()


def _scheduler() -> _SyncScheduler:
    """This process's scheduler: a new one in a forked child (the parent's thread is gone)."""
    global _SCHEDULER, _SCHEDULER_LOCK
    scheduler = _SCHEDULER
    pid = os.getpid()
    if scheduler is not None and scheduler.pid == pid:
        return scheduler
    if scheduler is not None:  # forked: the parent's lock may have been held at the fork
        _SCHEDULER_LOCK = threading.Lock()
    with _SCHEDULER_LOCK:
        if _SCHEDULER is None or _SCHEDULER.pid != pid:
            _SCHEDULER = _SyncScheduler()
        return _SCHEDULER


def _forget_parent_scheduler() -> None:
    """In a forked child: the parent's scheduler thread is gone and its locks may be held."""
    global _SCHEDULER, _SCHEDULER_LOCK
    _SCHEDULER = None
    _SCHEDULER_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_parent_scheduler)


def fsync_dir(path: Path) -> None:
    """fsync a directory so that a newly created or renamed file in it survives."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
