"""The Node implementation's open_run resumes a run whose folder is read-only, as the Python
one does (spec/README.md: a resume only reads metadata.json): the same run_id, nothing
written. Before, it wrote a temporary file first, and the read-only mount refused it
(EROFS). A real read-only bind mount (``unshare``; skipped where not allowed) and the
real harness process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import read_only_bind
from tests.typescript.node_harness import HARNESS, require_node
from trainrecord.report import open_run

pytestmark = pytest.mark.xdist_group("node")


def test_a_run_in_a_read_only_folder_resumes_with_its_run_id(tmp_path: Path) -> None:
    source = tmp_path / "runs"
    run = open_run(source / "r1", {"mode": "pre"})
    before = (source / "r1" / "metadata.json").read_bytes()
    target = tmp_path / "ro"
    requests = tmp_path / "requests.jsonl"
    call = {"cmd": "run", "seq": 1, "op": "open_run", "input": {"dir": str(target / "r1")}}
    messages = [{"cmd": "start", "version": 1}, call, {"cmd": "stop"}]
    requests.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    node = require_node()
    out = read_only_bind(source, target, ["sh", "-c", f'"{node}" "{HARNESS}" < "{requests}"'])
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and len(lines) >= 2, out.stdout + out.stderr[-2000:]
    answer = json.loads(lines[1])
    assert answer["outcome"] == "ok", answer
    assert answer["output"]["run_id"] == run.run_id and not answer["output"]["created"], answer
    assert (source / "r1" / "metadata.json").read_bytes() == before
    assert sorted(p.name for p in (source / "r1").iterdir()) == ["metadata.json"]
