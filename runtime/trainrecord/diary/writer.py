"""DiaryWriter and MetricsWriter: append hash-chained events and metrics rows.

``DiaryWriter(run_dir)`` creates ``run_dir/diary.jsonl``, or resumes an existing diary after
verifying it (continuing its seq and chain). ``append(event, fields)`` adds seq, time,
event, prev and hash, checks the line against its event's schema (an invalid event raises
:class:`~trainrecord.errors.RecordRefused` and writes nothing), writes it as one line and
returns it. Non-finite floats in ``fields`` become the strings "NaN", "Infinity",
"-Infinity" first. Every line is written whole in one ``os.write`` and fsynced by policy
(see :mod:`trainrecord.diary.durability`); a write that fails (a full disk) leaves no part
of its line behind and refuses every later line, with a
:class:`~trainrecord.errors.RecordWriteError`. On close the writer seals the record
(record.json, and record.sig when given a signing key), unless a write failed.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from types import TracebackType
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a runtime dependency; json still works
    orjson = None  # type: ignore[assignment]

from trainrecord.canonical import GENESIS, canonical_line
from trainrecord.diary.durability import AppendFile, FsyncPolicy, fsync_dir
from trainrecord.diary.events import (
    COMMON_FIELDS,
    METRICS_ROW_SCHEMA,
    check_line,
    fast_problems,
)
from trainrecord.diary.nonfinite import encode
from trainrecord.diary.verifier import DIARY, METRICS, SEAL, SIGNATURE, verify
from trainrecord.errors import RecordRefused

RESUMED = "(resumed)"
"""``last_event`` of a writer that resumed a diary without run_end (a crashed session)."""

SYNC_EVENTS = frozenset({"run_start", "run_end"})
"""Events that are always fsynced, besides every event of severity critical."""


class DiaryWriter:
    """Append events to ``run_dir/diary.jsonl``, hash-chained; usable as a context manager."""

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        *,
        fsync_policy: FsyncPolicy = "interval",
        fsync_interval: float = 1.0,
        validate: bool = True,
        drop_torn_tail: bool = False,
        seal: bool = True,
        signing_key: Any = None,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.run_dir / DIARY
        self.validate = validate
        self.seal_on_close = seal
        self.signing_key = signing_key
        self.seq = 0
        self.head = GENESIS
        self.last_event: str | None = None
        self.resumed_start: dict[str, Any] | None = None
        """The last run_start of the diary this writer resumed (its latest session), None
        for a new diary."""
        self._closed = False
        existed = self.path.exists()
        self._file = AppendFile(self.path, fsync_policy=fsync_policy, fsync_interval=fsync_interval)
        try:
            self._resume(drop_torn_tail)
        except BaseException:
            self._file.close()
            self._closed = True
            raise
        if not existed:
            fsync_dir(self.run_dir)

    def _resume(self, drop_torn_tail: bool) -> None:
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        result = verify(self.run_dir, workers=1)
        if result.status == "torn" and drop_torn_tail:
            os.ftruncate(self._file.fd, self.path.stat().st_size - result.torn_bytes)
            self._file.sync()
            if result.lines == 0:  # the crash came while writing the first line: start afresh
                return
            result = verify(self.run_dir, workers=1)
        if not result.ok:
            if result.status == "torn":
                raise RecordRefused.one(
                    "diary.writer.resume",
                    [DIARY],
                    f"the diary ends in a torn line ({result.torn_bytes} bytes, a crash while "
                    "writing); open it with drop_torn_tail=True to cut that line and append",
                )
            raise RecordRefused.one(
                "diary.writer.resume",
                [DIARY],
                f"the diary fails verification and is never appended to: {result.failure}",
            )
        self.seq = result.lines
        self.head = result.head_hash or GENESIS
        self.last_event = "run_end" if result.complete else RESUMED
        self.resumed_start = result.last_run_start
        for name in (SEAL, SIGNATURE):  # the seal pins the old head; appending outdates it
            (self.run_dir / name).unlink(missing_ok=True)

    # -- writing ---------------------------------------------------------------------------

    def append(self, event: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Write one event; return the full line (seq, time, event, fields, prev, hash)."""
        if self._closed:
            raise ValueError("the diary writer is closed")
        if not isinstance(event, str) or not event:
            raise RecordRefused.one(
                "diary.event.format", ["event"], "event must be a non-empty string", event
            )
        if not isinstance(fields, dict):
            raise RecordRefused.one(
                "diary.line.type", ["fields"], "fields must be a dict of the event's fields", fields
            )
        reserved = sorted(set(fields) & set(COMMON_FIELDS))
        if reserved:
            raise RecordRefused.one(
                "diary.writer.reserved",
                [reserved[0]],
                "the writer sets seq, time, event, prev and hash; remove them from fields",
            )
        if self.seq == 0 and event != "run_start":
            raise RecordRefused.one(
                "diary.order.run_start",
                ["event"],
                "the first line of a diary must be run_start",
                event,
            )
        if self.last_event == RESUMED and event != "run_start":
            raise RecordRefused.one(
                "diary.writer.resume",
                ["event"],
                "a resumed diary continues with the new session's run_start: write it first",
                event,
            )
        if self.last_event == "run_end" and event != "run_start":
            raise RecordRefused.one(
                "diary.order.run_end",
                ["event"],
                "after run_end only a run_start (a resumed run) may follow",
                event,
            )
        body = {"seq": self.seq, "time": round(time.time(), 3), "event": event, **encode(fields)}
        if self.validate:
            found = check_line({**body, "prev": self.head, "hash": GENESIS})
            if found:
                raise RecordRefused(found)
        try:
            text = canonical_line(body)
        except (TypeError, ValueError) as exc:
            raise RecordRefused.one(
                "diary.file.json", ["fields"], f"a field cannot be written as JSON: {exc}"
            ) from None
        digest = hashlib.sha256((self.head + text).encode("utf-8")).hexdigest()
        line = {**body, "prev": self.head, "hash": digest}
        data = (canonical_line(line) + "\n").encode("utf-8")
        sync = event in SYNC_EVENTS or fields.get("severity") == "critical"
        self._file.write_line(data, sync=sync)
        self.seq += 1
        self.head = digest
        self.last_event = event
        return line

    def sync(self) -> None:
        """fsync the diary now."""
        self._file.sync()

    def close(self) -> None:
        """fsync and close, then seal the record (record.json; record.sig with a key).

        A diary whose write (or fsync) failed is not sealed: it ends where the failure left
        it, as after a crash, and ``trainrecord seal`` can seal it once checked."""
        if self._closed:
            return
        self._closed = True
        self._file.close()
        if self.seal_on_close and self.seq > 0 and not self._file.broken:
            from trainrecord.diary.seal import write_seal

            write_seal(self.run_dir, signing_key=self.signing_key)

    @property
    def closed(self) -> bool:
        """Whether close() has run."""
        return self._closed

    def __enter__(self) -> DiaryWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def row_bytes(row: dict[str, Any]) -> bytes:
    """One metrics row as compact JSON and a newline.

    ``row`` holds no non-finite float (:func:`~trainrecord.diary.nonfinite.encode` made them
    tokens). orjson writes it about ten times faster than ``json``; its number forms differ
    (``0.00001`` for ``1e-05``) but both are JSON of the same values. What orjson refuses
    (an integer beyond 64 bits) ``json`` writes; what neither can write is refused."""
    if orjson is not None:
        try:
            return orjson.dumps(
                row,
                option=orjson.OPT_APPEND_NEWLINE
                | orjson.OPT_PASSTHROUGH_DATACLASS
                | orjson.OPT_PASSTHROUGH_DATETIME
                | orjson.OPT_PASSTHROUGH_SUBCLASS,
            )
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
    try:
        return (json.dumps(row, separators=(",", ":"), allow_nan=False) + "\n").encode()
    except (TypeError, ValueError) as exc:
        raise RecordRefused.one(
            "diary_metrics.row.type", ["row"], f"a value cannot be written as JSON: {exc}"
        ) from None


class MetricsWriter:
    """Append rows to ``run_dir/metrics.jsonl`` and keep its running SHA-256."""

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        *,
        validate: bool = True,
        fsync_policy: FsyncPolicy = "interval",
        fsync_interval: float = 1.0,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.run_dir / METRICS
        self.validate = validate
        self._digest = hashlib.sha256()
        self.rows = 0
        self._file = AppendFile(
            self.path,
            fsync_policy=fsync_policy,
            fsync_interval=fsync_interval,
            lock_rule="diary_metrics.writer.locked",
            unit="row",
        )
        data = self.path.read_bytes()
        keep = data.rfind(b"\n") + 1
        if keep < len(data):  # a torn row from a crash: no run_end can name it
            os.ftruncate(self._file.fd, keep)
            self._file.sync()
            data = data[:keep]
        self._digest.update(data)
        self.rows = data.count(b"\n")
        self._torn_counted = False
        self._closed = False

    def append(self, row: dict[str, Any]) -> dict[str, Any]:
        """Write one row (non-finite floats become tokens); return the row as written."""
        if self._closed:
            raise ValueError("the metrics writer is closed")
        row = encode(row)
        if self.validate:
            found = fast_problems(row, METRICS_ROW_SCHEMA)
            if found:
                raise RecordRefused(found)
        data = row_bytes(row)
        try:
            self._file.write_line(data)
        except BaseException:
            # a row that failed part-way is cut off again; should that fail too, the bytes
            # left belong to the file, and so to its digest (run_end names the whole file)
            if self._file.torn_tail and not self._torn_counted:
                self._torn_counted = True
                self._digest.update(self._file.torn_tail)
            raise
        self._digest.update(data)
        self.rows += 1
        return row

    def sha256(self) -> str:
        """SHA-256 (hex) of metrics.jsonl as it stands (a failed row's uncut bytes too)."""
        return self._digest.hexdigest()

    def sync(self) -> None:
        """fsync metrics.jsonl now."""
        self._file.sync()

    def close(self) -> None:
        """fsync and close (idempotent)."""
        if not self._closed:
            self._closed = True
            self._file.close()

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
