"""seq: the ordering number of reports about one run (§4 of the seed).

seq is the send time in milliseconds, but strictly increasing for one run_id across resumes
and processes: ``max(now_ms, last_seq + 1)``. The last value is kept in memory and, when a
file is given, persisted there under an exclusive lock (written atomically and fsynced, so
it survives a crash), so a resumed run (a new process) or a ``report_status()`` snapshot
from another process never repeats or goes back, even when two reports fall in the same
millisecond or the wall clock stepped back.

Public API: :class:`SeqClock` ``(path=None, last_seq=0, clock=None)`` with
``next() -> int`` and ``last``; :func:`now_ms`. ``clock`` (milliseconds, default
:func:`now_ms`) lets a test give a clock that stands still or steps back.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from trainrecord.errors import RecordWriteError
from trainrecord.folders import open_no_link
from trainrecord.foundry import files

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: in-process lock only
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("trainrecord.report")

SEQ_FILE = "report_seq.json"
"""The conventional name of the seq file, beside the run's metadata.json."""
ELSEWHERE = "run folder"
"""What a failed write of a run folder's file advises giving the run instead (see
:func:`trainrecord.errors.write_advice`)."""
_UNWRITABLE: set[Path] = set()
"""The folders :func:`unwritable` has warned about and that were not written since."""
_UNWRITABLE_LOCK = threading.Lock()


def unwritable(exc: RecordWriteError, also: str = "") -> None:
    """Say once that a running job's run folder cannot be written (a read-only mount, a full
    disk): ``exc`` names the file, the cause and the fix; training and its reports go on;
    ``also`` (a sentence) says what else is lost. Quiet for that folder until
    :func:`written` is called for it (a write got through)."""
    folder = Path(exc.filename).parent
    with _UNWRITABLE_LOCK:
        if folder in _UNWRITABLE:
            return
        _UNWRITABLE.add(folder)
    log.warning(
        "trainrecord report: %s Training and its reports go on; until the folder can be "
        "written again nothing more is kept there (the report seq, and the epoch history of "
        "a Reporter given run=), so a resume or a snapshot from another process sees the run "
        "as it was before.%s Said once until the folder is written again",
        said if (said := str(exc)).endswith(".") else f"{said}.",
        f" {also}" if also else "",
    )


def written(folder: Path) -> None:
    """A file in ``folder`` was written: a later failure there is said again."""
    if folder in _UNWRITABLE:
        with _UNWRITABLE_LOCK:
            _UNWRITABLE.discard(folder)
        log.info("trainrecord report: %s can be written again", folder)


def now_ms() -> int:
    """Milliseconds since the Unix epoch."""
    return time.time_ns() // 1_000_000


class SeqClock:
    """Hands out strictly increasing seq numbers for one run.

    ``path``: a small JSON file ``{"last_seq": N}`` beside the run's metadata, shared by
    every process that reports about the run; ``last_seq``: a known floor (e.g. read from
    metadata.json) when there is no file; ``clock``: the send time in milliseconds
    (default :func:`now_ms`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        last_seq: int = 0,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self._last = int(last_seq)
        self._clock = clock if clock is not None else now_ms
        self._lock = threading.Lock()
        self._warned = False

    @property
    def last(self) -> int:
        """The last seq handed out (or the floor given)."""
        return self._last

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        if self.path is None or fcntl is None:
            yield
            return
        lock_path = self.path.with_name(self.path.name + ".lock")
        with files.failures_named(self.path, elsewhere=ELSEWHERE):
            fd = open_no_link(lock_path, os.O_RDWR)
        with os.fdopen(fd, "r+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def _read(self) -> int:
        if self.path is None:
            return 0
        try:
            value = json.loads(self.path.read_text(encoding="utf-8")).get("last_seq", 0)
        except FileNotFoundError:
            return 0
        except (ValueError, AttributeError):
            value = None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        self._unreadable()
        return 0

    def _unreadable(self) -> None:
        """Say once that the seq file could not be read: reporting goes on (seq from the
        clock and this process's last seq; the next write repairs the file), but a seq
        written by another process may now be overtaken only by the clock."""
        if not self._warned:
            self._warned = True
            log.warning(
                'report seq file %s is not {"last_seq": <integer>}: seq continues from the '
                "clock and this process's last seq, and the file is written again; delete "
                "it or restore it to silence this",
                self.path,
            )

    def _write(self, value: int) -> None:
        if self.path is None:
            return
        with files.failures_named(self.path, elsewhere=ELSEWHERE):
            files.replace(self.path, json.dumps({"last_seq": value}).encode("utf-8"))
        written(self.path.parent)

    def _take(self, *, keep: bool) -> int:
        last = max(self._last, self._read())
        value = max(int(self._clock()), last + 1)
        if keep:
            self._write(value)
        self._last = value
        return value

    def next(self) -> int:
        """The next seq: ``max(now_ms, last + 1)`` over this process and the shared file.

        A seq file that cannot be written (a read-only folder, a full disk: its lock or the
        file itself) is left as it was, and said once (:func:`unwritable`); the seq is then
        this process's (still strictly rising in it) and reporting goes on."""
        with self._lock:
            try:
                with self._file_lock():
                    return self._take(keep=True)
            except RecordWriteError as exc:
                unwritable(exc)
                return self._take(keep=False)
