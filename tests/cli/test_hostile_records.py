"""Hostile records: the commands that read a record, on a real one damaged.

The records are made once per module by the runtime's own writers (DiaryWriter,
MetricsWriter and the seal; write_witness and write_metrics for the Foundry ones).
Hypothesis damages a copy per example, one line or file at a time, in ways that stay JSON
and UTF-8 (a line that is a string, a number, an array, null, an empty or nested object; a
field of another type: a string for a number, a list for an object, an object for a list
of layer names; 10**400, 1e400, -0, -0.0; a missing field; a duplicate key) and in ways
that do not (a line that is not JSON, or not UTF-8). A damaged diary is re-chained as a
forger would, half the time, so that verify and show read past the hash chain into the
fields. Each command then runs in this process (``trainrecord.cli.main``) and must keep
what the commands promise of bad input:

* no exception escapes, and nothing it prints says ``Traceback``;
* its exit status is one its ``--help`` documents;
* ``plot -o`` leaves a whole image or no file at all;
* a refusal names the file, and for a JSON-lines file the line.

Below the properties, one plain test per crash the sweep found (each failed before its
fix), a few of them through a real ``python -m trainrecord.cli`` process.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.diary.helpers import cli, write_run
from trainrecord.canonical import GENESIS, line_hash
from trainrecord.cli import main
from trainrecord.foundry import write_metrics, write_witness
from trainrecord_conformance.strategies import json_values, tricky_floats, tricky_strings

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

# --------------------------------------------------------------------------- strategies

SPELLINGS = (
    str(10**400),
    "-" + str(10**400),
    "1e400",
    "-1e400",
    "1E-400",
    "-0",
    "-0.0",
    "9007199254740993",
    "{}",
    "[]",
    "[[]]",
    '{"nested": {"deeper": {}}}',
    '["conv1.0", "conv2.0"]',
    '{"conv1.0": "conv2.0"}',
    '{"a": 1, "a": 2}',
    '""',
    "null",
    "true",
)
"""JSON text of values no writer of trainrecord spells so: integers and floats past a
64-bit float, negative zeros, empty and nested containers, a list or an object where the
other goes, a duplicate key."""

NOT_JSON = (b"", b" ", b"{", b'{"event": ', b"NaN", b"-Infinity", b"[1,]", b"{'a': 1}", b"[" * 3000)
"""Lines that are no JSON text (an empty line, a cut one, Python's spelling, nesting past
the parser's depth)."""

NOT_UTF8 = (b"\xff\xfe{}", b'{"event": "\xc3"}', b'{"a": "\xc0\xaf"}', b'"\xed\xa0\x80"')
"""Lines that are no UTF-8 (an invalid start byte, a cut sequence, an overlong form, an
encoded surrogate)."""


def fragments() -> st.SearchStrategy[str]:
    """JSON text of one value: a hostile spelling or any JSON value, string or float."""
    return st.one_of(
        st.sampled_from(SPELLINGS),
        json_values(4).map(json.dumps),
        tricky_strings().map(json.dumps),
        tricky_floats().map(json.dumps),
    )


def spots(doc: Any, at: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """The path of every value inside ``doc`` (not ``doc`` itself)."""
    inner: list[tuple[str | int, ...]] = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            inner += [(*at, key), *spots(value, (*at, key))]
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            inner += [(*at, i), *spots(value, (*at, i))]
    return inner


_SPLICE = "@@splice@@"


def splice(doc: Any, at: tuple[str | int, ...], fragment: str | None) -> bytes:
    """``doc`` as JSON text with the value at ``at`` spelled ``fragment``, or removed
    (``None``: a missing field, or a shorter list)."""
    copy = json.loads(json.dumps(doc))
    parent = copy
    for part in at[:-1]:
        parent = parent[part]
    if fragment is None:
        del parent[at[-1]]
        return json.dumps(copy).encode()
    parent[at[-1]] = _SPLICE
    return json.dumps(copy).replace(json.dumps(_SPLICE), fragment, 1).encode()


def twice(doc: dict[str, Any], name: str, fragment: str) -> bytes:
    """``doc`` as JSON text with ``name`` written again at its end, valued ``fragment``."""
    return (json.dumps(doc)[:-1] + f", {json.dumps(name)}: {fragment}}}").encode()


def damaged(doc: Any) -> st.SearchStrategy[bytes]:
    """The text of ``doc`` (a line, or a file of one document) damaged once."""
    ways = [
        st.tuples(st.sampled_from(spots(doc)), fragments()).map(lambda d: splice(doc, *d)),
        st.sampled_from(spots(doc)).map(lambda at: splice(doc, at, None)),
        fragments().map(str.encode),  # the whole line another value
        st.sampled_from(NOT_JSON),
        st.sampled_from(NOT_UTF8),
    ]
    if isinstance(doc, dict):  # a name twice
        ways.append(
            st.tuples(st.sampled_from(sorted(doc)), fragments()).map(lambda d: twice(doc, *d))
        )
    return st.one_of(ways)


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Pristine:
    """The records every example damages a copy of."""

    root: Path
    run: Path
    foundry: Path

    def lines(self, name: str) -> list[Any]:
        return [json.loads(x) for x in (self.run / name).read_bytes().splitlines()]

    def document(self, path: Path) -> Any:
        return json.loads(path.read_bytes())


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Pristine:
    root = tmp_path_factory.mktemp("hostile")
    run = root / "run"
    write_run(run, repeat=2)  # diary (every event type), metrics (2 rows), seal
    foundry = root / "foundry"
    write_witness(
        foundry, config={"lr": 0.1}, device="cpu", wall_seconds=12, env={"FOUNDRY_RUN_ID": "42"}
    )
    row = {"benchmark": "ETTh1", "metric": "mse", "horizon": 96, "seed": 0, "value": 0.38}
    write_metrics(foundry, [row, {**row, "metric": "mae", "value": 0.41}])
    return Pristine(root, run, foundry)


@contextlib.contextmanager
def copy_of(folder: Path) -> Iterator[Path]:
    """A fresh copy of ``folder`` for one example, removed after it."""
    with tempfile.TemporaryDirectory(dir=folder.parent) as where:
        copy = Path(where) / folder.name
        shutil.copytree(folder, copy)
        yield copy


def replace_line(path: Path, number: int, text: bytes) -> None:
    lines = path.read_bytes().splitlines()
    lines[number - 1] = text
    path.write_bytes(b"".join(line + b"\n" for line in lines))


def rechain(diary: Path) -> None:
    """What a forger does after changing a line: every line's prev and hash made anew from
    the genesis, in the text as it is (a line that cannot be read is left alone)."""
    prev, out = GENESIS, []
    for raw in diary.read_bytes().splitlines():
        try:
            line = json.loads(raw)
            old = (line["prev"], line["hash"])
            body = {k: v for k, v in line.items() if k not in ("prev", "hash")}
            new = line_hash(prev, body)
            assert all(isinstance(x, str) and len(x) == 64 for x in old)
        except (ValueError, TypeError, KeyError, AssertionError, RecursionError):
            out.append(raw)
            continue
        out.append(
            raw.replace(old[0].encode(), prev.encode()).replace(old[1].encode(), new.encode())
        )
        prev = new
    diary.write_bytes(b"".join(line + b"\n" for line in out))


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


def names_line(text: str, name: str, number: int | None) -> bool:
    """Whether ``text`` names the file ``name`` and, for a JSON-lines file, line ``number``."""
    if name not in text:
        return False
    return number is None or re.search(rf"\bline {number}\b", text) is not None


FAILED_AT = re.compile(r"(diary\.jsonl|metrics\.jsonl) line [1-9]\d*\b|record\.json|record\.sig")
"""How verify's verdict names where the record fails."""


def check_verdicts(run: Path) -> None:
    """verify and show: a failure names its file (and line, in a JSON-lines file)."""
    verdict = trainrecord("verify", run)
    as_json = json.loads(trainrecord("verify", "--json", run).out)
    assert verdict.status == {"ok": 0, "failed": 1, "torn": 3}[as_json["status"]]
    if verdict.status == 1:
        assert FAILED_AT.search(verdict.out), verdict.out
        failure = as_json["failure"]
        if failure["file"].endswith(".jsonl") and failure["rule"] != "diary.file.empty":
            assert failure["line"] >= 1, failure
    shown = trainrecord("show", run)
    assert shown.status == verdict.status, (shown.text[-2000:], verdict.text)
    if shown.status == 1:
        first = shown.out.splitlines()[0]
        assert first.startswith("integrity: FAILED: ") and FAILED_AT.search(first), first


def check_reading(run: Path, name: str, number: int | None) -> None:
    """show --no-verify, validate and plot on a record whose file ``name`` is damaged at
    line ``number`` (None: a file of one document): each refusal names it."""
    if name == "diary.jsonl":
        unverified = trainrecord("show", "--no-verify", run)
        assert unverified.status in (0, 2)
        if unverified.status == 2:
            assert names_line(unverified.err, name, number), unverified.err
    validated = trainrecord("validate", run / name)
    if validated.status == 1:
        for said in validated.out.splitlines():
            assert said.startswith(f"{run / name}: ["), said
            assert number is None or f"] line {number}" in said, said
    assert validated.status != 2, validated.text  # the name tells the format
    if name == "record.json" or not PLOT:
        return  # plot reads no seal (and needs the plot extra)
    image = run.parent / "images" / "plot.png"
    image.parent.mkdir()
    plotted = trainrecord("plot", run, "-o", image)
    if plotted.status == 0:
        data = image.read_bytes()
        assert data.startswith(PNG_START) and data.endswith(PNG_END)
    else:
        assert not any(image.parent.iterdir()), list(image.parent.iterdir())  # nothing half-made
        assert names_line(plotted.err, name, number), plotted.err


def check_seal(run: Path) -> None:
    """seal last (it writes record.json): a refusal names the file that fails."""
    sealed = trainrecord("seal", run)
    if sealed.status == 2:
        assert FAILED_AT.search(sealed.err), sealed.err


# --------------------------------------------------------------------------- properties


@given(data=st.data())
def test_each_command_on_a_diary_with_a_damaged_line(pristine: Pristine, data: Any) -> None:
    lines = pristine.lines("diary.jsonl")
    number = data.draw(st.integers(1, len(lines)), label="line")
    text = data.draw(damaged(lines[number - 1]), label="text")
    forged = data.draw(st.booleans(), label="rechained")
    with copy_of(pristine.run) as run:
        replace_line(run / "diary.jsonl", number, text)
        if forged:
            rechain(run / "diary.jsonl")
        check_verdicts(run)
        check_reading(run, "diary.jsonl", number)
        check_seal(run)


@given(data=st.data())
def test_each_command_on_a_record_with_a_damaged_metrics_row(pristine: Pristine, data: Any) -> None:
    rows = pristine.lines("metrics.jsonl")
    number = data.draw(st.integers(1, len(rows)), label="row")
    text = data.draw(damaged(rows[number - 1]), label="text")
    with copy_of(pristine.run) as run:
        replace_line(run / "metrics.jsonl", number, text)
        check_verdicts(run)
        check_reading(run, "metrics.jsonl", number)
        check_seal(run)


@given(data=st.data())
def test_each_command_on_a_record_with_a_damaged_seal(pristine: Pristine, data: Any) -> None:
    text = data.draw(damaged(pristine.document(pristine.run / "record.json")), label="text")
    with copy_of(pristine.run) as run:
        (run / "record.json").write_bytes(text)
        check_verdicts(run)
        check_reading(run, "record.json", None)
        check_seal(run)


@given(data=st.data())
def test_validate_on_a_damaged_foundry_record(pristine: Pristine, data: Any) -> None:
    name = data.draw(st.sampled_from(["observed.attempt0.json", "metrics.json"]), label="file")
    text = data.draw(damaged(pristine.document(pristine.foundry / name)), label="text")
    with copy_of(pristine.foundry) as folder:
        (folder / name).write_bytes(text)
        validated = trainrecord("validate", folder / name)
        assert validated.status != 2, validated.text
        if validated.status == 1:
            for said in validated.out.splitlines():
                assert said.startswith(f"{folder / name}: ["), said
        report = trainrecord("validate", "--json", folder)
        files = {Path(f["path"]).name: f for f in json.loads(report.out)["files"]}
        assert files[name]["valid"] == (validated.status == 0)
        for command in ("verify", "show"):  # no diary here: the usage error names the records
            refused = trainrecord(command, folder)
            assert refused.status == 2 and "holds Foundry run records" in refused.err


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
        "[diary.file.json] line 3: the line is not a JSON object (got 'hello')"
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
    "alarm-line-a-number": (
        "diary.jsonl",
        "alarm",
        b"4",
        "[diary.file.json] line 4: the line is not a JSON object (got 4)",
    ),
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
    "metrics-row-not-json": (
        "metrics.jsonl",
        None,
        b'{"step": ',
        "[diary.metrics.json] line 1: not strict JSON text (RFC 8259, UTF-8, no NaN or "
        "Infinity): expecting value at column 10; rewrite it with a JSON writer;",
    ),
    "diary-line-not-utf8": ("diary.jsonl", "alarm", b'{"a": "\xc3"}', "[diary.file.json] line 4:"),
}
"""Lines plot could not draw, each of which crashed it (a TypeError, AttributeError,
KeyError or OverflowError from plot.py or matplotlib), or, for the last two, was refused
without naming the file or the line (``the record is not readable (Expecting value: line 1
column 11 (char 10))``: that line 1 is the JSON text's; now ``line 1: ... expecting value at
column 10``)."""


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
