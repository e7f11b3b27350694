"""``trainrecord show`` on real records (the demo, trained here) reads root cause first.

A newcomer probe (item 28): on the demo record the root cause (two blocks' channels proven
dead) came after six symptom alarms (every layer before them lost its gradient at the same
step), each certificate was one ~350-character sentence and a ~500-character ``assumes:``
line, and "no ReLU after 1 producer (flat and decayed channels only; no silent ones, no
certificates): classifier" was cryptic."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.diary.helpers import BODIES, cli, rechain, write_run
from trainrecord.commands.show import findings, loss_line
from trainrecord.diary.read import summarize
from trainrecord.monitor.demo import run_demo

LAYERS = "conv1.0, conv1.1, conv2.0, conv2.1, conv3.0, conv3.1"


def _demo(root: Path, *args: str) -> tuple[Path, list[dict[str, Any]], str]:
    """A small demo trained for real (the layers broken at step 200): its folder, its diary
    lines and what show prints of it."""
    out = cli("demo", "--tiny", *args, "--out", root)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [json.loads(x) for x in (root / "diary.jsonl").read_text().splitlines()]
    shown = cli("show", root)
    assert shown.returncode == 0, shown.stderr
    return root, lines, shown.stdout


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]], str]:
    return _demo(tmp_path_factory.mktemp("show") / "demo")


@pytest.fixture(scope="module")
def repaired(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]], str]:
    return _demo(tmp_path_factory.mktemp("show") / "demo", "--repair")


def _of(lines: list[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    return [x for x in lines if x["event"] == event]


def _block(text: str, start: str) -> list[str]:
    """The line of ``text`` that starts with ``start`` and the indented ones after it."""
    lines = text.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith(start))
    end = next((i for i in range(at + 1, len(lines)) if not lines[i].startswith("  ")), None)
    return lines[at:end]


def _joined(lines: list[str]) -> str:
    """Wrapped lines as the one line they were."""
    return " ".join(x.strip() for x in lines)


def test_the_findings_headline_follows_the_integrity_line_and_names_the_root_cause_first(
    demo: tuple[Path, list[dict[str, Any]], str],
) -> None:
    _, lines, text = demo
    assert text.splitlines()[0].startswith("integrity: OK: ")
    assert text.splitlines()[1].startswith("findings: ")
    headline = _block(text, "findings: ")
    assert len(headline) <= 2 and all(len(x) <= 100 for x in headline), headline
    certificates = _of(lines, "certificate")
    dead = sum(c["count"] for c in certificates)
    [step] = {c["step"] for c in certificates}
    [spike] = _of(lines, "loss_spike")
    assert _joined(headline) == (
        f"findings: {dead} channels proven dead in conv2.0, conv3.0 (step {step}); 10 flat "
        f"channels in classifier; 6 layers lost their gradient at step {step} (open); a loss "
        f"spike at step {spike['step']}"
    )


def test_the_headline_says_what_was_repaired_and_cleared(
    repaired: tuple[Path, list[dict[str, Any]], str],
) -> None:
    _, lines, text = repaired
    headline = _joined(_block(text, "findings: "))
    [step] = {c["step"] for c in _of(lines, "repair")}
    assert f"conv2.0, conv3.0 (step {step}), repaired (step {step}); " in headline
    assert f"6 layers lost their gradient at step {step} (cleared)" in headline
    recovered = _of(lines, "loss_recovered")
    if recovered:
        assert f", recovered at step {recovered[-1]['step']}" in headline


def test_a_quiet_record_has_no_findings(tmp_path: Path) -> None:
    run_demo(tmp_path, steps=200, break_at=10**9, check_every=5, width=8, samples=1024, seed=1)
    out = cli("show", tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1] == "findings: none"


def test_alarms_opening_at_the_same_step_with_the_same_diagnosis_share_one_line(
    demo: tuple[Path, list[dict[str, Any]], str],
    repaired: tuple[Path, list[dict[str, Any]], str],
) -> None:
    _, lines, text = demo
    [step] = {a["step"] for a in _of(lines, "alarm")}
    assert _block(text, "alarms (6):")[1:] == [
        f"  no_gradient at step {step} (open) in 6 layers: {LAYERS}"
    ]
    _, lines, text = repaired
    ends: dict[int, list[str]] = {}  # layers cleared at another step are another line
    for a in _of(lines, "alarm_cleared"):
        ends.setdefault(a["step"], []).append(a["layer"])
    expected = [
        f"  no_gradient at step {step}-{end} in {len(layers)} layers: {', '.join(layers)}"
        if len(layers) > 1
        else f"  {layers[0]}: no_gradient at step {step}-{end}"
        for end, layers in ends.items()
    ]
    assert sorted(_block(text, "alarms (6):")[1:]) == sorted(expected)


def test_a_certificate_is_wrapped_and_its_assumptions_listed_one_a_line(
    demo: tuple[Path, list[dict[str, Any]], str],
) -> None:
    _, lines, text = demo
    block = _block(text, "certificates (2):")
    assert all(len(x) <= 100 for x in block), [x for x in block if len(x) > 100]
    for c in _of(lines, "certificate"):
        head = f"  step {c['step']} {c['layer']}: {c['count']} channels dead"
        at = block.index(head)
        then = block.index("    assumes:", at)
        statement = block[at + 1 : then]
        assert all(x.startswith("    ") and not x.startswith("     ") for x in statement)
        assert _joined(statement) == c["statement"]
        items: list[list[str]] = []
        for x in block[then + 1 :]:
            if x.startswith("      - "):
                items.append([x[8:]])
            elif x.startswith("        ") and items:
                items[-1].append(x)
            else:
                break
        assert [_joined(i) for i in items] == c["assumes"]


def test_a_producer_no_relu_follows_is_said_in_words(
    demo: tuple[Path, list[dict[str, Any]], str],
) -> None:
    _, _, text = demo
    assert "no ReLU after" not in text
    assert _joined(_block(text, "  classifier: ")) == (
        "classifier: no ReLU takes its output (or a norm other than BatchNorm, or a different "
        "activation, comes first), so only flat and decayed channels are checked there (no "
        "silent ones, no certificates)"
    )


def test_wrapped_text_is_escaped_before_it_is_wrapped(tmp_path: Path) -> None:
    # a newline or ESC in a statement is shown as \n, \x1b, never taken for a break
    run = tmp_path / "run"
    write_run(run)
    odd = "x " * 60 + "line one\nline two\x1b[1A " + "y " * 60

    def edit(at: int, line: dict[str, Any]) -> None:
        if line["event"] == "certificate":
            line["statement"] = odd
            line["assumes"] = ["tab\there", "z " * 70]

    rechain(run, edit)
    (run / "record.json").unlink()
    (run / "record.sig").unlink(missing_ok=True)
    out = cli("show", run)
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout
    block = _block(out.stdout, "certificates (1):")
    assert all(len(x) <= 100 for x in block)
    assert "line one\\nline two\\x1b[1A" in out.stdout
    assert "      - tab\\there" in block


def test_show_and_plot_read_an_alarm_whose_grad_norm_is_null(tmp_path: Path) -> None:
    """diary.alarm.grad_norm.null: a layer left out of the forward pass until step 12 gets
    no gradient at all, and its no_gradient alarm has grad_norm null (as its metrics row);
    show and plot read such a record (a reader formatting the norm as a number would fail)."""
    pytest.importorskip("matplotlib")
    import torch

    from tests.monitor.conftest import train
    from tests.monitor.test_events import SkippedUntil
    from trainrecord.monitor import Monitor

    torch.manual_seed(0)
    model = SkippedUntil()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    run = tmp_path / "run"
    with Monitor(model, optimizer, run, check_every=2, warmup=3) as monitor:
        train(model, optimizer, monitor, 12)
        model.use = True
        train(model, optimizer, monitor, 6, seed=1)
    lines = [json.loads(x) for x in (run / "diary.jsonl").read_text().splitlines()]
    [alarm] = _of(lines, "alarm")
    assert alarm["layer"] == "middle" and alarm["grad_norm"] is None
    shown = cli("show", run)
    assert shown.returncode == 0, shown.stderr
    assert _block(shown.stdout, "alarms (1):")[1:] == ["  middle: no_gradient at step 6-12"]
    plotted = cli("plot", run, "--out", tmp_path / "plot.png")
    assert plotted.returncode == 0, plotted.stderr
    assert (tmp_path / "plot.png").stat().st_size > 0


def test_the_loss_line_gives_the_first_lowest_and_last_loss_of_the_checks(
    demo: tuple[Path, list[dict[str, Any]], str], tmp_path: Path
) -> None:
    # A user fine-tuning a model looked for the loss's course in show and found none,
    # although metrics.jsonl holds a loss per check.
    root, _, shown = demo
    rows = [json.loads(x) for x in (root / "metrics.jsonl").read_text().splitlines()]
    low = min(rows, key=lambda row: row["loss"])
    assert (
        f"loss at the checks: first {rows[0]['loss']:.4g} (step 0), lowest {low['loss']:.4g} "
        f"(step {low['step']}), last {rows[-1]['loss']:.4g} (step {rows[-1]['step']})\n"
    ) in shown
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "diary.jsonl").write_bytes((root / "diary.jsonl").read_bytes())
    rows[0]["loss"] = rows[-1]["loss"] = None  # a NaN loss, or none given: null in the row
    (copy / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = cli("show", "--no-verify", copy)
    assert out.returncode == 0, out.stderr
    assert f"loss at the checks: first {rows[1]['loss']:.4g} (step {rows[1]['step']})" in out.stdout
    assert "; 2 checks without a finite loss\n" in out.stdout


def test_the_loss_line_takes_the_rows_in_one_pass_and_stops_where_show_stops_reading(
    demo: tuple[Path, list[dict[str, Any]], str], tmp_path: Path
) -> None:
    # show held every row of metrics.jsonl in memory for the loss line (a long run's
    # file, read even with --no-verify, which is there for a huge record); the line is
    # now made in one pass over the rows, read one at a time.
    root, _, shown = demo
    rows = [json.loads(x) for x in (root / "metrics.jsonl").read_text().splitlines()]
    [line] = [x for x in shown.splitlines() if x.startswith("loss at the checks:")]
    assert loss_line(iter(rows)) == line
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "diary.jsonl").write_bytes((root / "diary.jsonl").read_bytes())
    before, after = rows[:3], rows[3:]
    (copy / "metrics.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in before)
        + "[]\n"  # not a JSON object: the rows after it are not read
        + "".join(json.dumps(row) + "\n" for row in after)
        + '{"step":'  # a torn last line
    )
    out = cli("show", "--no-verify", copy)
    assert out.returncode == 0, out.stderr
    assert loss_line(before) in out.stdout.splitlines()


def test_an_integer_loss_too_large_for_a_float_is_no_finite_loss_and_no_crash(
    demo: tuple[Path, list[dict[str, Any]], str], tmp_path: Path
) -> None:
    # math.isfinite(10**400) raises OverflowError: show stopped with a traceback on a
    # metrics.jsonl holding such a loss (JSON allows it), also under --no-verify.
    root, _, _ = demo
    rows = [json.loads(x) for x in (root / "metrics.jsonl").read_text().splitlines()]
    rows[-1]["loss"] = 10**400
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "diary.jsonl").write_bytes((root / "diary.jsonl").read_bytes())
    (copy / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    for args in (("--no-verify",), ()):
        out = cli("show", *args, copy)
        assert out.returncode in (0, 1) and "Traceback" not in out.stderr, out.stderr
        assert "; 1 check without a finite loss\n" in out.stdout


def test_plot_takes_a_gradient_norm_too_large_for_a_float_as_no_point(
    demo: tuple[Path, list[dict[str, Any]], str], tmp_path: Path
) -> None:
    # math.isfinite(10**400) raised OverflowError inside plot (a traceback) on a
    # metrics.jsonl holding such a norm (JSON allows it); it is left out, as a NaN is.
    pytest.importorskip("matplotlib")
    root, _, _ = demo
    rows = [json.loads(x) for x in (root / "metrics.jsonl").read_text().splitlines()]
    layer = next(iter(rows[3]["grad"]))
    rows[3]["grad"][layer] = 10**400
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "diary.jsonl").write_bytes((root / "diary.jsonl").read_bytes())
    (copy / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = cli("plot", copy, "--output", tmp_path / "plot.png")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert (tmp_path / "plot.png").stat().st_size > 0


def test_one_stuck_channel_is_said_in_the_singular() -> None:
    # "findings: 1 silent channels in conv2" before
    channels = {"event": "channels", **BODIES["channels"], "layer": "conv2", "level": "some"}
    one = {**channels, "n_certified": 0, "n_flat": 0, "n_observed": 1, "n_decayed": 0}
    assert "1 silent channel in conv2" in " ".join(findings(summarize([one])))
    two = {**one, "n_flat": 1}
    assert "1 flat, 1 silent channels in conv2" in " ".join(findings(summarize([two])))
