"""trainrecord-conformance prints what an implementation under test wrote (its name and
language from the start answer, a refusal's message, the stderr of a harness that died, a
counterexample holding a lone surrogate) escaped: an implementation answering with ESC [2J,
U+202E or a C1 control could clear or turn round the user's terminal, and a lone surrogate
stopped the report with a UnicodeEncodeError. A real CLI process against a real faulty
harness; ``--json`` keeps every text as the harness wrote it. Fails before the fix."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

CONFORMANCE = [sys.executable, "-m", "trainrecord_conformance.cli"]
BAD = "A\x1b[2JB\u202eC\x85D\x07E\rF"
"""ESC [2J (clear the screen), RIGHT-TO-LEFT OVERRIDE, NEL (a C1 control), BEL, CR."""
BAD_SHOWN = "A\\x1b[2JB\\u202eC\\x85D\\x07E\\rF"
RAW = ("\x1b", "\u202e", "\x85", "\x07", "\r")

HARNESS = textwrap.dedent("""
    import json, sys
    BAD = {bad!r}
    def say(m):
        sys.stdout.write(json.dumps(m) + "\\n"); sys.stdout.flush()
    for line in sys.stdin:
        r = json.loads(line)
        if r["cmd"] == "start":
            say({{"version": 1, "implementation": {{"name": "evil" + BAD + "\\ud800",
                 "language": "py" + BAD, "version": BAD}},
                 "operations": ["config_hash", "line_hash", "write_diary"]}})
        elif r["cmd"] == "stop":
            say({{"stopped": True}}); break
        elif r["op"] == "config_hash":  # a refusal whose message fakes a verdict line
            say({{"seq": r["seq"], "outcome": "refused", "rules": ["canonical.config"],
                 "message": "msg" + BAD + "\\nOK: all rules passed"}})
        elif r["op"] == "write_diary":  # accepts text with a lone surrogate: a failure
            say({{"seq": r["seq"], "outcome": "ok", "output": {{"path": None}}}})
        else:  # line_hash: dies, its stderr telling why
            sys.stderr.write("Traceback" + BAD + "\\nboom\\n"); sys.stderr.flush()
            sys.exit(3)
""")


def _harness(tmp_path: Path) -> str:
    script = tmp_path / "faulty_harness.py"
    script.write_text(HARNESS.format(bad=BAD), encoding="utf-8")
    return f"exec:{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def _run(target: str, tmp: Path, *extra: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [
            *CONFORMANCE,
            "run",
            "--target",
            target,
            "--rules",
            "canonical.config",
            "--rules",
            "canonical.line",
            "--rules",
            "diary.text.surrogate",
            "--examples",
            "3",
            *extra,
        ],
        capture_output=True,
        timeout=300,
        env={**os.environ, "HYPOTHESIS_PROFILE": "ci", "TMPDIR": str(tmp)},  # kept files
    )
    # strict UTF-8: a lone surrogate cannot be written, so the report had stopped before it
    return done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8")


def test_the_summary_shows_an_implementations_text_escaped(tmp_path: Path) -> None:
    code, out, err = _run(_harness(tmp_path), tmp_path)
    assert code == 1 and "Traceback" not in err, err[-3000:]
    for raw in RAW:
        assert raw not in out, (raw, out)
    lines = out.split("\n")
    # the start answer's name and language
    assert f"(evil{BAD_SHOWN}\\ud800, py{BAD_SHOWN})" in lines[0], lines[0]
    # a refusal's message; its line break stays one, indented under the message
    assert (
        f"    config_hash on a valid input gave refused ['canonical.config']: msg{BAD_SHOWN}"
        in (lines)
    ), out
    assert "      OK: all rules passed" in lines, out
    assert not any(line.startswith("OK") for line in lines), out
    # the stderr of the harness that died
    assert any(f"stderr: Traceback{BAD_SHOWN}" in line for line in lines), out
    assert "      boom" in lines, out
    # the counterexample and the requests: a lone surrogate as JSON's escape, the same value
    [shown] = [x for x in lines if x.startswith("    counterexample (shrunk): [[")]
    case = json.loads(shown.removeprefix("    counterexample (shrunk): "))
    assert _surrogate(case[2]), shown
    [request] = [x for x in lines if x.startswith('      {"cmd": "run"') and "write_diary" in x]
    assert _surrogate(json.dumps(json.loads(request)["input"]["events"][-1], ensure_ascii=False))


def _surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def test_json_output_keeps_the_text_as_written(tmp_path: Path) -> None:
    code, out, err = _run(_harness(tmp_path), tmp_path, "--json")
    assert code == 1 and "Traceback" not in err, err[-3000:]
    data = json.loads(out)  # valid JSON: escaped by JSON, not by us
    assert data["implementation"] == {
        "name": "evil" + BAD + "\ud800",
        "language": "py" + BAD,
        "version": BAD,
    }
    messages = [c["message"] for r in data["rules"] for c in r["checks"]]
    assert any(m.endswith("msg" + BAD + "\nOK: all rules passed") for m in messages), messages
    assert any("Traceback" + BAD + "\nboom" in m for m in messages), messages


def test_cannot_start_shows_the_harness_stderr_escaped_on_one_line(tmp_path: Path) -> None:
    script = tmp_path / "dies.py"
    script.write_text(
        f"import sys\nsys.stderr.write({BAD!r} + '\\nsecond line\\n')\nsys.exit(4)\n",
        encoding="utf-8",
    )
    code, out, err = _run(
        f"exec:{shlex.quote(sys.executable)} {shlex.quote(str(script))}", tmp_path
    )
    assert code == 2 and not out, (out, err)
    [line] = err.splitlines()
    assert line.startswith("trainrecord-conformance: cannot start target exec:"), line
    assert f"stderr: {BAD_SHOWN}\\nsecond line\\n" in line, line
    for raw in RAW:
        assert raw not in err, (raw, err)
