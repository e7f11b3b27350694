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


# F6: a repair's relative_change is delta_norm / weight_norm_before, null when that was 0.
@pytest.mark.parametrize(
    ("before", "relative"),
    [(2.0, 7.0), (2.0, None), (0.0, 0.5), (2.0, 0.5 * (1 + 1e-5)), (3, 1 / 3 * (1 - 2e-6))],
    ids=["wrong", "null-for-a-weight", "a-ratio-of-nothing", "off-1e-5", "off-2e-6"],
)
def test_a_repairs_relative_change_is_its_delta_over_its_weight(
    tmp_path: Path, before: float, relative: float | None
) -> None:
    """diary.repair.relative_change.value (the seed: "‖ΔW‖ / ‖W‖ (null when ‖W‖ was 0)")."""
    run = _run(tmp_path)
    n = _edit(run, "repair", delta_norm=1.0, weight_norm_before=before, relative_change=relative)
    _fails(run, "diary.repair.relative_change.value", n)


@pytest.mark.parametrize(
    ("delta", "before", "relative"),
    [(1.0, 2.0, 0.5), (1.0, 2.0, 0.5 * (1 + 5e-7)), (1.0, 0.0, None), (0.0, 4.0, 0.0)],
)
def test_a_repair_whose_relative_change_holds_verifies(
    tmp_path: Path, delta: float, before: float, relative: float | None
) -> None:
    """Within a relative 1e-6 of the quotient (another writer's rounding), or null for a
    weight norm of 0."""
    run = _run(tmp_path)
    _edit(run, "repair", delta_norm=delta, weight_norm_before=before, relative_change=relative)
    assert verify(run).ok


# F5: run_end.checks against steps, and metrics.jsonl's rows against the run_ends.
def _record(
    run: Path, sessions: list[tuple[list[int], dict[str, Any] | None]], validate: bool = True
) -> None:
    """Sessions written with the real writers, each a run_start, rows of these steps and
    its run_end (None: the session crashed, no run_end); ``steps`` in the run_end dict
    defaults to the rows' count and ``checks`` too. ``validate=False`` writes a run_end the
    writer refuses (more checks than steps) for the verifier to fail."""
    from trainrecord.diary import MetricsWriter

    for steps, end in sessions:
        with (
            DiaryWriter(run, seal=False, validate=validate) as diary,
            MetricsWriter(run) as metrics,
        ):
            diary.append("run_start", BODIES["run_start"])
            for step in steps:
                metrics.append({"step": step, "loss": 1.0, "grad": {}, "stuck": {}})
            if end is not None:
                body = {**BODIES["run_end"], "steps": 100, "checks": len(steps), **end}
                diary.append("run_end", {**body, "metrics_sha256": metrics.sha256()})


@pytest.mark.parametrize(
    ("sessions", "rule", "where"),
    [
        ([([0, 50, 100, 150, 200], {"checks": 2})], "diary.metrics.rows", 2),
        ([([], {"checks": 2})], "diary.metrics.rows", 2),
        ([([0, 50], {}), ([250, 300, 350], {"checks": 2})], "diary.metrics.rows", 4),
        (
            [([0, 50], {"checks": 1, "error": {"type": "OSError", "message": "x"}})],
            "diary.metrics.rows",
            2,
        ),
        ([([50, 0], {})], "diary.metrics.order", 2),
        ([([0, 0], {})], "diary.metrics.order", 2),
        ([([0, 50], {}), ([300, 200], {})], "diary.metrics.order", 4),
        ([([0, 50], None)], None, None),  # trailing rows of a crashed session: fine
        ([([0, 50, 50], None)], "diary.metrics.order", 3),
        ([([0, 50], {"steps": 1})], "diary.run_end.checks", 2),
    ],
    ids=[
        "5-rows-2-checks",
        "no-row-2-checks",
        "second-session-3-rows-2-checks",
        "more-rows-than-checks-with-an-error",
        "step-down",
        "step-twice",
        "second-session-step-down",
        "crashed-session-in-order",
        "crashed-session-step-twice",
        "checks-over-steps",
    ],
)
def test_metrics_rows_against_the_run_ends(
    tmp_path: Path, sessions: list[Any], rule: str | None, where: int | None
) -> None:
    """diary.metrics.rows, diary.metrics.order (on the metrics row), diary.run_end.checks."""
    run = tmp_path / "run"
    _record(run, sessions, validate=rule != "diary.run_end.checks")
    if rule is None:
        assert verify(run).ok, verify(run).summary()
        return
    result = verify(run)
    assert result.failure is not None and result.failure.rule == rule, result.summary()
    assert result.failure.line == where, result.summary()
    expected_file = "metrics.jsonl" if rule == "diary.metrics.order" else "diary.jsonl"
    assert result.failure.file == expected_file


@pytest.mark.parametrize(
    "sessions",
    [
        [([0, 50], {"checks": 3, "error": {"type": "OSError", "message": "disk full"}})],
        [([0, 50, 100], None), ([50, 100], {"checks": 1})],  # a crash: no count holds
        [([0, 50, 100], {}), ([50, 100], {})],  # resumed from an older checkpoint
        [([0, 50], {}), ([], {"steps": 0}), ([100], {"steps": 3})],
    ],
    ids=["fewer-rows-with-an-error", "after-a-crash", "steps-again", "an-empty-session"],
)
def test_what_sessions_may_do_verifies(tmp_path: Path, sessions: list[Any]) -> None:
    """Not refused: a run_end naming an error with rows missing, any rows where a crashed
    session lies before the run_end, steps repeated across sessions, a session with none."""
    run = tmp_path / "run"
    _record(run, sessions)
    assert verify(run).ok, verify(run).summary()


def test_a_monitor_resumed_from_an_older_checkpoint_and_after_a_crash_verifies(
    tmp_path: Path,
) -> None:
    """Real runs: a session, a second resumed from step 4 (steps 4 and 8 checked again), a
    third killed before close (no run_end), a fourth resumed: every rule holds."""
    import os
    import signal
    import subprocess
    import sys
    import textwrap

    import torch

    from tests.monitor.conftest import TinyMLP, train
    from trainrecord.monitor import Monitor

    run = tmp_path / "run"
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with Monitor(model, optimizer, run, check_every=4) as monitor:
        train(model, optimizer, monitor, 10)
    with Monitor(model, optimizer, run, check_every=4, start_step=4) as monitor:
        train(model, optimizer, monitor, 7)
    crash = textwrap.dedent(
        f"""
        import os, signal, torch
        from tests.monitor.conftest import TinyMLP, train
        from trainrecord.monitor import Monitor
        model = TinyMLP()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        monitor = Monitor(model, optimizer, {str(run)!r}, check_every=4, start_step=11)
        train(model, optimizer, monitor, 6)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run([sys.executable, "-c", crash], env=env, cwd=root, timeout=120, check=False)
    assert out.returncode == -signal.SIGKILL
    with Monitor(model, optimizer, run, check_every=4, start_step=12) as monitor:
        train(model, optimizer, monitor, 5)
    result = verify(run)
    assert result.ok, result.summary()
    rows = [json.loads(x)["step"] for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows == [0, 4, 8, 4, 8, 12, 16, 12, 16]


# F7: record.json fields a reader does not know are ignored; the known ones stay strict.
def _seal_with(run: Path, edit: Any) -> None:
    seal = json.loads((run / "record.json").read_text(encoding="utf-8"))
    edit(seal)
    (run / "record.json").write_text(json.dumps(seal, indent=2, sort_keys=True) + "\n")


def _unknown_fields(seal: dict[str, Any]) -> None:
    seal["comment"] = "sealed after review"
    seal["diary"]["note"] = "x"
    seal["metrics"]["compression"] = None
    if seal["signature"] is not None:
        seal["signature"]["key_id"] = "k1"


def test_a_seal_with_fields_this_version_does_not_know_verifies_and_shows(
    tmp_path: Path,
) -> None:
    """The seed: "Readers should ignore fields they do not know" (record.json carries
    record_version itself): verify, show and a reseal take them."""
    from tests.diary.helpers import cli

    run = tmp_path / "run"
    write_run(run)
    _seal_with(run, _unknown_fields)
    result = verify(run)
    assert result.ok and result.sealed, result.summary()
    shown = cli("show", run)
    assert shown.returncode == 0 and "integrity: OK" in shown.stdout, shown.stdout + shown.stderr
    assert cli("seal", run).returncode == 0
    assert "comment" not in json.loads((run / "record.json").read_text())  # this version's own
    assert verify(run).ok


@pytest.mark.parametrize(
    ("edit", "rule"),
    [
        (lambda s: s.update(record_version=2), "seal.record_version.unsupported"),
        (lambda s: s["diary"].update(lines="3"), "seal.diary.count"),
        (lambda s: s["diary"].pop("head_hash"), "seal.diary.fields"),
        (lambda s: s["metrics"].pop("rows"), "seal.metrics.fields"),
        (lambda s: s.update(sealed_at=None), "seal.sealed_at.type"),
    ],
    ids=["record_version", "lines-a-string", "no-head_hash", "no-rows", "sealed_at-null"],
)
def test_the_fields_a_seal_names_stay_strict_beside_unknown_ones(
    tmp_path: Path, edit: Any, rule: str
) -> None:
    run = tmp_path / "run"
    write_run(run)

    def both(seal: dict[str, Any]) -> None:
        _unknown_fields(seal)
        edit(seal)

    _seal_with(run, both)
    result = verify(run)
    assert result.failure is not None and result.failure.rule == rule, result.summary()


def test_a_field_added_to_a_signed_seal_breaks_its_signature(tmp_path: Path) -> None:
    """Nothing unsigned slips in: record.sig signs record.json's exact bytes."""
    from trainrecord.diary import generate_keypair

    private, public, _ = generate_keypair(tmp_path / "key")
    run = tmp_path / "run"
    write_run(run, signing_key=private)
    assert verify(run, public_key=public).signature == "valid"
    _seal_with(run, _unknown_fields)
    result = verify(run, public_key=public)
    assert result.failure is not None and result.failure.rule == "seal.signature.invalid"


# F9: the file's bytes: a BOM and blank lines are refused, CRLF line ends are taken.
BYTES = [
    ("a BOM before the first line", lambda d: b"\xef\xbb\xbf" + d, "diary.file.json", 1),
    ("a blank line between two", lambda d: d.replace(b"\n", b"\n\n", 1), "diary.file.json", 2),
    ("a blank line after the last", lambda d: d + b"\n", "diary.file.json", None),
    ("CRLF line ends", lambda d: d.replace(b"\n", b"\r\n"), None, None),
]


@pytest.mark.parametrize(("what", "change", "rule", "line"), BYTES, ids=[b[0] for b in BYTES])
def test_the_diary_files_bytes(
    tmp_path: Path, what: str, change: Any, rule: str, line: int
) -> None:
    """spec/README.md, "File bytes": UTF-8, one JSON object per line, nothing else on a
    line but JSON's white space (a CR before the LF is white space)."""
    run = tmp_path / "run"
    write_run(run, seal=False)
    path = run / "diary.jsonl"
    data = path.read_bytes()
    path.write_bytes(change(data))
    result = verify(run)
    if rule is None:
        assert result.ok and result.lines == data.count(b"\n"), result.summary()
        return
    assert result.status == "failed" and result.failure is not None, result.summary()
    assert result.failure.rule == rule, result.summary()
    expected = data.count(b"\n") + 1 if line is None else line
    assert result.failure.line == expected, result.summary()


def test_a_blank_metrics_row_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_run(run, seal=False)
    path = run / "metrics.jsonl"
    path.write_bytes(path.read_bytes() + b"\n")
    result = verify(run)
    assert result.failure is not None and result.failure.rule == "diary.metrics.json"
    assert (result.failure.file, result.failure.line) == ("metrics.jsonl", 2)
