"""``trainrecord validate`` on a JSON Lines file whose last line was cut mid-line (no newline
at the end, not parseable: what a crash while writing leaves) says it is an incomplete last
line and names ``trainrecord verify``, which calls it a torn tail (exit status 3); it was
"not strict JSON text ...; rewrite it with a JSON writer". A diary's uses the rule verify
reports, ``diary.file.torn``. Each command runs as a real process on real files."""

from __future__ import annotations

import json
from pathlib import Path

from tests.diary.helpers import cli, write_run


def cut(path: Path, drop: int) -> int:
    """Cut the last ``drop`` bytes of ``path`` (as a crash mid-line leaves it); the bytes left
    after its last newline."""
    data = path.read_bytes()[:-drop]
    path.write_bytes(data)
    return len(data) - data.rfind(b"\n") - 1


def json_said(path: Path) -> str:
    """What the JSON parser says of ``path``'s last (cut) line, at its column: where the cut
    lands depends on the line's timestamp and hashes, so the column is read, not assumed."""
    try:
        json.loads(path.read_bytes().rsplit(b"\n", 1)[-1])
    except json.JSONDecodeError as exc:
        what = exc.msg.removesuffix(" at")  # "Unterminated string starting at"
        return f"{what[:1].lower()}{what[1:]} at column {exc.colno}"
    raise AssertionError("the cut line still parses")


def test_a_diary_cut_mid_line_is_an_incomplete_last_line_as_verify_says(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_run(run, seal=False)
    lines = len((run / "diary.jsonl").read_bytes().splitlines())
    left = cut(run / "diary.jsonl", 30)
    said = json_said(run / "diary.jsonl")
    assert cli("verify", run).returncode == 3
    out = cli("validate", run / "diary.jsonl")
    assert out.returncode == 1, out.stderr
    assert out.stdout == (
        f"{run}/diary.jsonl: [diary.file.torn] line {lines}: incomplete last line ({left} bytes "
        "without a newline), as a crash while writing leaves it: not strict JSON text: "
        f"{said}; trainrecord verify {run} checks "
        "the lines before it\n"
    )
    problems = json.loads(cli("validate", "--json", run / "diary.jsonl").stdout)["files"][0]
    assert [p["rule"] for p in problems["problems"]] == ["diary.file.torn"]


def test_a_diary_cut_inside_a_character_is_an_incomplete_last_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_run(run, seal=False)
    with (run / "diary.jsonl").open("ab") as f:
        f.write('{"seq": 99, "note": "é'.encode()[:-1])  # cut between the bytes of é
    out = cli("validate", run / "diary.jsonl")
    assert out.returncode == 1
    assert "[diary.file.torn]" in out.stdout and "incomplete last line (22 bytes" in out.stdout
    assert "can't decode byte 0xc3" in out.stdout and "rewrite it" not in out.stdout


def test_a_metrics_row_cut_mid_line_keeps_its_rule_and_says_incomplete(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_run(run, seal=False)
    cut(run / "metrics.jsonl", 10)
    out = cli("validate", run / "metrics.jsonl")
    assert out.returncode == 1
    assert "[diary.metrics.json] line " in out.stdout
    assert ": incomplete last line (" in out.stdout and f"trainrecord verify {run} " in out.stdout


def test_a_complete_line_that_is_not_json_is_still_one_to_rewrite(tmp_path: Path) -> None:
    # a bad line with its newline, or before the last line, is no torn tail
    run = tmp_path / "run"
    write_run(run, seal=False)
    with (run / "diary.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"seq":\n{"seq":')
    said = cli("validate", run / "diary.jsonl").stdout.splitlines()
    assert len(said) == 2, said
    assert "[diary.file.json]" in said[0] and said[0].endswith("rewrite it with a JSON writer")
    assert "[diary.file.torn]" in said[1] and "incomplete last line (7 bytes" in said[1]
