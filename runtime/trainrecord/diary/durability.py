"""Writing lines durably: one ``os.write`` per line, fsync by policy, an exclusive lock.

Every line is written with a single ``os.write`` of the whole line and its newline on an
``O_APPEND`` descriptor, so it reaches the kernel at once (a killed process loses at most
the line being written, which can only be torn at the end of the file). ``fsync`` makes
it survive a power cut: always at the points the caller marks as mandatory (run_start,
critical events, run_end, close), and in between by policy:

* ``"always"``: after every line;
* ``"interval"`` (default): when ``fsync_interval`` seconds (default 1.0) have passed
  since the last fsync;
* ``"critical"``: only at the mandatory points.

An exclusive ``flock`` keeps a second writer off the same file (where the platform has it).
"""

from __future__ import annotations

import os
import time
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
                "another writer has this file open; close it before writing here",
            ) from None
        self._last_sync = time.monotonic()
        self.broken = False

    def write_line(self, data: bytes, *, sync: bool = False) -> None:
        """Append ``data`` (one line, ending in a newline) and fsync as the policy says."""
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
        now = time.monotonic()
        if (
            sync
            or self.fsync_policy == "always"
            or (self.fsync_policy == "interval" and now - self._last_sync >= self.fsync_interval)
        ):
            self.sync()

    def sync(self) -> None:
        """fsync the file now."""
        os.fsync(self.fd)
        self._last_sync = time.monotonic()

    def close(self) -> None:
        """fsync and close (idempotent)."""
        if self.fd >= 0:
            try:
                if not self.broken:
                    os.fsync(self.fd)
            finally:
                os.close(self.fd)
                self.fd = -1


def fsync_dir(path: Path) -> None:
    """fsync a directory so that a newly created or renamed file in it survives."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
