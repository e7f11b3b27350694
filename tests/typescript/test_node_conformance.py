"""The conformance suite against the Node implementation, through the exec harness protocol.

This is ``make conformance TARGET=node`` in the CI profile: every rule the suite covers is
run against ``conformance/implementations/node/harness.js``; none may fail or error, and a
rule may be skipped only when its checks need something the exec protocol cannot carry
(non-finite numbers, non-text environment values) or a reporting server (the Node
implementation is a client).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.typescript.node_harness import require_node

pytestmark = [pytest.mark.xdist_group("node-conformance"), pytest.mark.slow]

CLI = Path(sys.executable).with_name("trainrecord-conformance")


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
    # Skipped only for what the exec protocol cannot carry, a server's rules, or an
    # operation the Node harness does not list in its start response (never silently).
    allowed = {"@nonfinite", "serve"} | (_protocol_operations() - _node_operations())
    for rule in skipped:
        reasons = {c["message"] for c in rule["checks"] if c["status"] == "skipped"}
        assert reasons, rule
        for reason in reasons:  # "not supported: op[, op...]"
            assert reason.startswith("not supported: "), (rule["rule"], reason)
            missing = set(reason.removeprefix("not supported: ").split(", "))
            assert missing <= allowed, (rule["rule"], reason)
    passed = [r for r in result["rules"] if r["status"] == "pass"]
    assert len(passed) > 300
    assert proc.returncode == 0, proc.stderr[-2000:]


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
