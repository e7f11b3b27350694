"""``trainrecord show`` verifies first and heads its summary with the verdict (tamper probe
F7: a record failing ``diary.chain.hash`` was shown with its changed values and exit 0,
with no word of integrity), and shows odd text escaped instead of dying on it (F6: a lone
surrogate in ``model`` was a UnicodeEncodeError traceback). Real processes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.diary.helpers import cli, rechain, write_run


def _set(run: Path, number: int, key: str, value: Any) -> None:
    """Line ``number``'s ``key`` set to ``value``, the chain recomputed (a forger's edit)."""

    def edit(at: int, line: dict[str, Any]) -> None:
        if at == number:
            line[key] = value

    rechain(run, edit)


def _lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / "diary.jsonl").read_text().splitlines()]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    write_run(tmp_path / "run")
    return tmp_path / "run"


def _spike(run: Path) -> int:
    """The line number of the loss_spike line."""
    return next(i for i, x in enumerate(_lines(run), 1) if x["event"] == "loss_spike")


def test_an_intact_record_is_said_ok_first_as_verify_says_it(run: Path) -> None:
    out = cli("show", run)
    assert out.returncode == 0, out.stderr
    verdict = cli("verify", run).stdout.splitlines()[0]
    assert verdict.startswith("OK: ")
    assert out.stdout.splitlines()[0] == f"integrity: {verdict}"
    lines = out.stdout.splitlines()
    assert lines[1].startswith("findings: ")  # the headline, then the run
    assert next(x for x in lines[2:] if not x.startswith("  ")).startswith("run 'exp1': ")
    assert "NOT TRUSTWORTHY" not in out.stdout


def test_a_changed_value_fails_and_the_values_from_its_line_on_are_not_trusted(
    run: Path,
) -> None:
    # The probe (A07): verify failed with diary.chain.hash, show printed the new value, rc 0
    at = _spike(run)
    text = (run / "diary.jsonl").read_text().splitlines(keepends=True)
    text[at - 1] = text[at - 1].replace('"value":9.5', '"value":0.1')
    (run / "diary.jsonl").write_text("".join(text))
    out = cli("show", run)
    assert out.returncode == 1 == cli("verify", run).returncode, out.stderr
    first, second = out.stdout.splitlines()[:2]
    assert first.startswith(f"integrity: FAILED: diary.jsonl line {at} (seq {at - 1}): ")
    assert "[diary.chain.hash]" in first
    assert second.startswith(f"  NOT TRUSTWORTHY from line {at} (seq {at - 1}) on")
    assert "loss_spike 0.1 " in out.stdout  # still shown, under that warning


def test_a_rechained_edit_under_a_seal_leaves_nothing_trusted(run: Path) -> None:
    _set(run, _spike(run), "value", 0.1)  # the chain holds; the seal does not
    out = cli("show", run)
    assert out.returncode == 1, out.stderr
    first, second = out.stdout.splitlines()[:2]
    assert first.startswith("integrity: FAILED: ") and "[seal." in first
    assert second.startswith("  NOT TRUSTWORTHY: the record fails verification as a whole")


def test_no_verify_skips_the_check_and_says_so(run: Path) -> None:
    _set(run, _spike(run), "value", 0.1)
    out = cli("show", "--no-verify", run)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == (
        "integrity: not checked (--no-verify); trainrecord verify RUN_DIR checks it"
    )
    assert "--no-verify" in cli("show", "--help").stdout


def test_a_torn_last_line_exits_3_as_verify_does_and_the_lines_before_are_shown(
    run: Path,
) -> None:
    for name in ("record.json", "record.sig"):
        (run / name).unlink(missing_ok=True)
    with (run / "diary.jsonl").open("a") as f:
        f.write('{"seq":')
    out = cli("show", run)
    assert out.returncode == 3 == cli("verify", run).returncode, out.stderr
    assert out.stdout.startswith("integrity: TORN")
    assert "events: " in out.stdout


def test_an_unreadable_line_shows_the_lines_before_it(run: Path) -> None:
    text = (run / "diary.jsonl").read_text().splitlines(keepends=True)
    text[2] = "{not json\n"
    (run / "diary.jsonl").write_text("".join(text))
    out = cli("show", run)
    assert out.returncode == 1 and not out.stderr, out.stderr
    assert "[diary.file.json]" in out.stdout.splitlines()[0]
    assert (
        out.stdout.rstrip()
        .splitlines()[-1]
        .startswith(
            "the summary stops before line 3, which is not readable: [diary.file.json] line 3: "
            "not strict JSON text"
        )
    )
    assert "events: run_start 1, structure 1\n" in out.stdout


RULE = re.compile(r"\[([a-z_]+(?:\.[a-z0-9_]+)+)\]")
"""A rule named in a message: ``[diary.file.json]``."""

NOT_READABLE = {
    # line 3 as written: what the refusal says after the file's name
    "an array": (b"[1, 2]", "[diary.file.json] line 3: the line is not a JSON object (got [1, 2])"),
    "a string": (
        b'"hello"',
        "[diary.file.json] line 3: the line is not a JSON object (got 'hello')",
    ),
    "not JSON": (
        b"{not json",
        "[diary.file.json] line 3: not strict JSON text (RFC 8259, UTF-8, no NaN or Infinity): "
        "expecting property name enclosed in double quotes at column 2; rewrite it with a "
        "JSON writer;",
    ),
    "not UTF-8": (b'{"a": "\xc3"}', "[diary.file.json] line 3: not strict JSON text"),
}


@pytest.mark.parametrize("case", list(NOT_READABLE))
def test_no_verify_refuses_a_line_it_cannot_read_naming_file_line_and_rule(
    run: Path, case: str
) -> None:
    # Before: "trainrecord show: diary.jsonl is not readable JSON lines (line 3 is not a
    # JSON object); run trainrecord verify": no rule, unlike verify's verdict and plot's
    # refusal of the same line (trainrecord.diary.read's RecordRefused)
    raw, said = NOT_READABLE[case]
    lines = (run / "diary.jsonl").read_bytes().split(b"\n")
    lines[2] = raw
    (run / "diary.jsonl").write_bytes(b"\n".join(lines))
    out = cli("show", "--no-verify", run)
    assert out.returncode == 2 and not out.stdout, out.stdout
    assert out.stderr.startswith(
        f"trainrecord show: the record is not readable: {run / 'diary.jsonl'}: {said}"
    ), out.stderr
    assert out.stderr.rstrip().endswith(f"; trainrecord verify {run} checks the whole record")
    assert out.stderr.count("\n") == 1, out.stderr


def said_of_line_3(run: Path, tmp_path: Path, raw: bytes) -> dict[str, str]:
    """What each command that reads diary.jsonl says of it once its line 3 is ``raw``:
    verify's first line, a verified show's first and last lines, show --no-verify's,
    plot's and validate's refusals."""
    pytest.importorskip("matplotlib")
    lines = (run / "diary.jsonl").read_bytes().split(b"\n")
    lines[2] = raw
    (run / "diary.jsonl").write_bytes(b"\n".join(lines))
    shown = cli("show", run).stdout.rstrip().splitlines()
    return {
        "verify": cli("verify", run).stdout.splitlines()[0],
        "show": shown[0],
        "show's summary": shown[-1],
        "show --no-verify": cli("show", "--no-verify", run).stderr,
        "plot": cli("plot", run, "-o", tmp_path / "plot.png").stderr,
        "validate": cli("validate", run / "diary.jsonl").stdout,
    }


@pytest.mark.parametrize("raw", [b"[1, 2]", b"null"])
def test_every_command_names_one_rule_for_a_line_that_is_json_but_no_object(
    run: Path, tmp_path: Path, raw: bytes
) -> None:
    # Before: verify (and so a verified show's first line) said [diary.file.json], the
    # readers (show's last line, show --no-verify, plot) [diary.line.type], and validate
    # [diary.schema] then [diary.line.type]: three rules for one line. spec/README.md's
    # Diary verification (a strict JSON object, diary.file.json, before any schema rule)
    # and the conformance suite's diary.file.json tamper ([1, 2], "text") pin verify's
    said = said_of_line_3(run, tmp_path, raw)
    for command, text in said.items():
        assert RULE.findall(text) == ["diary.file.json"], (command, text)
        assert "line 3" in text and "the line is not a JSON object" in text, (command, text)
    assert not (tmp_path / "plot.png").exists()


def test_a_line_that_is_not_json_is_said_at_its_column_not_at_json_s_line_1(
    run: Path, tmp_path: Path
) -> None:
    # Before: the readers and validate quoted json's text, "Expecting value: line 1 column
    # 17 (char 16)", after "line 3": line 1 of the line, not of the file
    said = said_of_line_3(run, tmp_path, b'{"seq": 2, "a": }')
    for command, text in said.items():
        assert "line 3" in text and "expecting value at column 17" in text, (command, text)
        assert "line 1" not in text and "char" not in text, (command, text)
    # a whole file: its own line and column are the file's
    (run / "record.json").write_bytes(b'{"format": 1,\n "diary": }\n')
    out = cli("validate", run / "record.json")
    assert out.returncode == 1, out.stderr
    assert out.stdout == (
        f"{run / 'record.json'}: [seal.file.json] (top level): not strict JSON text (RFC 8259, "
        "UTF-8, no NaN or Infinity): expecting value at line 2, column 11; rewrite it with a "
        "JSON writer\n"
    )


@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_odd_text_is_shown_escaped_never_a_traceback(run: Path, encoding: str) -> None:
    # The probe (F6): model "Net-\ud800" (a lone surrogate, as JSON can carry it) verified
    # OK and show died with UnicodeEncodeError. A control character (ESC) could also move a
    # terminal's cursor over the integrity line.
    # U+202E (right-to-left override) turned the rest of the line round.
    _set(run, 1, "model", "Net-\ud800\x1b[1A\u00e9\u202e")
    (run / "record.json").unlink()
    (run / "record.sig").unlink(missing_ok=True)
    out = subprocess.run(
        [sys.executable, "-m", "trainrecord.cli", "show", str(run)],
        capture_output=True,
        check=False,
        timeout=120,
        env={**os.environ, "PYTHONIOENCODING": encoding},
    )
    assert out.returncode == 0 and b"Traceback" not in out.stderr, out.stderr[-2000:]
    shown = "\u00e9" if encoding == "utf-8" else "\\xe9"
    assert f"run 'exp1': Net-\\ud800\\x1b[1A{shown}\\u202e with ".encode() in out.stdout
    assert b"\x1b" not in out.stdout and "\u202e".encode() not in out.stdout
