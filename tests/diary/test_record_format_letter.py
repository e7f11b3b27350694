"""The diary against the seed's wording where an audit found it unchecked or undecided
(spec/README.md, "Diary", decisions): a named field keeps its meaning on every line that
carries it, a channels event's severity, a repair's relative_change against its norms,
metrics.jsonl against run_end, the record.json fields a reader does not know, and the file
bytes (a BOM, blank lines, CRLF). Each case writes a real record (DiaryWriter,
MetricsWriter), changes it as a forger who knows the recipe would (every hash recomputed)
and runs the verifier."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.diary.helpers import BODIES, rechain, write_run
from trainrecord.diary import DiaryWriter, verify
from trainrecord.errors import RecordRefused


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    write_run(run, seal=False)
    assert verify(run).ok
    return run


def _line_no(run: Path, event: str) -> int:
    """The 1-based number of the first line of ``event``."""
    lines = (run / "diary.jsonl").read_text(encoding="utf-8").splitlines()
    return next(i for i, x in enumerate(lines, 1) if json.loads(x)["event"] == event)


def _edit(run: Path, event: str, **changes: Any) -> int:
    """Change the first ``event`` line, re-hash the chain; its line number."""
    n = _line_no(run, event)

    def change(number: int, line: dict[str, Any]) -> None:
        if number == n:
            line.update(changes)

    rechain(run, change)
    return n


def _fails(run: Path, rule: str, line: int | None) -> None:
    result = verify(run)
    assert result.status == "failed" and result.failure is not None, result.summary()
    assert result.failure.rule == rule, result.summary()
    if line is not None:
        assert result.failure.line == line, result.summary()


def _refused(event: str, body: dict[str, Any], rule: str, tmp_path: Path) -> None:
    """The writer refuses the event with ``rule`` (it checks what the verifier checks)."""
    with DiaryWriter(tmp_path / "writer", seal=False) as writer:
        writer.append("run_start", BODIES["run_start"])
        with pytest.raises(RecordRefused) as refused:
            writer.append(event, body)
    assert rule in [p.rule for p in refused.value.problems]


# F3: step, severity and layer keep the seed's meaning on any line that carries them.
UNLISTED = [
    ("sink_error", {"step": "x"}, "diary.step.type"),
    ("sink_error", {"step": -3}, "diary.step.negative"),
    ("sink_error", {"severity": "bogus"}, "diary.severity.value"),
    ("sink_error", {"layer": 5}, "diary.layer.type"),
    ("sink_error", {"layer": ""}, "diary.layer.empty"),
    ("run_start", {"severity": "bogus"}, "diary.severity.value"),
    ("run_start", {"step": -3}, "diary.step.negative"),
    ("alarm_cleared", {"severity": "bogus"}, "diary.severity.value"),
    ("lr_changed", {"step": 1.0}, "diary.step.type"),
    ("lr_changed", {"layer": ["conv1.0"]}, "diary.layer.type"),
]


@pytest.mark.parametrize(("event", "extra", "rule"), UNLISTED, ids=lambda v: str(v))
def test_a_named_field_keeps_its_meaning_where_its_event_does_not_list_it(
    tmp_path: Path, event: str, extra: dict[str, Any], rule: str
) -> None:
    """diary.step.type, diary.step.negative, diary.severity.value, diary.layer.type,
    diary.layer.empty on events whose field list does not name step, severity or layer
    (and on an event type this version does not list)."""
    run = _run(tmp_path)
    if event == "lr_changed":  # an event type this version does not list
        with DiaryWriter(run, seal=False) as writer:
            writer.append("run_start", BODIES["run_start"])
            writer.append("lr_changed", {"lr": 0.01, "step": 3, "layer": "conv1.0"})
        assert verify(run).ok
    n = _edit(run, event, **extra)
    _fails(run, rule, n)


def test_an_unlisted_step_severity_and_layer_of_the_seeds_meaning_verify(tmp_path: Path) -> None:
    """A line may carry more fields than listed: valid ones pass on any event."""
    run = _run(tmp_path)
    for event in ("sink_error", "alarm_cleared", "loss_recovered"):
        _edit(run, event, step=7, severity="info", layer="conv1.0")
    assert verify(run).ok


@pytest.mark.parametrize("severity", ["action", "proof", "critical"])
@pytest.mark.parametrize("event", ["channels", "channels_cleared"])
def test_a_channels_event_is_info_or_warning(tmp_path: Path, event: str, severity: str) -> None:
    """diary.channels.severity.value: action is a repair's, proof a certificate's, critical
    non-finite values'; a channels or channels_cleared event is none of them."""
    run = _run(tmp_path)
    for ok in ("info", "warning"):
        _edit(run, event, severity=ok)
        assert verify(run).ok
    n = _edit(run, event, severity=severity)
    _fails(run, "diary.channels.severity.value", n)
    _refused(
        event, {**BODIES[event], "severity": severity}, "diary.channels.severity.value", tmp_path
    )
