"""The receiver's store: the latest report per run_id by seq, in one SQLite file.

Newest wins with one statement, ``INSERT ... ON CONFLICT(run_id) DO UPDATE ... WHERE
excluded.seq > runs.seq``, so concurrent posts from many clients never let an older report
replace a newer one, whatever the order they arrive in (§4). Every receipt (run_id, seq,
received_at, stored) is kept for audit. WAL mode; one connection per call, so any thread may
use the store.

Public API: :class:`ReportStore` ``(path)`` with ``put(report, received_at=None) -> bool``
(whether it became the stored report), ``latest(run_id)``, ``runs(every, now=None)`` (each
run's summary with ``state``: its status, or ``no contact`` when in progress and silent
for 3 x every + 5 minutes), ``receipts(run_id)``; :func:`run_state`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trainrecord.folders import open_no_link

NO_CONTACT_GRACE_S = 300.0
"""The "few minutes" of §3 added to 3 x every before an in-progress run shows no contact."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    grp TEXT NOT NULL,
    host TEXT NOT NULL,
    event TEXT NOT NULL,
    status TEXT NOT NULL,
    sent_at TEXT NOT NULL,
    received_at REAL NOT NULL,
    last_contact REAL NOT NULL,
    report TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS receipts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    received_at REAL NOT NULL,
    stored INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS receipts_run ON receipts (run_id, seq);
"""

_UPSERT = """
INSERT INTO runs (run_id, seq, kind, name, grp, host, event, status, sent_at, received_at,
                  last_contact, report)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(run_id) DO UPDATE SET
    seq = excluded.seq, kind = excluded.kind, name = excluded.name, grp = excluded.grp,
    host = excluded.host, event = excluded.event, status = excluded.status,
    sent_at = excluded.sent_at, received_at = excluded.received_at,
    last_contact = max(runs.last_contact, excluded.last_contact), report = excluded.report
WHERE excluded.seq > runs.seq
"""


def run_state(status: str, last_contact: float, every: float, now: float) -> str:
    """The state to show: the stored status, or ``no contact`` for a silent run in progress."""
    if status == "in progress" and now - last_contact > 3 * every + NO_CONTACT_GRACE_S:
        return "no contact"
    return status


class ReportStore:
    """Latest report per run_id, newest seq wins, in one SQLite file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not self.path.exists():  # made private (reports hold hosts, configs, errors), and
            os.close(open_no_link(self.path, os.O_RDWR, 0o600))  # never through a link
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            db.execute("PRAGMA busy_timeout=30000")
            yield db
        finally:
            db.close()

    def put(self, report: dict[str, Any], received_at: float | None = None) -> bool:
        """Store ``report`` if its seq is newer than the stored one; log the receipt.

        Returns whether it is now the stored report.
        """
        now = time.time() if received_at is None else received_at
        row = (
            report["run_id"],
            report["seq"],
            report["kind"],
            report["name"],
            report["group"],
            report["host"],
            report["event"],
            report["status"],
            report["sent_at"],
            now,
            now,
            json.dumps(report, ensure_ascii=False, allow_nan=False),
        )
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                stored = db.execute(_UPSERT, row).rowcount == 1
                if not stored:
                    db.execute(
                        "UPDATE runs SET last_contact = max(last_contact, ?) WHERE run_id = ?",
                        (now, report["run_id"]),
                    )
                db.execute(
                    "INSERT INTO receipts (run_id, seq, received_at, stored) VALUES (?, ?, ?, ?)",
                    (report["run_id"], report["seq"], now, int(stored)),
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return stored

    def latest(self, run_id: str) -> dict[str, Any] | None:
        """The stored (newest-seq) report of a run, or None."""
        with self._connect() as db:
            row = db.execute("SELECT report FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def runs(self, every: float = 60.0, now: float | None = None) -> list[dict[str, Any]]:
        """Every run's summary, most recently heard from first, with its display state."""
        now = time.time() if now is None else now
        with self._connect() as db:
            rows = db.execute(
                "SELECT run_id, seq, kind, name, grp, host, event, status, sent_at, received_at, "
                "last_contact FROM runs ORDER BY last_contact DESC, run_id"
            ).fetchall()
        return [
            {
                "run_id": r[0],
                "seq": r[1],
                "kind": r[2],
                "name": r[3],
                "group": r[4],
                "host": r[5],
                "event": r[6],
                "status": r[7],
                "sent_at": r[8],
                "received_at": r[9],
                "last_contact": r[10],
                "state": run_state(r[7], r[10], every, now),
            }
            for r in rows
        ]

    def receipts(self, run_id: str) -> list[dict[str, Any]]:
        """Every receipt of a run in arrival order: seq, received_at and whether it was stored."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT seq, received_at, stored FROM receipts WHERE run_id = ? ORDER BY id",
                (run_id,),
            ).fetchall()
        return [{"seq": r[0], "received_at": r[1], "stored": bool(r[2])} for r in rows]
