"""The commands that read a record, on records of another shape than the spec's: one test
per crash (or refusal that named no line) that a sweep of the commands on hostile records
found, each failing before its fix; a few through a real ``python -m trainrecord.cli``
process. Each command runs in this process (``trainrecord.cli.main``) unless said: no
exception may escape it, nothing it prints may say ``Traceback``, and its exit status is
one its ``--help`` documents.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.diary.helpers import cli, write_run
from trainrecord.cli import main

PLOT = importlib.util.find_spec("matplotlib") is not None
"""Whether plot can run here (the ``plot`` extra); the other commands are checked anyway."""
needs_plot = pytest.mark.skipif(not PLOT, reason="trainrecord plot needs matplotlib")

STATUS = {
    "verify": {0, 1, 2, 3},
    "show": {0, 1, 2, 3},
    "plot": {0, 2},
    "validate": {0, 1, 2},
    "seal": {0, 2},
}
"""The exit statuses each command documents (``trainrecord COMMAND --help``)."""

PNG_START, PNG_END = b"\x89PNG\r\n\x1a\n", b"IEND\xaeB`\x82"


def replace_line(path: Path, number: int, text: bytes) -> None:
    lines = path.read_bytes().splitlines()
    lines[number - 1] = text
    path.write_bytes(b"".join(line + b"\n" for line in lines))


# --------------------------------------------------------------------------- commands


@dataclass
class Outcome:
    status: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def trainrecord(*args: str | Path) -> Outcome:
    """``trainrecord ARGS`` in this process: what it printed and its exit status. An
    exception that escapes fails the test with its traceback."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in args])
    done = Outcome(status, out.getvalue(), err.getvalue())
    assert "Traceback" not in done.text, done.text[-3000:]
    assert status in STATUS[str(args[0])], (args, status, done.text[-3000:])
    return done


# --------------------------------------------------------------------------- regressions


@pytest.fixture
def record(tmp_path: Path) -> Path:
    """A complete sealed record (every event type once, one metrics row)."""
    run = tmp_path / "run"
    write_run(run)
    return run


def number_of(run: Path, event: str) -> int:
    """The number (from 1) of the first diary line of ``event``."""
    lines = (run / "diary.jsonl").read_text(encoding="utf-8").splitlines()
    return next(n for n, x in enumerate(lines, 1) if json.loads(x)["event"] == event)


def edit(run: Path, name: str, number: int, change: Any) -> None:
    """Line ``number`` of ``name`` with ``change`` applied to it (a dict, changed in place),
    written back as JSON (the chain is left as it is: verify fails there)."""
    path = run / name
    lines = path.read_text(encoding="utf-8").splitlines()
    line = json.loads(lines[number - 1])
    change(line)
    lines[number - 1] = json.dumps(line)
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")


@needs_plot
def test_plot_refuses_a_diary_line_that_is_a_json_string(record: Path) -> None:
    # was: AttributeError: 'str' object has no attribute 'get', from plot.py
    replace_line(record / "diary.jsonl", 3, b'"hello"')
    image = record.parent / "plot.png"
    done = cli("plot", record, "-o", image)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stderr.startswith(
        f"trainrecord plot: the record is not readable: {record}/diary.jsonl: "
        "[diary.line.type] line 3: 'hello' is not of type 'object'"
    ), done.stderr
    assert f"trainrecord verify {record} checks the whole record" in done.stderr
    assert not image.exists()


def _set(key: str, value: Any) -> Any:
    return lambda line: line.__setitem__(key, value)


def _stuck(value: Any) -> Any:
    return lambda row: row.__setitem__("stuck", {"conv1.0": value})


PLOT_REFUSALS = {
    # name: (file, event or None for metrics row 1, change or raw text, what the refusal says)
    "metrics-row-a-number": ("metrics.jsonl", None, b"3", "[diary_metrics.row.type] line 1:"),
    "metrics-row-null": ("metrics.jsonl", None, b"null", "[diary_metrics.row.type] line 1:"),
    "grad-a-list": (
        "metrics.jsonl",
        None,
        _set("grad", ["conv1.0"]),
        "[diary_metrics.grad.type] line 1.grad:",
    ),
    "grad-a-number": ("metrics.jsonl", None, _set("grad", 3), "[diary_metrics.grad.type]"),
    "stuck-a-boolean": ("metrics.jsonl", None, _set("stuck", True), "[diary_metrics.stuck.type]"),
    "stuck-counts-strings": (
        "metrics.jsonl",
        None,
        _stuck(["0", "1", "0", "0"]),
        "[diary_metrics.stuck.count] line 1.stuck.conv1.0[0]:",
    ),
    "stuck-counts-a-number": ("metrics.jsonl", None, _stuck(4), "[diary_metrics.stuck.shape]"),
    "step-missing": (
        "metrics.jsonl",
        None,
        lambda row: row.pop("step"),
        "[diary_metrics.fields.missing] line 1.step:",
    ),
    "step-10**400": (
        "metrics.jsonl",
        None,
        _set("step", 10**400),
        "line 1.step: an integer of about 400 digits is too large to plot (past a 64-bit float)",
    ),
    "stuck-count-10**400": (
        "metrics.jsonl",
        None,
        _stuck([10**400, 0, 0, 0]),
        "line 1.stuck.conv1.0: an integer of about 400 digits is too large to plot",
    ),
    "alarm-line-a-number": ("diary.jsonl", "alarm", b"4", "[diary.line.type] line 4:"),
    "alarm-without-step": (
        "diary.jsonl",
        "alarm",
        lambda line: line.pop("step"),
        "[diary.alarm.fields.missing] line 4.step:",
    ),
    "alarm-step-10**400": (
        "diary.jsonl",
        "alarm",
        _set("step", 10**400),
        "line 4.step: an integer of about 400 digits is too large to plot",
    ),
    "repair-step-an-object": (
        "diary.jsonl",
        "repair",
        _set("step", {"at": 12}),
        "[diary.step.type] line 12.step:",
    ),
    "metrics-row-not-json": ("metrics.jsonl", None, b'{"step": ', "[diary.metrics.json] line 1:"),
    "diary-line-not-utf8": ("diary.jsonl", "alarm", b'{"a": "\xc3"}', "[diary.file.json] line 4:"),
}
"""Lines plot could not draw, each of which crashed it (a TypeError, AttributeError,
KeyError or OverflowError from plot.py or matplotlib), or, for the last two, was refused
without naming the file or the line (``the record is not readable (Expecting value: line 1
column 11 (char 10))``: that line 1 is the JSON text's)."""


@pytest.mark.parametrize("case", list(PLOT_REFUSALS))
@needs_plot
def test_plot_refuses_a_line_it_cannot_draw_naming_file_line_and_rule(
    record: Path, case: str
) -> None:
    name, event, change, said = PLOT_REFUSALS[case]
    number = 1 if event is None else number_of(record, event)
    if isinstance(change, bytes):
        replace_line(record / name, number, change)
    else:
        edit(record, name, number, change)
    image = record.parent / "images" / "plot.png"
    done = trainrecord("plot", record, "-o", image)
    assert done.status == 2, done.text
    assert done.err.startswith(f"trainrecord plot: the record is not readable: {record / name}: ")
    assert said in done.err, done.err
    assert not image.parent.exists()


SHOWN_ANYWAY = {
    "event-a-list": ("alarm", _set("event", ["alarm"]), "['alarm'] 1"),
    "event-an-object": ("alarm", _set("event", {"alarm": 1}), "{'alarm': 1} 1"),
    "event-a-number": ("repair", _set("event", 5), "5 1"),
    "step-a-list": ("repair", _set("step", [12]), "repaired in conv2.0 (step [12])"),
    "run-start-layers-a-number": ("run_start", _set("layers", 7), "  layers (0): "),
    "run-start-layers-an-object": ("run_start", _set("layers", {"conv1.0": 1}), "  layers (0): "),
    "channels-cleared-with-a-level": (
        "channels_cleared",
        _set("level", "suspect"),
        "  conv2.0: suspect of 64",
    ),
}
"""Lines show summarized with a TypeError or IndexError (events counted by a list or a
number beside strings, a list for a step, a number or an object where the run_start's
list of layer names goes, a channels_cleared line with a stuck level as a layer's last)."""


@pytest.mark.parametrize("case", list(SHOWN_ANYWAY))
def test_show_summarizes_a_record_with_a_line_of_another_shape(record: Path, case: str) -> None:
    event, change, said = SHOWN_ANYWAY[case]
    number = number_of(record, event)
    edit(record, "diary.jsonl", number, change)
    if event == "run_start":  # the manifest's list of layers goes first
        edit(record, "diary.jsonl", number_of(record, "manifest"), lambda x: x.pop("layers"))
    shown = trainrecord("show", record)
    assert shown.status == 1, shown.text
    assert shown.out.startswith(f"integrity: FAILED: diary.jsonl line {number} ")
    assert said in shown.out, shown.out
    assert trainrecord("show", "--no-verify", record).status == 0


def test_verify_refuses_a_metrics_row_with_a_number_past_a_double(record: Path) -> None:
    # 1e400 parses as inf, which the canonical JSON writer refused with an uncaught
    # ValueError ('Out of range float values are not JSON compliant') out of verify
    replace_line(
        record / "metrics.jsonl", 1, b'{"step": 1e400, "loss": 1, "grad": {}, "stuck": {}}'
    )
    done = cli("verify", record)
    assert done.returncode == 1 and not done.stderr, done.stderr[-3000:]
    assert done.stdout.startswith(
        "FAILED: metrics.jsonl line 1: [diary_metrics.step.type] step: 1e400 is too large for a "
        "64-bit float"
    ), done.stdout
    assert trainrecord("show", record).out.startswith("integrity: FAILED: metrics.jsonl line 1")
    sealed = trainrecord("seal", record)
    assert sealed.status == 2 and "metrics.jsonl line 1: [diary_metrics.step.type]" in sealed.err


def test_seal_reads_a_record_json_nested_past_the_parsers_depth(record: Path) -> None:
    # seal's look for the signer of the seal it replaces raised RecursionError
    (record / "record.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    done = cli("seal", record)
    assert done.returncode == 0 and not done.stderr, done.stderr[-3000:]
    assert trainrecord("verify", record).status == 0


def test_validate_names_the_line_that_is_not_utf8_and_checks_the_others(record: Path) -> None:
    # was one problem at '(top level)' ('can't decode byte 0xc3 in position 82'), and no
    # other line checked
    path = record / "metrics.jsonl"
    with path.open("ab") as f:
        f.write(b'{"step": 1, "loss": "\xc3", "grad": {}, "stuck": {}}\n')
        f.write(b'{"step": "2", "loss": 1, "grad": {}, "stuck": {}}\n')
    done = trainrecord("validate", path)
    assert done.status == 1, done.text
    said = done.out.splitlines()
    assert len(said) == 2, said
    assert said[0].startswith(f"{path}: [diary.metrics.json] line 2: not strict JSON text")
    assert "can't decode byte 0xc3 in position 21" in said[0]
    assert said[1].startswith(f"{path}: [diary_metrics.step.type] line 3.step:")


@pytest.mark.parametrize("ext", ["svg", "pdf"])
@needs_plot
def test_plot_on_a_full_disk_leaves_no_image(record: Path, tiny_fs: Path, ext: str) -> None:
    # was: half an .svg (16 KiB of a larger file) left behind, an empty .pdf and a
    # traceback from matplotlib's PDF backend (AttributeError: 'Stream' object has no
    # attribute 'pos', raised while it handled ENOSPC)
    (tiny_fs / "filler").write_bytes(b"x" * (12 << 10))  # 4 KiB left: no image fits
    image = tiny_fs / f"plot.{ext}"
    done = cli("plot", record, "-o", image)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stderr == (
        "trainrecord plot: cannot write the plot (No space left on device); nothing was "
        f"written: {image}\n"
    )
    assert [p.name for p in tiny_fs.iterdir()] == ["filler"]


@needs_plot
def test_plot_draws_a_record_whose_other_fields_break_the_schema(record: Path) -> None:
    # plot refuses only what it reads and cannot draw: an alarm's other fields are not its
    # to judge, and a loss or gradient norm that is no number is no point (as a NaN is)
    edit(record, "diary.jsonl", number_of(record, "alarm"), lambda x: x.pop("severity"))
    edit(record, "metrics.jsonl", 1, _set("grad", {"conv1.0": "much", "conv2.0": [1]}))
    edit(record, "metrics.jsonl", 1, _set("loss", {"value": 2.3}))
    image = record.parent / "plot.png"
    done = trainrecord("plot", record, "-o", image)
    assert done.status == 0 and not done.err, done.text
    assert image.read_bytes().startswith(PNG_START)
