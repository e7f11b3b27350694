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

A write that fails (a full disk, a file-size limit, an I/O error) never leaves part of a
line behind: the bytes of the line that reached the file are cut off again (``ftruncate``
back to the last line boundary), and the file is broken from then on, so no later line can
follow the missing one. Should the cut fail too, ``torn_tail`` holds the bytes left at the
end (a torn tail, as after a crash), so the owner knows what the file holds. The error
raised is a :class:`~trainrecord.errors.RecordWriteError` (an ``OSError``) naming the file,
the cause, what the file holds now and what to do; so is a background fsync's failure,
raised by the file's next write, sync or close.

An exclusive ``flock`` keeps a second writer off the same file (where the platform has it).
"""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from trainrecord.errors import RecordRefused, RecordWriteError, cause_text, write_advice
from trainrecord.folders import open_no_link

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks; one writer is on you
    fcntl = None  # type: ignore[assignment]

FsyncPolicy = Literal["always", "interval", "critical"]
FSYNC_POLICIES: tuple[str, ...] = ("always", "interval", "critical")


def check_fsync_policy(fsync_policy: object) -> None:
    """Refuse an ``fsync_policy`` that is not one of :data:`FSYNC_POLICIES` (rule
    ``diary.writer.fsync_policy``); the writers call it before they make any file."""
    if not isinstance(fsync_policy, str) or fsync_policy not in FSYNC_POLICIES:
        raise RecordRefused.one(
            "diary.writer.fsync_policy",
            ["fsync_policy"],
            f"fsync_policy must be one of {', '.join(FSYNC_POLICIES)}",
            fsync_policy,
        )


class AppendFile:
    """An append-only file written line by line, locked against other writers."""

    def __init__(
        self,
        path: Path,
        *,
        fsync_policy: FsyncPolicy = "interval",
        fsync_interval: float = 1.0,
        lock_rule: str = "diary.writer.locked",
        unit: str = "line",
    ) -> None:
        check_fsync_policy(fsync_policy)
        self.path = path
        self.unit = unit  # what one line is called in error messages ("line", "row")
        self.fsync_policy = fsync_policy
        self.fsync_interval = float(fsync_interval)
        self.fd = open_no_link(path, os.O_WRONLY | os.O_APPEND)  # (a planted link: refused)
        try:
            _lock(self.fd)
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
        self.torn_tail = b""
        """Bytes of a failed line left at the end of the file (its cut failed too); b"" else."""
        self.lines = 0
        """Lines :meth:`write_line` put whole in the file. It goes up the moment a line's last
        byte is written, before its fsync: a writer compares it before and after the call to
        know whether the line is in the file when the call raised (Ctrl+C during the fsync)."""
        self._cause = ""  # why the file broke, for the refusals of later lines
        self._errno: int | None = None  # and its errno
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
            self._refuse_after_failure()
        view = memoryview(data)
        written = 0
        start = -1  # where the line goes: the file is ours, so its size before the write
        try:
            start = os.fstat(self.fd).st_size  # (a failing disk fails here as in the write)
            while written < len(view):
                written += os.write(self.fd, view[written:])
        except OSError as exc:
            self._write_failed(exc, view, written)
        except BaseException:  # (KeyboardInterrupt) part of the line may be in the file
            # a signal is handled once os.write has returned, before ``written`` counts what
            # it wrote: the file's size says how much of the line is in it
            if start >= 0:
                with contextlib.suppress(OSError):
                    written = os.fstat(self.fd).st_size - start
            if written and self._cut(view, written) is not None:
                self.broken = True
                self._cause = "interrupted while writing a line, which could not be cut off"
            raise
        self.lines += 1  # (no call before it: a signal cannot land between the loop and here)
        if sync or self.fsync_policy == "always":
            self.sync()
        elif self.fsync_policy == "interval" and self._scheduled_pid != os.getpid():
            # not yet scheduled in this process; once it is, the fsync to come starts after
            # this write (the scheduler unmarks the file before it fsyncs), so it covers it
            _scheduler().schedule(self, self._last_sync + self.fsync_interval)

    def _cut(self, data: memoryview, written: int) -> OSError | None:
        """Cut the ``written`` bytes of ``data`` off the end again; return the cut's error.

        The file is ours (locked, appended only by this writer), so the line's bytes are
        its last ``written`` ones. When the cut fails, ``torn_tail`` holds what is left."""
        try:
            end = os.fstat(self.fd).st_size
            if end < written:  # pragma: no cover - someone else cut the file meanwhile
                raise OSError(errno.EIO, f"the file is shorter ({end} bytes) than expected")
            os.ftruncate(self.fd, end - written)
        except OSError as exc:
            self.torn_tail = bytes(data[:written])
            return exc
        return None

    def _write_failed(self, exc: OSError, data: memoryview, written: int) -> None:
        """A write failed after ``written`` bytes: cut them off, break the file, raise."""
        self.broken = True
        cut_error = self._cut(data, written) if written else None
        cause = cause_text(exc)
        self._cause, self._errno = cause, exc.errno
        unit = self.unit
        if not written:
            state = f"the {unit} was not written (none of it reached the file)"
        elif cut_error is None:
            state = (
                f"the {unit} was not written (the {written} bytes of it that reached the file "
                f"were cut off again, so the file ends at its last whole {unit})"
            )
        else:
            state = (
                f"the file ends in {written} bytes of the {unit} that could not be cut off "
                f"({cause_text(cut_error)}): a torn tail, which `trainrecord verify` reports as such"
            )
        raise RecordWriteError(
            exc.errno,
            f"trainrecord could not write to {self.path}: {cause}; {state}. Nothing more is "
            f"written to this file (a {unit} written later would follow the missing one). "
            f"{write_advice(exc.errno)}, then `trainrecord verify {self.path.parent}` shows what "
            "the record holds.",
            str(self.path),
        ) from None

    def _refuse_after_failure(self) -> None:
        """Refuse a line for a file broken by an earlier failed write or fsync."""
        cause = f": {self._cause}" if self._cause else ""
        raise RecordWriteError(
            self._errno,
            f"trainrecord writes nothing more to {self.path}: an earlier write or fsync "
            f"failed{cause}; a {self.unit} written now would follow one that is missing. "
            f"The file as it stands needs verification (`trainrecord verify {self.path.parent}`)",
            str(self.path),
        )

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
                if isinstance(error, OSError):
                    self._cause, self._errno = f"fsync: {cause_text(error)}", error.errno
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
            if not isinstance(error, OSError):
                raise error
            cause = cause_text(error)
            self._cause, self._errno = f"fsync: {cause}", error.errno
            raise RecordWriteError(
                error.errno,
                f"trainrecord could not fsync {self.path} (on the background thread): {cause}; "
                f"the {self.unit}s written since its last fsync may not be on disk. Nothing "
                f"more is written to this file. {write_advice(error.errno)}, then "
                f"`trainrecord verify {self.path.parent}` shows what the record holds.",
                str(self.path),
            ) from None

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


def _lock(fd: int) -> None:
    """Take the writer's lock on ``fd``; BlockingIOError when another writer holds it. A
    writer of this process no one holds any more, kept only by a reference cycle (a
    traceback dropped since: a notebook's earlier error), is let go first by one
    ``gc.collect()``, its descriptor and lock with it."""
    if fcntl is None:  # pragma: no cover - not POSIX
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        gc.collect()
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


@contextlib.contextmanager
def writers_kept_off(run_dir: Path, names: tuple[tuple[str, str], ...]) -> Iterator[None]:
    """Hold a shared lock on each file of ``names`` ((file name, rule) pairs) in ``run_dir``
    that is there, for the ``with`` block: a writer holding one open (a live run) is refused
    with that file's rule (``RecordRefused``), and none can open one while the block runs.

    ``trainrecord seal`` takes it: a seal of a record still being written pins a state the
    next line changes, so the record fails verification (``seal.metrics.sha256``) although
    nothing was tampered with, until the writer's own seal at close (never, after a crash)."""
    with contextlib.ExitStack() as held:
        for name, rule in names:
            path = run_dir / name
            try:
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            except FileNotFoundError:
                continue
            held.callback(os.close, fd)
            if fcntl is None:  # pragma: no cover - not POSIX: no locks to ask
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RecordRefused.one(
                    rule,
                    [name],
                    f"a writer (a Monitor or DiaryWriter, in this or another process) still has "
                    f"{name} open: the run is still being written, and a seal made now would "
                    "fail verification at its next line; the writer seals the record when it "
                    "closes (or, after a crash, seal it once no writer is left)",
                ) from None
        yield


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
