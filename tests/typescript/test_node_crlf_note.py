"""The Node verifier says what the Python one says of a record whose line ends became CRLF.

Python's ``trainrecord verify`` follows a digest or signature failure of a file that holds
CR LF line ends with a note: whether the file with LF line ends matches (a Windows
checkout, git's ``core.autocrlf``, converted it: ``dos2unix`` and ``-text`` in
.gitattributes) or does not (more than its line ends was changed). The Node verifier gave
the same verdict and rule with no note. Both verifiers now give the same message, word for
word, for every place the note is given: the metrics digest of a run_end, the seal's
diary and metrics digests, record.sig that is not one line of base64, and a signature that
holds only over the LF bytes. Real records (the Python writers), the real Node verifier
in a child process; failed before the fix (Node's messages had no note)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.diary.helpers import BODIES, write_run
from tests.typescript.node_harness import NODE_IMPL, require_node
from trainrecord.diary import DiaryWriter, MetricsWriter, generate_keypair, write_seal
from trainrecord.diary import verify as python_verify

ROW = {"step": 0, "loss": 2.3, "grad": {"conv1.0": 0.01}, "stuck": {"conv1.0": [0, 0, 0, 0]}}


def node_verify(folder: Path, key: Path | None) -> dict[str, Any]:
    """Node's verifyDiary on ``folder`` (with the public key file ``key``) in a child."""
    script = (
        'const { verifyDiary } = require("./lib/diary");'
        'const { loadPublicKey } = require("./lib/keys");'
        "const key = process.argv[2] ? loadPublicKey(process.argv[2]) : null;"
        "const r = verifyDiary(process.argv[1], { publicKey: key });"
        "process.stdout.write(JSON.stringify({ status: r.status, failure: r.failure },"
        ' (k, v) => (typeof v === "bigint" ? Number(v) : v)));'
    )
    out = subprocess.run(
        [require_node(), "-e", script, str(folder), str(key or "")],
        cwd=NODE_IMPL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def crlf(path: Path) -> None:
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))


def unended(run: Path) -> None:
    """A sealed record with metrics and no run_end (so the seal, not a run_end, pins the
    metrics digest)."""
    with DiaryWriter(run, seal=False) as w, MetricsWriter(run) as m:
        w.append("run_start", BODIES["run_start"])
        m.append(ROW)
    write_seal(run)


def metrics_crlf(run: Path, keys: Path) -> None:
    write_run(run)
    crlf(run / "metrics.jsonl")


def metrics_crlf_and_changed(run: Path, keys: Path) -> None:
    write_run(run)
    path = run / "metrics.jsonl"
    path.write_bytes(path.read_bytes().replace(b'"loss":2.3', b'"loss":9.3', 1))
    crlf(path)


def diary_crlf(run: Path, keys: Path) -> None:
    write_run(run)
    crlf(run / "diary.jsonl")


def sealed_metrics_crlf(run: Path, keys: Path) -> None:
    unended(run)
    crlf(run / "metrics.jsonl")


def signature_crlf(run: Path, keys: Path) -> None:
    write_run(run)
    write_seal(run, signing_key=keys / "signer")
    crlf(run / "record.sig")


def seal_crlf(run: Path, keys: Path) -> None:
    write_run(run)
    write_seal(run, signing_key=keys / "signer")
    crlf(run / "record.json")


CASES = {
    "metrics": (metrics_crlf, "diary.metrics.sha256", "it matches"),
    "metrics-changed": (metrics_crlf_and_changed, "diary.metrics.sha256", "not match either"),
    "diary": (diary_crlf, "seal.diary.sha256", "it matches"),
    "sealed-metrics": (sealed_metrics_crlf, "seal.metrics.sha256", "it matches"),
    "record-sig": (signature_crlf, "seal.signature.format", "record.sig has CRLF line ends: "),
    "record-json": (seal_crlf, "seal.signature.invalid", "it matches"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_node_gives_the_crlf_note_python_gives(tmp_path: Path, case: str) -> None:
    make, rule, said = CASES[case]
    require_node()
    keys = tmp_path / "keys"
    _, pub, _ = generate_keypair(keys / "signer")
    run = tmp_path / "run"
    make(run, keys)
    key = pub if (run / "record.sig").exists() else None
    expected = python_verify(run, workers=1, public_key=key)
    assert expected.status == "failed" and expected.failure is not None
    assert expected.failure.rule == rule and "CRLF line ends" in expected.failure.message
    assert said in expected.failure.message
    got = node_verify(run, key)
    assert got["status"] == "failed"
    assert (got["failure"]["rule"], got["failure"]["message"]) == (
        rule,
        expected.failure.message,
    )
