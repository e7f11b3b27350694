"""Reading a record for people: the diary's lines, the metrics rows, and a summary.

These readers are lenient (they stop at a torn last line and skip nothing else); they do
not verify. Use :func:`trainrecord.diary.verify` to know whether the record is intact. They
refuse what they cannot hand on (a line that is not a JSON object, a metrics row of another
shape) with a :class:`~trainrecord.errors.RecordRefused` naming the line and its rule.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainrecord.canonical import loads_strict
from trainrecord.diary.events import (
    METRICS_ROW_SCHEMA,
    fast_line_problems,
    fast_problems,
    not_an_object,
)
from trainrecord.diary.nonfinite import decode
from trainrecord.errors import Problem, RecordRefused
from trainrecord.formats import syntax_problem

DIARY, METRICS = "diary.jsonl", "metrics.jsonl"


def read_jsonl(
    path: Path, check: Callable[[Any], list[Problem]], json_rule: str
) -> list[dict[str, Any]]:
    """Every complete line of a JSON-lines file (a torn last line is left out).

    Raises :class:`RecordRefused` for the first line that is not strict JSON (rule
    ``json_rule``) or in which ``check`` finds a problem (it must refuse a line that is not
    a JSON object), the problem's field led by the line: ``line 3.grad``."""
    if not path.exists():
        return []
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    lines = []
    for number, raw in enumerate(data[:end].split(b"\n")[:-1], 1):
        where = f"line {number}"
        try:
            line = loads_strict(raw)
        except ValueError as exc:
            raise RecordRefused([syntax_problem(json_rule, (where,), exc)]) from None
        found = check(line)
        if found:
            first = found[0]
            raise RecordRefused(
                [Problem(first.rule, (where, *first.path), first.message, first.value)]
            )
        lines.append(line)
    return lines


def read_diary(
    run_dir: str | os.PathLike[str], reads: Mapping[str, Collection[str]] | None = None
) -> list[dict[str, Any]]:
    """The lines of diary.jsonl, each a JSON object (see :func:`read_jsonl` for what is
    refused). ``reads`` names, per event, the fields the caller reads (``{"alarm":
    ("step",)}``): in a line of such an event they are checked against its schema (there,
    and of the spec's type); the other fields are not the caller's to refuse."""
    reads = reads or {}

    def check(line: Any) -> list[Problem]:
        if not isinstance(line, dict):
            return [not_an_object(line)]
        event = line.get("event")
        fields = reads.get(event, ()) if isinstance(event, str) else ()
        if not fields:
            return []
        return [p for p in fast_line_problems(line) if p.path[:1] in [(f,) for f in fields]]

    return read_jsonl(Path(run_dir) / DIARY, check, "diary.file.json")


NO_VALUE = frozenset({"diary_metrics.loss.type", "diary_metrics.grad.value"})
"""The rules of a metrics row's loss or gradient norm that is no number (``10**400``, a
string): a reader takes it for no value, as a NaN (show leaves it out of the loss line,
plot draws no point for it), and does not refuse the row."""


def read_metrics(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of metrics.jsonl, each checked against the row schema (but for
    :data:`NO_VALUE`), with non-finite tokens turned back into floats (see
    :func:`read_jsonl` for what is refused)."""

    def check(row: Any) -> list[Problem]:
        return [p for p in fast_problems(row, METRICS_ROW_SCHEMA) if p.rule not in NO_VALUE]

    rows = read_jsonl(Path(run_dir) / METRICS, check, "diary.metrics.json")
    for row in rows:
        row["loss"] = decode(row["loss"])
        row["grad"] = {k: decode(v) for k, v in row["grad"].items()}
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
