"""trainrecord-conformance never prints a secret of a target's URL: a password (or a lone
user name), query values and the fragment are shown as ``***`` in the header line, in
``--json`` and in "cannot start target" (the misuse probe found ``--target
https://user:hunter2@host/...`` printed whole). A real CLI process against the reference
receiver over loopback TLS; fails before the fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from trainrecord.report import ReportServer, ReportStore, make_server
from trainrecord_conformance.targets import HttpTarget, shown_target

TOKEN = "shown-target-token-0123456789"
SECRETS = ("hunter2", "Q5s3cr3tQ", "F5s3cr3tF")


@pytest.fixture
def tls_receiver(tmp_path: Path) -> Iterator[tuple[ReportServer, str]]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    ca.cert_pem.write_to_path(tmp_path / "ca.pem")
    cert.private_key_pem.write_to_path(tmp_path / "key.pem")
    for i, blob in enumerate(cert.cert_chain_pems):
        blob.write_to_path(tmp_path / "cert.pem", append=i > 0)
    server = make_server(
        "127.0.0.1",
        0,
        token=TOKEN,
        store=ReportStore(tmp_path / "r.sqlite"),
        certfile=str(tmp_path / "cert.pem"),
        keyfile=str(tmp_path / "key.pem"),
    )
    server.serve_in_thread()
    yield server, str(tmp_path / "ca.pem")
    server.close()


def _run(target: str, ca: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "trainrecord_conformance.cli",
            "run",
            "--target",
            target,
            "--ca-file",
            ca,
            "--token",
            TOKEN,
            "--rules",
            "report.server.auth",
            "--examples",
            "2",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HYPOTHESIS_PROFILE": "ci"},
    )


def test_the_cli_never_prints_a_targets_password_query_or_fragment(
    tls_receiver: tuple[ReportServer, str],
) -> None:
    server, ca = tls_receiver
    port = server.server_address[1]
    target = f"https://user:hunter2@127.0.0.1:{port}/api/runs?key=Q5s3cr3tQ#F5s3cr3tF"
    shown = f"https://user:***@127.0.0.1:{port}/api/runs?key=***#***"
    text = _run(target, ca)
    json_run = _run(target, ca, "--json")
    for run in (text, json_run):
        assert run.returncode in (0, 1), run.stderr
        for secret in SECRETS:
            assert secret not in run.stdout and secret not in run.stderr
    assert f"target {shown} ({shown}, http)" in text.stdout
    data = json.loads(json_run.stdout)
    assert data["target"] == shown and data["implementation"]["name"] == shown


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ("https://user:hunter2@h/api", "https://user:***@h/api"),
        ("https://TOKEN123@h/api", "https://***@h/api"),
        (
            "http://127.0.0.1:8787/api/runs?token=abc&x#frag",
            "http://127.0.0.1:8787/api/runs?token=***&***#***",
        ),
        ("https://h/api/runs", "https://h/api/runs"),
        ("python", "python"),
        ("exec:node harness.js", "exec:node harness.js"),
    ],
)
def test_a_target_is_shown_without_its_secrets(spec: str, shown: str) -> None:
    assert shown_target(spec) == shown
    if spec.startswith("http"):
        target = HttpTarget(spec, token="t")
        assert target.name == shown and target.implementation["name"] == shown
        assert target.server()[0] == spec  # the checks still use the URL as given


def test_the_runtimes_warnings_stay_off_the_report() -> None:
    # make conformance printed 150 of the runtime's warnings (a resumed record no seal
    # vouches for, made on purpose by the checks) between the progress and the summary
    import subprocess
    import sys

    CLI = [sys.executable, "-m", "trainrecord_conformance.cli"]
    done = subprocess.run(
        [*CLI, "run", "--target", "python", "--rules", "diary.writer.resume", "--profile", "ci"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "OK: 1 rules" in done.stdout
    assert "trainrecord: " not in done.stderr and "trainrecord: " not in done.stdout
