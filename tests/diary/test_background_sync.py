"""The "interval" policy's fsyncs run on a background thread; the mandatory ones stay inline.

Real files, real threads, the real ``os.fsync``: a recording wrapper (``Recorder``) notes
which descriptor each fsync got, on which thread and when, then calls the real one. Waits are
generous (seconds) against short intervals (0.05 s), so a loaded machine slows the tests
down but does not fail them.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import trainrecord.diary.durability as durability
from trainrecord.diary import MetricsWriter
from trainrecord.diary.durability import AppendFile
from trainrecord.errors import RecordWriteError

LINE = b'{"step":1}\n'
WAIT = 5.0  # seconds: a bound for "soon" that only a broken implementation reaches


@dataclass
class Call:
    fd: int
    thread: int
    native: int  # the kernel's thread id: unique among live threads of all processes
    at: float


@dataclass
class Recorder:
    """Wraps ``os.fsync``: records each call, optionally fails some, then calls the real one."""

    real: object
    calls: list[Call] = field(default_factory=list)
    cond: threading.Condition = field(default_factory=threading.Condition)
    fail_fds: set[int] = field(default_factory=set)  # fail these, off the caller's thread
    caller: int = field(default_factory=threading.get_ident)

    def __call__(self, fd: int) -> None:
        call = Call(fd, threading.get_ident(), threading.get_native_id(), time.monotonic())
        with self.cond:
            self.calls.append(call)
            self.cond.notify_all()
        if fd in self.fail_fds and call.thread != self.caller:
            raise OSError(errno.EIO, "injected fsync failure")
        self.real(fd)  # type: ignore[operator]

    def of(self, fd: int) -> list[Call]:
        with self.cond:
            return [c for c in self.calls if c.fd == fd]

    def wait_for(self, fd: int, count: int = 1, timeout: float = WAIT) -> list[Call]:
        """The fsyncs of ``fd`` once there are ``count`` of them (fails after ``timeout``)."""
        with self.cond:
            ok = self.cond.wait_for(
                lambda: sum(c.fd == fd for c in self.calls) >= count, timeout=timeout
            )
        assert ok, f"fd {fd}: {len(self.of(fd))} fsyncs after {timeout} s, wanted {count}"
        return self.of(fd)


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorder = Recorder(os.fsync)
    monkeypatch.setattr(durability.os, "fsync", recorder)
    return recorder


def test_an_interval_line_is_fsynced_in_the_background_without_a_further_write(
    tmp_path: Path, fsyncs: Recorder
):
    opened = time.monotonic()
    f = AppendFile(tmp_path / "m.jsonl", fsync_interval=0.05)
    fd = f.fd
    f.write_line(LINE)
    assert fsyncs.of(fd) == []  # write_line returned without an fsync on this thread
    (call,) = fsyncs.wait_for(fd)
    assert call.thread != threading.get_ident()  # the writing thread is not the one
    assert call.at >= opened + 0.05  # not before it was due (an interval after the open)
    time.sleep(0.2)  # four intervals more: nothing new written, nothing more to fsync
    assert len(fsyncs.of(fd)) == 1
    f.close()


def test_the_deadline_is_an_interval_after_the_last_fsync_and_later_writes_keep_it(
    tmp_path: Path, fsyncs: Recorder
):
    f = AppendFile(tmp_path / "m.jsonl", fsync_interval=60.0)
    f.write_line(LINE)
    written = time.monotonic()
    due = durability._scheduler()._due  # the schedule itself: timing-free
    assert due[f] == f._last_sync + 60.0 <= written + 60.0  # at most an interval after
    time.sleep(0.01)
    f.write_line(LINE)
    assert due[f] == f._last_sync + 60.0  # one deadline, one fsync, for both lines
    f.close()
    assert f not in due  # close takes it off the schedule
    assert len(fsyncs.of(f.fd if f.fd >= 0 else -2)) == 0


def test_an_fsync_overdue_at_the_write_is_due_at_once_not_an_interval_later(
    tmp_path: Path, fsyncs: Recorder
):
    f = AppendFile(tmp_path / "m.jsonl", fsync_interval=60.0)
    fd = f.fd
    f.write_line(LINE)  # the last fsync (the open) is recent: due in a minute
    time.sleep(0.2)
    assert fsyncs.of(fd) == []
    f2 = AppendFile(tmp_path / "n.jsonl", fsync_interval=60.0)
    f2._last_sync -= 61.0  # as if its last fsync were over a minute ago
    f2.write_line(LINE)
    (call,) = fsyncs.wait_for(f2.fd, timeout=WAIT)  # a minute early: due at once
    assert call.thread != threading.get_ident()
    f.close()
    f2.close()


def test_many_writes_within_an_interval_share_one_fsync_after_the_last(
    tmp_path: Path, fsyncs: Recorder
):
    f = AppendFile(tmp_path / "m.jsonl", fsync_interval=0.5)
    fd = f.fd
    for _ in range(200):
        f.write_line(LINE)
    last_write = time.monotonic()
    (call,) = fsyncs.wait_for(fd)
    assert call.at >= last_write  # it began after the last line: it covers all 200
    time.sleep(0.3)
    assert len(fsyncs.of(fd)) == 1
    f.close()


def test_writes_across_intervals_are_fsynced_again(tmp_path: Path, fsyncs: Recorder):
    f = AppendFile(tmp_path / "m.jsonl", fsync_interval=0.05)
    fd = f.fd
    f.write_line(LINE)
    fsyncs.wait_for(fd, 1)
    f.write_line(LINE)  # written after the first fsync: needs a second one
    calls = fsyncs.wait_for(fd, 2)
    assert calls[1].at - calls[0].at >= 0.04  # rate: at most one per interval
    assert all(c.thread != threading.get_ident() for c in calls)
    f.close()


@pytest.mark.parametrize("policy", ["interval", "always", "critical"])
def test_mandatory_points_fsync_on_the_callers_thread_before_returning(
    tmp_path: Path, fsyncs: Recorder, policy: str
):
    me = threading.get_ident()
    f = AppendFile(tmp_path / "m.jsonl", fsync_policy=policy, fsync_interval=60.0)  # type: ignore[arg-type]
    fd = f.fd
    f.write_line(LINE, sync=True)
    assert [c.thread for c in fsyncs.of(fd)] == [me]
    f.sync()
    assert [c.thread for c in fsyncs.of(fd)] == [me, me]
    f.close()
    assert [c.thread for c in fsyncs.of(fd)] == [me, me, me]
    assert (tmp_path / "m.jsonl").read_bytes() == LINE


def test_always_fsyncs_every_line_inline(tmp_path: Path, fsyncs: Recorder):
    me = threading.get_ident()
    f = AppendFile(tmp_path / "m.jsonl", fsync_policy="always")
    fd = f.fd
    for n in range(1, 6):
        f.write_line(LINE)
        assert [c.thread for c in fsyncs.of(fd)] == [me] * n
    f.close()


def test_a_sync_takes_the_file_off_the_schedule(tmp_path: Path, fsyncs: Recorder):
    f = AppendFile(tmp_path / "m.jsonl", fsync_interval=0.5)
    fd = f.fd
    f.write_line(LINE)  # scheduled in 0.5 s
    f.write_line(LINE, sync=True)  # fsynced now: covers both lines
    assert f not in durability._scheduler()._due
    time.sleep(0.8)
    assert [c.thread for c in fsyncs.of(fd)] == [threading.get_ident()]
    f.close()


def test_close_never_lets_the_background_fsync_a_closed_or_reused_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Files written and closed at once, while their background fsyncs fall due; decoy files
    take the freed descriptor numbers. Every fsync must hit a file that is open as itself."""
    files: list[tuple[AppendFile, int]] = []  # each file and its inode
    wrong: list[str] = []
    real = os.fsync
    caller = threading.get_ident()

    def checked_fsync(fd: int) -> None:
        if threading.get_ident() != caller:
            time.sleep(0.001)  # widen the window in which a close could slip in
        owners = [ino for f, ino in list(files) if f.fd == fd]
        try:
            ino = os.fstat(fd).st_ino
        except OSError as exc:
            ino = exc.errno
        if len(owners) != 1 or ino != owners[0]:
            wrong.append(f"fsync of fd {fd}: open as {owners}, inode {ino}: closed or reused")
        real(fd)

    monkeypatch.setattr(durability.os, "fsync", checked_fsync)
    decoys: list[int] = []
    for n in range(300):
        f = AppendFile(tmp_path / f"f{n}.jsonl", fsync_interval=0.0)  # due at once
        files.append((f, os.fstat(f.fd).st_ino))
        f.write_line(LINE)
        if n % 3:
            time.sleep(0.0002)  # let some background fsyncs start before the close
        f.close()
        decoys.append(os.open(tmp_path / f"decoy{n}", os.O_WRONLY | os.O_CREAT, 0o600))
        if len(decoys) > 4:
            os.close(decoys.pop(0))
    for fd in decoys:
        os.close(fd)
    assert wrong == []


def test_a_background_fsync_error_is_raised_by_the_next_write(tmp_path: Path, fsyncs: Recorder):
    f = AppendFile(tmp_path / "m.jsonl", fsync_interval=0.0)
    fsyncs.fail_fds.add(f.fd)
    f.write_line(LINE)
    fsyncs.wait_for(f.fd)
    time.sleep(0.05)  # the failing call has returned and left its error
    with pytest.raises(RecordWriteError) as err:  # an OSError naming file, cause, what to do
        f.write_line(b'{"step":2}\n')
    assert err.value.errno == errno.EIO and err.value.filename == str(tmp_path / "m.jsonl")
    assert str(err.value).startswith(f"trainrecord could not fsync {tmp_path / 'm.jsonl'}")
    assert "injected fsync failure (EIO)" in str(err.value) and "trainrecord verify" in str(
        err.value
    )
    assert (tmp_path / "m.jsonl").read_bytes() == LINE  # the refused line was not written
    with pytest.raises(OSError, match="needs verification"):  # broken from now on
        f.write_line(b'{"step":3}\n')
    fd = f.fd
    calls = len(fsyncs.of(fd))
    f.close()  # no fsync of a broken file, and the error was raised already
    assert len(fsyncs.of(fd)) == calls
    fsyncs.fail_fds.clear()  # the next file may get the same descriptor number
    # the background thread survived the error: another file still gets its fsync
    g = AppendFile(tmp_path / "n.jsonl", fsync_interval=0.0)
    g.write_line(LINE)
    (call,) = fsyncs.wait_for(g.fd)
    assert call.thread != threading.get_ident()
    g.close()


@pytest.mark.parametrize("then", ["close", "sync"])
def test_a_background_fsync_error_is_raised_by_the_next_close_or_sync(
    tmp_path: Path, fsyncs: Recorder, then: str
):
    f = AppendFile(tmp_path / "m.jsonl", fsync_interval=0.0)
    fd = f.fd
    fsyncs.fail_fds.add(fd)
    f.write_line(LINE)
    fsyncs.wait_for(fd)
    time.sleep(0.05)
    with pytest.raises(OSError) as err:
        getattr(f, then)()
    assert err.value.errno == errno.EIO
    assert f.broken
    if then == "close":
        assert f.fd == -1  # closed all the same
    else:
        with pytest.raises(OSError, match="needs verification"):
            f.write_line(LINE)
    f.close()  # quiet now: the error was raised once; no fsync of a broken file
    assert f.fd == -1
    assert len(fsyncs.of(fd)) == 1


def test_metrics_rows_under_interval_are_fsynced_off_the_writing_thread(
    tmp_path: Path, fsyncs: Recorder
):
    me = threading.get_ident()
    with MetricsWriter(tmp_path, fsync_interval=0.05) as m:
        fd = m._file.fd
        for step in range(20):
            m.append({"step": step, "loss": 1.0 / (step + 1), "grad": {"fc": 0.1}, "stuck": {}})
        assert [c for c in fsyncs.of(fd) if c.thread == me] == []  # none on the training thread
        (call, *_) = fsyncs.wait_for(fd)
        assert call.thread != me
    assert fsyncs.of(fd)[-1].thread == me  # the close's fsync is inline


NO_THREAD = """
import sys, threading
from pathlib import Path
from trainrecord.diary.durability import AppendFile
d = Path(sys.argv[1])
for policy in ("always", "critical"):
    f = AppendFile(d / f"{policy}.jsonl", fsync_policy=policy)
    for _ in range(3):
        f.write_line(b'{"a":1}\\n')
    f.write_line(b'{"a":1}\\n', sync=True)
    f.close()
f = AppendFile(d / "unwritten.jsonl", fsync_policy="interval")
f.sync()
f.close()
names = [t.name for t in threading.enumerate()]
assert "trainrecord-fsync" not in names, names
f = AppendFile(d / "interval.jsonl", fsync_policy="interval")
f.write_line(b'{"a":1}\\n')
names = [t.name for t in threading.enumerate()]
assert names.count("trainrecord-fsync") == 1, names
f.close()
print("ok")
"""


def test_no_thread_is_started_until_an_interval_file_is_written(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-c", NO_THREAD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def _child(tmp_path: Path, inherited: AppendFile, fsyncs: Recorder, parent_thread: int) -> None:
    """In the forked child: its own thread fsyncs a new file and one the parent scheduled."""
    fsyncs.cond = threading.Condition()  # the parent's may have been held at the fork
    fsyncs.calls.clear()
    own = AppendFile(tmp_path / "child.jsonl", fsync_interval=0.05)
    own.write_line(LINE)
    (call,) = fsyncs.wait_for(own.fd)
    assert call.native not in (threading.get_native_id(), parent_thread)
    assert str(call.native) in os.listdir(f"/proc/{os.getpid()}/task")  # a thread of the child
    inherited._last_sync -= 120.0  # overdue: the child's thread must fsync it at once
    inherited.write_line(LINE)
    (call2,) = fsyncs.wait_for(inherited.fd)
    assert call2.native == call.native  # one thread serves both files
    assert [t.name for t in threading.enumerate()].count("trainrecord-fsync") == 1
    own.close()
    inherited.close()


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs os.fork and /proc")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() of a threaded process
def test_a_forked_child_that_writes_gets_its_own_thread(tmp_path: Path, fsyncs: Recorder):
    started = AppendFile(tmp_path / "parent.jsonl", fsync_interval=0.0)
    started.write_line(LINE)
    (parent_call,) = fsyncs.wait_for(started.fd)  # the parent's thread runs
    pending = AppendFile(tmp_path / "pending.jsonl", fsync_interval=60.0)
    pending.write_line(LINE)  # scheduled in the parent, a minute away, at the fork
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which reports by its exit status
        code = 1
        try:
            _child(tmp_path, pending, fsyncs, parent_call.native)
            code = 0
        except BaseException as exc:
            print(f"child failed: {exc!r}", file=sys.stderr)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert (tmp_path / "child.jsonl").read_bytes() == LINE
    assert (tmp_path / "pending.jsonl").read_bytes() == LINE * 2
    assert len(fsyncs.of(pending.fd)) == 0  # the parent's minute has not come
    started.close()
    pending.close()


DROPPED_UNCLOSED = """
import gc, sys, tempfile, threading, time
from pathlib import Path
import trainrecord.diary.durability as durability
from trainrecord.diary.durability import AppendFile

died = []
threading.excepthook = lambda args: died.append(repr(args.exc_value))
root = Path(tempfile.mkdtemp())
gc.set_threshold(1)  # a collection at nearly every allocation, the scheduler's own included
for i in range(200):
    f = AppendFile(root / f"f{i}.jsonl", fsync_interval=0.0005)
    f.cycle = f  # only the collector frees it (a Monitor dropped unclosed), at any moment
    f.write_line(b'{"i":1}\\n')
    del f
    time.sleep(0.001)
gc.set_threshold(700)
last = AppendFile(root / "last.jsonl", fsync_interval=0.01)
last.write_line(b'{"i":1}\\n')
deadline = time.monotonic() + 5
while time.monotonic() < deadline and last in durability._scheduler()._due:
    time.sleep(0.01)
print(died, last in durability._scheduler()._due)
sys.exit(1 if died or last in durability._scheduler()._due else 0)
"""


def test_files_of_writers_dropped_unclosed_never_stop_the_fsync_thread() -> None:
    """A writer dropped without close() (a notebook's abandoned Monitor) is collected
    whenever the collector runs, the scheduler's reading of its due files included: the
    thread died of it ("min() arg is an empty sequence") and no file of the process was
    fsynced in the background any more."""
    result = subprocess.run(
        [sys.executable, "-c", DROPPED_UNCLOSED], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
