"""The conformance suite against the Node implementation, through the exec harness protocol.

This is ``make conformance TARGET=node`` in the CI profile: every rule the suite covers is
run against ``conformance/implementations/node/harness.js``; none may fail or error. The
harness lists every operation of the protocol in its start response (none is answered
unsupported), so a rule may be skipped only when its checks need the suite's
pseudo-operation that no exec harness has: ``@nonfinite`` (Python values JSON cannot
carry). The server rules run against the receiver the harness starts with ``serve``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.typescript.node_harness import Harness, require_node

pytestmark = [pytest.mark.xdist_group("node-conformance"), pytest.mark.slow]

CLI = Path(sys.executable).with_name("trainrecord-conformance")
PSEUDO_OPERATIONS = frozenset({"@nonfinite"})
"""What the suite's checks may need beyond the protocol's operations (targets.py)."""


def test_suite_passes_against_node() -> None:
    require_node()
    if not CLI.exists():
        pytest.skip("trainrecord-conformance is not installed in this environment")
    env = {**os.environ, "HYPOTHESIS_PROFILE": "ci"}
    proc = subprocess.run(
        [str(CLI), "run", "--target", "node", "--profile", "ci", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.stdout, proc.stderr
    result = json.loads(proc.stdout)
    assert result["implementation"]["name"] == "trainrecord-node"
    bad = [
        (r["rule"], r["status"], [c.get("message") for c in r.get("checks", [])][:2])
        for r in result["rules"]
        if r["status"] in ("fail", "error")
    ]
    assert bad == [], json.dumps(bad, indent=1)[:4000]
    skipped = [r for r in result["rules"] if r["status"] == "skipped"]
    # Skipped only for a pseudo-operation no exec harness has, never for a protocol one.
    allowed = PSEUDO_OPERATIONS
    for rule in skipped:
        reasons = {c["message"] for c in rule["checks"] if c["status"] == "skipped"}
        assert reasons, rule
        for reason in reasons:  # "not supported: op[, op...]"
            assert reason.startswith("not supported: "), (rule["rule"], reason)
            missing = set(reason.removeprefix("not supported: ").split(", "))
            assert missing <= allowed, (rule["rule"], reason)
    # The checks with Python values no JSON form has (sets, bytes, NaN): see the Node README.
    assert {r["rule"] for r in skipped} <= {"witness.config.serializable"}, skipped
    passed = [r for r in result["rules"] if r["status"] == "pass"]
    assert len(passed) > 300
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_node_lists_every_protocol_operation() -> None:
    """The start response names every operation of the run request's op enum, and only
    those: an operation the suite adds fails here until the Node implementation has it."""
    require_node()
    protocol = _protocol_operations()
    assert len(protocol) >= 20, sorted(protocol)
    assert not protocol & PSEUDO_OPERATIONS
    node = _node_operations()
    assert sorted(protocol - node) == [], "operations the Node harness does not support"
    assert sorted(node - protocol) == [], "operations the protocol does not define"


def test_no_operation_answers_unsupported(tmp_path: Path) -> None:
    """Each listed operation is served: a run of it never answers unsupported (a refusal or
    an error for an empty input is fine), and an unknown operation does."""
    require_node()
    ops = sorted(_protocol_operations())
    lines = ['{"cmd": "start", "version": 1}']
    lines += [
        json.dumps(
            {"cmd": "run", "seq": i, "op": op, "input": {"dir": str(tmp_path / "runs" / op)}}
        )
        for i, op in enumerate(ops)
    ]
    lines += [json.dumps({"cmd": "run", "seq": len(ops), "op": "no_such_op", "input": {}})]
    lines += ['{"cmd": "stop"}']
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    proc = subprocess.run(
        ["node", str(ROOT / "conformance/implementations/node/harness.js")],
        cwd=cwd,  # an operation that wrote to a default path would show here
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    answers = [json.loads(line) for line in proc.stdout.splitlines()[1:-1]]
    outcomes = {a["seq"]: a["outcome"] for a in answers}
    assert sorted(outcomes) == list(range(len(ops) + 1)), proc.stderr[-2000:]
    unsupported = [ops[i] for i, o in outcomes.items() if i < len(ops) and o == "unsupported"]
    assert unsupported == []
    assert outcomes[len(ops)] == "unsupported"
    assert list(cwd.iterdir()) == []


def _node_operations() -> set[str]:
    """The operations the Node harness declares in its start response."""
    proc = subprocess.run(
        ["node", "conformance/implementations/node/harness.js"],
        cwd=ROOT,
        input='{"cmd": "start", "version": 1}\n',
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(json.loads(proc.stdout.splitlines()[0])["operations"])


def _protocol_operations() -> set[str]:
    """Every operation the harness protocol defines (the run request's op enum)."""
    schema = json.loads((ROOT / "spec/schemas/harness/run.schema.json").read_text())
    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            op = node.get("properties", {}).get("op") if "properties" in node else None
            if isinstance(op, dict) and isinstance(op.get("enum"), list):
                found.update(op["enum"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return found


@pytest.mark.parametrize("op", [["config_hash"], {"name": "config_hash"}, None, 3])
def test_a_run_whose_op_is_no_name_is_answered_unsupported(harness: Harness, op: object) -> None:
    """As the Python harness answers: only a string names an operation (the Node harness
    took String(["config_hash"]), which is "config_hash", and ran it)."""
    response = harness.request({"cmd": "run", "seq": 7, "op": op, "input": {}})
    assert response["seq"] == 7
    assert response["outcome"] == "unsupported", response
    assert "is not supported" in response["message"]
