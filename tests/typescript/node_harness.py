"""Drive the Node implementation's harness program from the tests: one process, many requests.

The harness speaks newline-delimited JSON on stdin/stdout. Requests are written with
Python's ``json.dumps`` (``ensure_ascii=True``, so lone surrogates and every float survive
the trip exactly); replies are read back with ``json.loads``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

NODE_IMPL = ROOT / "conformance" / "implementations" / "node"
HARNESS = NODE_IMPL / "harness.js"


def require_node() -> str:
    """The node executable; skips the test (with the reason) when Node.js is missing."""
    node = shutil.which("node")
    npm = shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Node.js (node and npm) is not installed: the Node implementation needs it")
    if not (NODE_IMPL / "node_modules" / "ajv").is_dir():
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=NODE_IMPL,
            check=True,
            capture_output=True,
            timeout=300,
        )
    return node


class Harness:
    """One running harness process."""

    def __init__(self) -> None:
        node = require_node()
        self.proc = subprocess.Popen(
            [node, str(HARNESS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            cwd=ROOT,
        )
        self.seq = 0
        self.hello = self.request({"cmd": "start", "version": 1})

    def request(self, message: dict[str, Any]) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise AssertionError(f"the harness exited: {err}")
        return json.loads(line)

    def run(self, op: str, **payload: Any) -> Any:
        """Run one operation: its output, or ``{"refused": True, "rules": [...]}``.

        An error or unsupported answer fails the test.
        """
        self.seq += 1
        answer = self.request({"cmd": "run", "seq": self.seq, "op": op, "input": payload})
        assert answer.get("seq") == self.seq, answer
        assert answer["outcome"] in ("ok", "refused"), answer
        if answer["outcome"] == "refused":
            return {"refused": True, "rules": answer["rules"]}
        return answer["output"]

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write(json.dumps({"cmd": "stop"}) + "\n")
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
            if self.proc.stdout is not None:
                assert json.loads(self.proc.stdout.readline()) == {"stopped": True}
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def python_refuses(folder: Path, events: list[dict[str, Any]]) -> list[str] | None:
    """The rules the Python implementation's write_diary refuses ``events`` with (None:
    written), for a side-by-side comparison with :func:`node_refuses`."""
    from trainrecord.errors import RecordRefused
    from trainrecord_conformance.operations import write_diary

    try:
        write_diary({"dir": str(folder), "events": events})
    except RecordRefused as exc:
        return exc.rules
    return None


def node_refuses(harness: Harness, folder: Path, events: list[dict[str, Any]]) -> list[str] | None:
    """The rules the Node implementation's write_diary refuses ``events`` with (None: written)."""
    got = harness.run("write_diary", dir=str(folder), events=events)
    return got["rules"] if got.get("refused") else None


def diary_lines(folder: Path) -> int:
    """How many lines ``folder``'s diary.jsonl holds (0 when there is none)."""
    diary = folder / "diary.jsonl"
    return len(diary.read_text("utf-8").splitlines()) if diary.exists() else 0
