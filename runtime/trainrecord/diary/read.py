"""Reading a record for people: the diary's lines, the metrics rows, and a summary.

These readers are lenient (they stop at a torn last line and skip nothing else); they do
not verify. Use :func:`trainrecord.diary.verify` to know whether the record is intact.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainrecord.canonical import loads_strict
from trainrecord.diary.nonfinite import decode

DIARY, METRICS = "diary.jsonl", "metrics.jsonl"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every complete line of a JSON-lines file (a torn last line is left out)."""
    if not path.exists():
        return []
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    return [loads_strict(raw) for raw in data[:end].split(b"\n")[:-1]]


def read_diary(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The lines of diary.jsonl."""
    return read_jsonl(Path(run_dir) / DIARY)


def read_metrics(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of metrics.jsonl, with non-finite tokens turned back into floats."""
    rows = read_jsonl(Path(run_dir) / METRICS)
    for row in rows:
        row["loss"] = decode(row.get("loss"))
        row["grad"] = {k: decode(v) for k, v in (row.get("grad") or {}).items()}
    return rows


@dataclass
class Summary:
    """What happened in a run, gathered from its diary."""

    run: dict[str, Any] | None = None
    last_run: dict[str, Any] | None = None
    """The latest session's run_start (``run`` is the first's)."""
    end: dict[str, Any] | None = None
    """The latest session's run_end; None while that session has none (still going, or it
    crashed: an earlier session's run_end is not its end)."""
    manifest: dict[str, Any] | None = None
    alarms: list[dict[str, Any]] = field(default_factory=list)
    cleared: list[dict[str, Any]] = field(default_factory=list)
    channels: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The latest channels/channels_cleared line per layer."""
    channel_events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Every channels/channels_cleared line per layer, in order."""
    certificates: list[dict[str, Any]] = field(default_factory=list)
    refusals: list[dict[str, Any]] = field(default_factory=list)
    repairs: list[dict[str, Any]] = field(default_factory=list)
    spikes: list[dict[str, Any]] = field(default_factory=list)
    nonfinite: list[dict[str, Any]] = field(default_factory=list)
    other: list[dict[str, Any]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    sessions: int = 0


def summarize(lines: list[dict[str, Any]]) -> Summary:
    """Gather a :class:`Summary` from diary lines."""
    s = Summary()
    for line in lines:
        event = line.get("event", "?")
        if not isinstance(event, str):  # (a line verify refuses: counted as its text)
            event = str(event)
        s.counts[event] += 1
        if event == "run_start":
            s.sessions += 1
            s.run = s.run or line
            s.last_run = line
            s.end = None  # (a new session: the run_end before it was the last one's)
        elif event == "run_end":
            s.end = line
        elif event == "manifest":
            s.manifest = line
        elif event == "alarm":
            s.alarms.append(line)
        elif event == "alarm_cleared":
            s.cleared.append(line)
        elif event in ("channels", "channels_cleared"):
            s.channels[str(line.get("layer"))] = line
            s.channel_events.setdefault(str(line.get("layer")), []).append(line)
        elif event == "certificate":
            s.certificates.append(line)
        elif event == "certificate_refused":
            s.refusals.append(line)
        elif event == "repair":
            s.repairs.append(line)
        elif event in ("loss_spike", "loss_recovered"):
            s.spikes.append(line)
        elif event in ("nonfinite_loss", "nonfinite_gradient", "skipped_step"):
            s.nonfinite.append(line)
        elif event not in ("structure",):
            s.other.append(line)
    return s
