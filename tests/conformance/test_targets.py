"""The suite passes this project's runtime, in-process and through the reference harness,
on every rule it covers; the reference receiver passes the server rules over real HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainrecord_conformance.checks import all_checks
from trainrecord_conformance.runner import run_rules, select
from trainrecord_conformance.targets import HttpTarget, make_target

pytestmark = pytest.mark.slow


def _bad(outcomes: list) -> list[str]:
    return [
        f"{o.rule}: {o.status}: "
        + "; ".join(c.message[:300] for c in o.checks if c.status in ("fail", "error"))
        for o in outcomes
        if o.status in ("fail", "error")
    ]


@pytest.mark.xdist_group("conformance-python")
def test_in_process_runtime_passes_every_covered_rule() -> None:
    with make_target("python") as target:
        outcomes = run_rules(target, select(None), profile="ci")
    assert not _bad(outcomes), "\n".join(_bad(outcomes))
    skipped = [o.rule for o in outcomes if o.status == "skipped"]
    assert set(skipped) <= {
        "harness.run.seq.echo",
        "harness.run.unsupported",
        "harness.stop.exit",
    }, skipped


@pytest.mark.xdist_group("conformance-harness")
def test_reference_exec_harness_passes_every_covered_rule() -> None:
    """Every behaviour rule, and the schema rules of the witness and the protocol itself
    (the other schema rules go through the same validate operation; make conformance runs
    them all through the harness)."""
    checks = all_checks()
    chosen = [
        r
        for r in select(None)
        if r.startswith(("witness.", "harness."))
        or any(c.scale != "schema" for c in checks.get(r, ()))
    ]
    with make_target("harness") as target:
        outcomes = run_rules(target, chosen, profile="ci")
    assert not _bad(outcomes), "\n".join(_bad(outcomes))
    passed = {o.rule for o in outcomes if o.status == "pass"}
    assert {
        "harness.run.seq.echo",
        "harness.stop.exit",
        "canonical.line",
        "diary.chain.prev",
        "witness.path.exists",
        "report.transport.no_redirect",
    } <= passed


@pytest.fixture
def served(tmp_path: Path) -> tuple[str, str]:
    """`trainrecord serve` in its own process on a free loopback port."""
    token = "conformance-test-token-0123456789"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trainrecord.cli",
            "serve",
            "--port",
            "0",
            "--db",
            str(tmp_path / "r.sqlite"),
        ],
        env={**os.environ, "CORREAD_REPORT_TOKEN": token},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = None
        deadline = time.monotonic() + 30
        assert proc.stdout is not None
        while url is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            for word in line.split():
                if word.startswith("http://127.0.0.1:"):
                    url = word.rstrip(".,;)")
        assert url, "trainrecord serve did not print its URL"
        base = url.split("/api/")[0].rstrip("/")
        yield base + "/api/runs", token
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.xdist_group("conformance-harness")
def test_trainrecord_serve_passes_the_server_rules(served: tuple[str, str]) -> None:
    url, token = served
    target = HttpTarget(url, token=token, read_url=url)
    outcomes = run_rules(target, select(["report.server.*"]), profile="ci")
    assert not _bad(outcomes), "\n".join(_bad(outcomes))
    assert {o.rule for o in outcomes if o.status == "pass"} >= {
        "report.server.auth",
        "report.server.too_large",
        "report.server.content_type",
        "report.server.not_json",
        "report.server.invalid",
        "report.server.newest_wins",
    }


def test_cli_json_and_exit_status() -> None:
    ok = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainrecord_conformance.cli",
            "run",
            "--target",
            "python",
            "--rules",
            "canonical.*",
            "--examples",
            "5",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert data["totals"] == {"pass": 2}
    assert {r["rule"] for r in data["rules"]} == {"canonical.line", "canonical.config"}
    bad = subprocess.run(
        [sys.executable, "-m", "trainrecord_conformance.cli", "run", "--target", "bogus"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "unknown target" in bad.stderr


def _run_in(work: Path, **env_vars: str) -> None:
    """Run a small conformance run from ``work`` with XDG_*/HYPOTHESIS_* removed from the
    environment and ``env_vars`` set; assert it passed and left ``work`` empty."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "HYPOTHESIS_"))}
    env.update(env_vars, PYTHONPATH=os.pathsep.join(sys.path))
    command = [sys.executable, "-m", "trainrecord_conformance.cli", "run", "--target", "python"]
    command += ["--rules", "canonical.line", "--examples", "5"]
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert list(work.iterdir()) == []


def test_a_run_leaves_no_hypothesis_folder_in_the_working_directory(tmp_path: Path) -> None:
    # Hypothesis keeps a cache of constants in ./.hypothesis unless told otherwise: a
    # conformance run from someone's project folder left one there (release probe). The
    # CLI puts it in the user's cache folder; HYPOTHESIS_STORAGE_DIRECTORY still decides.
    work, home, chosen = tmp_path / "project", tmp_path / "home", tmp_path / "chosen"
    work.mkdir()
    _run_in(work, HOME=str(home))
    assert (home / ".cache" / "trainrecord-conformance" / "hypothesis").is_dir()
    _run_in(work, HOME=str(home), HYPOTHESIS_STORAGE_DIRECTORY=str(chosen))
    assert chosen.is_dir()


def test_with_no_usable_home_the_cache_goes_to_the_temporary_folder(tmp_path: Path) -> None:
    # with no HOME and no passwd entry "~" stays "~" (a relative HOME likewise), and a
    # relative XDG_CACHE_HOME is to be ignored: each made a cache folder inside the
    # working folder (review)
    work, temp = tmp_path / "project", tmp_path / "temp"
    work.mkdir()
    temp.mkdir()
    _run_in(work, HOME="home", XDG_CACHE_HOME="cache", TMPDIR=str(temp))
    assert (temp / "trainrecord-conformance" / "hypothesis").is_dir()
