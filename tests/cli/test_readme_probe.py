"""Rough edges a README walkthrough found, each command run as a real process: a reader
that closes stdout early (``| head``), a run directory that does not exist, ``show`` on a
hand-written diary without the optional fields, and the conformance command line's help."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.diary.helpers import cli, write_run
from trainrecord.diary import DiaryWriter, MetricsWriter, architecture_sha256

CONFORMANCE = [sys.executable, "-m", "trainrecord_conformance.cli"]
TRAINRECORD = [sys.executable, "-m", "trainrecord.cli"]
ROOT = Path(__file__).resolve().parents[2]


def conformance(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CONFORMANCE, *args], capture_output=True, text=True, check=False, timeout=300
    )


def into_closed_pipe(command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run ``command`` with stdout a pipe whose reader has already gone (``cmd | true``,
    without the race of ``| head``)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            command, stdout=write, stderr=subprocess.PIPE, text=True, check=False, timeout=300
        )
    finally:
        os.close(write)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("run")
    write_run(run)
    return run


@pytest.mark.parametrize(
    "args",
    [
        [*CONFORMANCE, "rules"],
        [*TRAINRECORD, "show", "RUN"],
        [*TRAINRECORD, "verify", "RUN", "--json"],
    ],
    ids=["conformance-rules", "show", "verify"],
)
def test_a_closed_stdout_ends_the_command_quietly_with_141(run_dir: Path, args: list[str]) -> None:
    out = into_closed_pipe([str(run_dir) if a == "RUN" else a for a in args])
    assert out.stderr == "", out.stderr  # no BrokenPipeError traceback, no "Exception ignored"
    assert out.returncode == 141


@pytest.mark.parametrize("command", [CONFORMANCE, TRAINRECORD])
def test_help_into_a_closed_stdout_is_quiet(command: list[str]) -> None:
    """argparse drops a failed write of its own help (exit 0, as before)."""
    out = into_closed_pipe([*command, "--help"])
    assert out.stderr == "" and out.returncode in (0, 141)


def test_a_broken_pipe_that_is_not_stdout_is_still_an_error() -> None:
    """Only a closed stdout is quiet: another pipe breaking (a harness's) keeps its
    traceback."""
    code = (
        "import argparse, sys\n"
        "from trainrecord.cli import run_parser\n"
        "def boom(args):\n"
        "    raise BrokenPipeError(32, 'Broken pipe')\n"
        "p = argparse.ArgumentParser()\n"
        "p.set_defaults(func=boom)\n"
        "sys.exit(run_parser(p, [], 'x'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert out.returncode == 1 and "BrokenPipeError" in out.stderr


@pytest.mark.parametrize("command", ["verify", "show", "seal", "plot"])
def test_a_run_dir_that_does_not_exist_is_said_to_not_exist(tmp_path: Path, command: str) -> None:
    extra = ["-o", str(tmp_path / "plot.png")] if command == "plot" else []
    missing = tmp_path / "nope"
    out = cli(command, missing, *extra)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == f"trainrecord {command}: does not exist: {missing}"
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    out = cli(command, a_file, *extra)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == f"trainrecord {command}: not a directory: {a_file} (a file)"


def test_show_leaves_out_what_a_hand_written_run_start_gives_as_null(tmp_path: Path) -> None:
    """The README's by-hand diary (``"torch": None``), here with no optimizer either."""
    with DiaryWriter(tmp_path) as diary, MetricsWriter(tmp_path) as metrics:
        diary.append(
            "run_start",
            {
                "name": "exp1",
                "tool": "mytrainer 0.1",
                "model": "Net",
                "parameters": 84,
                "layers": ["fc"],
                "architecture_sha256": architecture_sha256([("fc.weight", [4, 20])]),
                "optimizer": None,
                "python": platform.python_version(),
                "torch": None,
                "platform": platform.platform(),
                "config": None,
                "record_version": 1,
            },
        )
        metrics.append(
            {"step": 0, "loss": 2.3, "grad": {"fc": 0.05}, "stuck": {"fc": [0, 0, 0, 0]}}
        )
        diary.append(
            "run_end",
            {"steps": 1, "checks": 1, "counts": {}, "metrics_sha256": metrics.sha256()},
        )
    out = cli("show", tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("integrity: OK: 2 lines verified")
    head = out.stdout.splitlines()[1:4]  # after the integrity line
    assert head == [
        "findings: none",
        "run 'exp1': Net with 84 parameters",
        f"  written by mytrainer 0.1; python {platform.python_version()}, {platform.platform()}",
    ]
    assert "None" not in out.stdout


def test_show_reads_a_run_start_missing_fields_without_a_traceback(tmp_path: Path) -> None:
    """show reads leniently: a run_start without its count or model (a broken hand-written
    line) says unknown instead of failing on ``None:,``; verified, it fails (exit 1) and
    says so first, and the summary still follows."""
    line = {"seq": 0, "time": "2024-01-01T00:00:00Z", "event": "run_start", "name": "x"}
    (tmp_path / "diary.jsonl").write_text(json.dumps(line) + "\n")
    out = cli("show", "--no-verify", tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[:4] == [
        "integrity: not checked (--no-verify); trainrecord verify RUN_DIR checks it",
        "findings: none",
        "run 'x': unknown",
        "  written by unknown",
    ]
    out = cli("show", tmp_path)
    assert out.returncode == 1, out.stderr
    said = out.stdout.splitlines()
    assert said[0].startswith("integrity: FAILED: diary.jsonl line 1 (seq 0): [diary.")
    assert said[1].startswith("  NOT TRUSTWORTHY from line 1 (seq 0) on")
    assert said[2:5] == ["findings: none", "run 'x': unknown", "  written by unknown"]


@pytest.mark.parametrize("command", ["run", "rules"])
def test_conformance_subcommand_help_has_a_description_and_exit_statuses(command: str) -> None:
    out = conformance(command, "--help")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    description = {"run": "Run the conformance suite against", "rules": "List the rules of"}
    assert description[command] in text
    assert "exit status: 0 " in text and "2 usage error" in text and "141 stdout closed" in text
    if command == "run":
        assert "1 a rule failed or a check erred" in text
    assert "--rules PATTERN only rules matching this glob" in text


def test_conformance_rules_matching_nothing_is_a_usage_error() -> None:
    out = conformance("rules", "--rules", "no.such.rule*")
    assert out.returncode == 2 and out.stdout == ""
    assert "no rule matches" in out.stderr


@pytest.mark.parametrize("command", ["run", "rules"])
def test_conformance_rules_matching_nothing_suggests_the_family_and_how_to_list(
    command: str,
) -> None:
    # A newcomer probe: "no rule matches ['witnes.*']", a Python list and no way on.
    target = ["--target", "python"] if command == "run" else []
    out = conformance(command, *target, "--rules", "witnes.*", "--rules", "seal.x")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == (
        "no rule matches 'witnes.*', 'seal.x' (did you mean 'witness.*'? rule families: "
        "canonical, diary, diary_metrics, harness, metrics, report, seal, witness; list "
        "them with trainrecord-conformance rules)\n"
    )


def test_conformance_version_and_the_timeout_default_in_help() -> None:
    """``trainrecord --version`` worked and ``trainrecord-conformance --version`` was a usage
    error; ``run --help`` did not say what ``--timeout`` defaults to (a docs probe)."""
    from trainrecord import __version__
    from trainrecord_conformance.targets import DEFAULT_TIMEOUT

    out = conformance("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"trainrecord-conformance {__version__}"
    text = " ".join(conformance("run", "--help").stdout.split())
    assert f"per operation (default {DEFAULT_TIMEOUT:g})" in text


@pytest.mark.skipif(
    shutil.which("node") is None
    or not (ROOT / "conformance" / "implementations" / "node" / "node_modules").is_dir(),
    reason="needs Node.js and npm ci in conformance/implementations/node",
)
def test_node_target_runs_from_outside_the_checkout(tmp_path: Path) -> None:
    """``--target node`` named its harness relative to the working directory: from any other
    folder node said "Cannot find module" (a docs probe). It is found from the package."""
    out = subprocess.run(
        [*CONFORMANCE, "run", "--target", "node", "--rules", "canonical.config", "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["implementation"]["language"] == "javascript"


def test_a_harness_that_exits_at_once_is_reported_with_its_exit_status(tmp_path: Path) -> None:
    """The harness's stdout closes a moment before the process is reaped: the message said
    "exit status None". It waits for the status now."""
    script = tmp_path / "harness.py"
    script.write_text("import sys\nsys.stderr.write('no luck\\n')\nsys.exit(3)\n")
    out = conformance("run", "--target", f"exec:{sys.executable} {script}")
    assert out.returncode == 2
    assert "the harness exited without answering (exit status 3)" in out.stderr
    assert "None" not in out.stderr and "no luck" in out.stderr


def test_node_target_without_a_checkout_says_what_to_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An installed copy of the package has no Node implementation beside it: a usage error
    naming the exec: form, not a harness that cannot start."""
    from trainrecord_conformance import targets

    monkeypatch.setattr(targets, "NODE_HARNESS", tmp_path / "harness.js")
    with pytest.raises(ValueError, match=r"needs a checkout.*exec:node <checkout>"):
        targets.make_target("node")
