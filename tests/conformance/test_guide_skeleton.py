"""The skeleton harness of docs/harness-guide.md ("A skeleton to start from"), run as the
guide says: its code blocks are written to my-harness.py, the guide's command runs
against it as a real process (trainrecord-conformance, and ``python3`` on PATH), and
the output and exit status are the ones the guide shows, but for the seconds taken.
Before: a newcomer had to read the reference harness to write a first one."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

GUIDE = ROOT / "docs" / "harness-guide.md"
SECTION = "### A skeleton to start from"
HARNESS = "my-harness.py"
CLI = [sys.executable, "-m", "trainrecord_conformance.cli"]


def _section() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(SECTION)
    return text[start : text.index("\n## ", start)]


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```$", _section(), flags=re.M | re.S)


def _seconds(text: str) -> str:
    return re.sub(r" rules in [0-9.]+ s$", " rules in N s", text, flags=re.M)


def _run(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    """The guide's command, in a folder holding my-harness.py, with python3 this Python."""
    (tmp_path / HARNESS).write_text(source, encoding="utf-8")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "python3").exists():
        (bin_dir / "python3").symlink_to(sys.executable)
    [command] = _blocks("sh")
    words = shlex.split(command)
    assert words[:2] == ["trainrecord-conformance", "run"], command
    assert f"exec:python3 {HARNESS}" in words, command
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "HYPOTHESIS_PROFILE": "ci",
    }
    return subprocess.run(
        [*CLI, *words[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


@pytest.fixture
def blocks() -> tuple[str, str, str, str]:
    skeleton, step2 = _blocks("python")
    first, second = _blocks("text")
    return skeleton, step2, first, second


def test_the_skeleton_gets_the_output_the_guide_shows(
    tmp_path: Path, blocks: tuple[str, str, str, str]
) -> None:
    skeleton, _, first, _ = blocks
    assert "import json\nimport sys\n" in skeleton
    # the standard library only: it reads as pseudo-code for any language
    imported = set(re.findall(r"^import (\w+)$", skeleton, flags=re.M))
    assert imported <= set(sys.stdlib_module_names), imported
    assert "You should see this, with exit status 0:" in _section()
    done = _run(tmp_path, skeleton)
    assert _seconds(done.stdout) == _seconds(first), done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("change", "rule"),
    [
        # a skeleton answering unsupported without the seq: harness.run.* fail, not skip
        ('reply({"seq": seq, "outcome": "unsupported"})', "harness.run.seq.echo"),
        # a stop answer that breaks the schema failed as "the suite's own check crashed"
        ('reply({"stopped": True})', "harness.stop.exit"),
    ],
)
def test_a_broken_skeleton_fails_the_rule_it_breaks(
    tmp_path: Path, blocks: tuple[str, str, str, str], change: str, rule: str
) -> None:
    skeleton = blocks[0]
    assert change in skeleton
    broken = {
        "harness.run.seq.echo": 'reply({"outcome": "unsupported"})',
        "harness.stop.exit": 'reply({"stopped": "yes"})',
    }[rule]
    done = _run(tmp_path, skeleton.replace(change, broken))
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"FAIL {rule}\n" in done.stdout, done.stdout
    assert "ERROR" not in done.stdout and "crashed" not in done.stdout, done.stdout


def test_the_skeleton_with_config_hash_passes(
    tmp_path: Path, blocks: tuple[str, str, str, str]
) -> None:
    skeleton, step2, _, second = blocks
    # "put this in place of the `OPERATIONS = {}` line"
    assert "in place of the `OPERATIONS = {}` line" in " ".join(_section().split())
    lines = skeleton.splitlines(keepends=True)
    [at] = [i for i, line in enumerate(lines) if line.startswith("OPERATIONS = {}")]
    lines[at] = step2
    assert "with exit status 0:" in _section()
    done = _run(tmp_path, "".join(lines))
    assert _seconds(done.stdout) == _seconds(second), done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
