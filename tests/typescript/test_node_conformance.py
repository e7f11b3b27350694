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
    for rule in skipped:  # only what the exec protocol cannot carry, or a server's rules
        reasons = {c["message"] for c in rule["checks"] if c["status"] == "skipped"}
        assert reasons, rule
        assert all(m in ("not supported: @nonfinite", "not supported: serve") for m in reasons), (
            rule["rule"],
            reasons,
        )
    passed = [r for r in result["rules"] if r["status"] == "pass"]
    assert len(passed) > 300
    assert proc.returncode == 0, proc.stderr[-2000:]
