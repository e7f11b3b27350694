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

from trainrecord.folders import open_no_link
from trainrecord.foundry import files

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: in-process lock only
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("trainrecord.report")

SEQ_FILE = "report_seq.json"
"""The conventional name of the seq file, beside the run's metadata.json."""


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
        with os.fdopen(open_no_link(lock_path, os.O_RDWR), "r+b") as handle:
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
        files.replace(self.path, json.dumps({"last_seq": value}).encode("utf-8"))

    def next(self) -> int:
        """The next seq: ``max(now_ms, last + 1)`` over this process and the shared file."""
        with self._lock, self._file_lock():
            last = max(self._last, self._read())
            value = max(int(self._clock()), last + 1)
            self._write(value)
            self._last = value
            return value
