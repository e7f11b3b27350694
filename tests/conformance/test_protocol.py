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


BIG = [10**400, -(10**400), 2**1024, 2**1024 - 2**971, 2**53 + 1, -(2**63) - 1]


def test_integers_of_any_size_cross_the_protocol_exactly() -> None:
    """Strict JSON carries 10**400 as an integer token: the suite's encoder writes it in
    full and its decoder reads it back as the same int (never a float, never rounded)."""
    from trainrecord_conformance import protocol

    message = protocol.run_request(0, "validate", {"schema": "s", "instance": BIG})
    line = protocol.encode(message)
    assert str(10**400).encode() in line
    back = protocol.decode(line.rstrip(b"\n"))
    assert back == message
    assert all(type(n) is int for n in back["input"]["instance"])


def test_big_integers_reach_an_exec_harness_and_come_back_exactly() -> None:
    """Through the reference harness: 10**400 in a diary line body is written in full by the
    canonical form, and a metrics value of 10**400 is refused while the largest double (an
    integer token) is a number."""
    from trainrecord_conformance.targets import harness_command

    metrics = "https://trainrecord.dev/schemas/foundry/metrics.schema.json"
    row = {"benchmark": "b", "metric": "m", "horizon": 0, "seed": 0}
    with ExecTarget(harness_command()) as target:
        out = target.run("line_hash", {"prev": "0" * 64, "body": {"n": BIG}}).output
        assert out["canonical"] == '{"n":[' + ",".join(str(n) for n in BIG) + "]}"
        for value, valid in ((10**400, False), (2**1024 - 2**970, False), (BIG[3], True)):
            out = target.run("validate", {"schema": metrics, "instance": [{**row, "value": value}]})
            assert out.output["valid"] is valid, (value, out)


@pytest.mark.parametrize("op", [["config_hash"], {"name": "config_hash"}, None, 3])
def test_a_run_whose_op_is_no_name_is_answered_unsupported(op: object) -> None:
    """The reference harness answers every run, one whose op is not an operation's name
    included: a list or an object (unhashable: looked up in the table, it raised TypeError
    and the harness died without an answer) is unsupported, as an unknown name is."""
    from trainrecord_conformance.harness import answer
    from trainrecord_conformance.operations import OPERATIONS

    response = answer({"cmd": "run", "seq": 7, "op": op, "input": {}}, OPERATIONS)
    assert response["seq"] == 7
    assert response["outcome"] == "unsupported"
    assert "is not supported" in response["message"]


def test_a_log_line_on_stdout_is_refused_with_the_remedy() -> None:
    """A newcomer probe: a harness printing "my harness starting up" on stdout got "response
    is not one strict JSON value" and no word on what to do."""
    from trainrecord_conformance import protocol

    with pytest.raises(protocol.ProtocolError) as info:
        protocol.decode(b"my harness starting up")
    message = str(info.value)
    assert message.startswith("response is not one strict JSON value: b'my harness starting up'")
    assert message.endswith("; stdout is reserved for protocol lines: write logs to stderr")
