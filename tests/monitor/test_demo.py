"""The demo model: no false alarms when healthy; the demo command end to end (small)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.monitor.conftest import events, metrics, read_run
from trainrecord.cli import main
from trainrecord.monitor.demo import run_demo


@pytest.mark.parametrize(("width", "size", "seed"), [(16, 16, 0), (8, 16, 1), (8, 16, 2)])
def test_healthy_demo_model_writes_no_event(
    tmp_path: Path, width: int, size: int, seed: int
) -> None:
    result = run_demo(
        tmp_path,
        steps=200,
        break_at=10**9,
        check_every=5,
        width=width,
        size=size,
        samples=1024,
        seed=seed,
    )
    lines = read_run(tmp_path)
    assert [line["event"] for line in lines] == ["run_start", "structure", "manifest", "run_end"]
    assert result.accuracy_after > 0.5  # it did learn
    rows = metrics(tmp_path)
    assert len(rows) == 40 and all(sum(sum(v) for v in r["stuck"].values()) == 0 for r in rows)


def test_demo_command_watch_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "demo"
    assert main(["demo", "--tiny", "--steps", "60", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "[certificate] step 30: layer 'conv2.0'" in printed and "verify: OK" in printed
    assert (out / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = read_run(out)
    assert {c["layer"] for c in events(lines, "certificate")} == {"conv2.0", "conv3.0"}
    assert not events(lines, "repair")
    assert lines[0]["config"]["broken"] == ["conv2", "conv3"]


def test_demo_command_repair_replaces_the_previous_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "demo"
    assert main(["demo", "--tiny", "--steps", "60", "--out", str(out)]) == 0
    assert main(["demo", "--tiny", "--repair", "--steps", "60", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "[repair] step 30: layer 'conv2.0'" in printed
    lines = read_run(out)
    assert len(events(lines, "run_start")) == 1  # a fresh record, not a resumed one
    assert {r["layer"] for r in events(lines, "repair")} == {"conv2.0", "conv3.0"}
    assert {c["layer"] for c in events(lines, "channels_cleared")} >= {"conv2.0", "conv3.0"}
    rows = metrics(out)
    assert rows[-1]["grad"]["conv2.0"] > 0 and rows[-1]["stuck"]["conv2.0"] == [0, 0, 0, 0]


def test_demo_break_is_caught_and_repaired(tmp_path: Path) -> None:
    result = run_demo(
        tmp_path,
        repair=True,
        steps=200,
        break_at=100,
        check_every=5,
        width=8,
        size=16,
        samples=1024,
        seed=0,
    )
    lines = read_run(tmp_path)
    # the loss jumps at the break (step 100) and is still up at the next check: a spike then
    assert [(s["step"]) for s in events(lines, "loss_spike")] == [105]
    assert {(c["step"], c["layer"]) for c in events(lines, "certificate")} == {
        (100, "conv2.0"),
        (100, "conv3.0"),
    }
    assert {(r["step"], r["layer"]) for r in events(lines, "repair")} == {
        (100, "conv2.0"),
        (100, "conv3.0"),
    }
    assert {a["layer"] for a in events(lines, "alarm") if a["diagnosis"] == "no_gradient"} == {
        "conv1.0",
        "conv1.1",
        "conv2.0",
        "conv2.1",
        "conv3.0",
        "conv3.1",
    }
    recovered = events(lines, "loss_recovered")
    assert len(recovered) == 1 and recovered[0]["step"] > 100
    assert result.accuracy_after > 0.8 * result.accuracy_before
