"""Checking a stretch of diary.jsonl line by line: JSON, schema, seq, prev, hash, order.

:func:`scan` checks the complete lines of a byte range and stops at the first line that
fails. It knows only what lies in its range; the caller joins ranges (seq and prev across
the boundary, the first line being run_start, the line after a run_end) and so can run
ranges in parallel processes. Each failure names the rule (``spec/rules/diary.json``).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from trainrecord.diary.events import fast_line_problems
from trainrecord.diary.fastline import LineSyntaxError, parse_line


@dataclass(frozen=True)
class LineFailure:
    """The first line that failed: its 1-based line number, seq, rule and reason."""

    line: int
    seq: int | None
    rule: str
    message: str
    file: str = "diary.jsonl"

    def __str__(self) -> str:
        where = self.file + (f" line {self.line}" if self.line > 0 else "")
        where += f" (seq {self.seq})" if self.seq is not None else ""
        return f"{where}: [{self.rule}] {self.message}"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "file": self.file,
            "line": self.line,
            "seq": self.seq,
            "rule": self.rule,
            "message": self.message,
        }


@dataclass
class ChunkResult:
    """What one range of lines showed: enough for the caller to join ranges."""

    first_line: int
    lines: int = 0
    first_seq: int | None = None
    first_prev: str | None = None
    first_event: str | None = None
    last_seq: int | None = None
    last_hash: str | None = None
    last_event: str | None = None
    failure: LineFailure | None = None
    events: Counter[str] = field(default_factory=Counter)
    run_ends: list[tuple[int, str]] = field(default_factory=list)
    """(line number, metrics_sha256) of every run_end in the range."""


def _seq_of(value: Any) -> int | None:
    seq = value.get("seq") if isinstance(value, dict) else None
    return seq if type(seq) is int else None


def scan(data: bytes | memoryview, first_line: int) -> ChunkResult:
    """Check every complete line in ``data`` (which ends at a newline or is empty).

    ``first_line`` is the 1-based number of the first line in the file. Within the range,
    seq must increase by one from the first line's seq and each prev must be the hash of
    the line before; the first line's seq and prev are left to the caller.
    """
    raw_all = bytes(data)
    res = ChunkResult(first_line=first_line)
    events = res.events
    sha256 = hashlib.sha256
    pos = 0
    end = len(raw_all)
    line_no = first_line
    prev_hash: str | None = None
    prev_event: str | None = None
    expect_seq: int | None = None
    while pos < end:
        nl = raw_all.index(b"\n", pos)
        raw = raw_all[pos:nl]
        pos = nl + 1
        try:
            value, body = parse_line(raw)
        except LineSyntaxError as exc:
            res.failure = LineFailure(line_no, None, "diary.file.json", str(exc))
            return res
        if not isinstance(value, dict):
            res.failure = LineFailure(
                line_no, None, "diary.file.json", "the line is not a JSON object"
            )
            return res
        found = fast_line_problems(value)
        seq = _seq_of(value)
        if found:
            p = found[0]
            res.failure = LineFailure(
                line_no,
                seq,
                p.rule,
                f"{p.field}: {p.message}" + (f" (got {p.value})" if p.value is not None else ""),
            )
            return res
        event = value["event"]
        prev = value["prev"]
        if expect_seq is None:
            res.first_seq, res.first_prev, res.first_event = seq, prev, event
        else:
            if seq != expect_seq:
                res.failure = LineFailure(
                    line_no, seq, "diary.chain.seq", f"seq is {seq}, expected {expect_seq}"
                )
                return res
            if prev != prev_hash:
                res.failure = LineFailure(
                    line_no,
                    seq,
                    "diary.chain.prev",
                    "prev is not the hash of the line before (a line was removed, inserted, "
                    "reordered or changed)",
                )
                return res
            if prev_event == "run_end" and event != "run_start":
                res.failure = LineFailure(
                    line_no,
                    seq,
                    "diary.order.run_end",
                    f"a {event} line follows run_end; only a run_start (a resumed run) may",
                )
                return res
        if body is None:
            res.failure = LineFailure(
                line_no,
                seq,
                "diary.file.json",
                "the line holds a value canonical JSON cannot write",
            )
            return res
        digest = sha256(prev.encode("utf-8") + body).hexdigest()
        if digest != value["hash"]:
            res.failure = LineFailure(
                line_no,
                seq,
                "diary.chain.hash",
                "hash does not match the line's content: the line was changed after it was written",
            )
            return res
        events[event] += 1
        if event == "run_end":
            res.run_ends.append((line_no, value["metrics_sha256"]))
        prev_hash = digest
        prev_event = event
        expect_seq = seq + 1  # type: ignore[operator]
        res.lines += 1
        line_no += 1
    res.last_seq = None if expect_seq is None else expect_seq - 1
    res.last_hash = prev_hash
    res.last_event = prev_event
    return res
