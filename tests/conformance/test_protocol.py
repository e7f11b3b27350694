"""The exec target tells an implementation's crash, hang, noise and protocol errors apart
from rule failures, with real harness processes."""

from __future__ import annotations

import shlex
import sys
import textwrap
from pathlib import Path

import pytest

from trainrecord_conformance.runner import run_rules
from trainrecord_conformance.targets import ExecTarget, TargetError

PRELUDE = textwrap.dedent("""
    import json, sys, time
    from trainrecord_conformance.harness import answer
    from trainrecord_conformance.operations import OPERATIONS
    def say(m):
        sys.stdout.write(json.dumps(m) + "\\n"); sys.stdout.flush()
    for line in sys.stdin:
        r = json.loads(line)
        if r["cmd"] == "start":
            say({"version": 1, "implementation": {"name": "t", "language": "python"},
                 "operations": ["config_hash", "line_hash"]})
        elif r["cmd"] == "stop":
            say({"stopped": True}); break
        else:
""")


def harness(tmp_path: Path, body: str) -> str:
    script = tmp_path / "h.py"
    script.write_text(PRELUDE + textwrap.indent(textwrap.dedent(body), " " * 12))
    return f"{shlex.quote(sys.executable)} {script}"


def outcome(command: str, rule: str = "canonical.config", timeout: float = 20.0) -> str:
    with ExecTarget(command, timeout=timeout) as target:
        [result] = run_rules(target, [rule], examples=5)
    return result.status


def test_stderr_noise_is_not_an_error(tmp_path: Path) -> None:
    cmd = harness(
        tmp_path,
        """
        print("debug: working on it", file=sys.stderr)
        say(answer(r, OPERATIONS))
    """,
    )
    assert outcome(cmd) == "pass"


def test_a_crash_is_an_error_not_a_failure(tmp_path: Path) -> None:
    assert outcome(harness(tmp_path, "sys.exit(3)")) == "error"


def test_a_hang_is_a_timeout_error(tmp_path: Path) -> None:
    assert outcome(harness(tmp_path, "time.sleep(60)"), timeout=1.0) == "error"


def test_garbage_output_is_a_protocol_error(tmp_path: Path) -> None:
    assert outcome(harness(tmp_path, 'print("hello"); sys.stdout.flush()')) == "error"


def test_a_response_of_the_wrong_shape_is_a_protocol_error(tmp_path: Path) -> None:
    cmd = harness(tmp_path, 'say({"seq": r["seq"], "outcome": "ok", "output": {"sha": 1}})')
    assert outcome(cmd) == "error"


def test_a_wrong_answer_is_a_failure(tmp_path: Path) -> None:
    cmd = harness(
        tmp_path,
        """
        say({"seq": r["seq"], "outcome": "ok",
             "output": {"canonical": "{}", "config_sha": "0" * 16}})
    """,
    )
    assert outcome(cmd) == "fail"


def test_operations_not_listed_are_skipped(tmp_path: Path) -> None:
    cmd = harness(tmp_path, "say(answer(r, OPERATIONS))")
    assert outcome(cmd, "witness.path.exists") == "skipped"


def test_a_harness_that_cannot_start_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "bad.py"
    script.write_text("import sys\nsys.stdin.readline()\nprint('{\"version\": 2}')\n")
    with pytest.raises(TargetError):
        ExecTarget(f"{shlex.quote(sys.executable)} {script}", timeout=5)
