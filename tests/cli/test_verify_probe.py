"""`trainrecord verify` after the tamper probe (items 2, 4, 8, 9, 10), each as a real
process: a verdict on deep nesting, not a traceback; a key problem said for any record;
the summary and --json telling an unsigned seal from an unchecked signature, and showing
what the seal covers."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from tests.diary.helpers import BODIES, cli, write_run
from trainrecord.diary import DiaryWriter, generate_keypair


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("verify-probe")
    priv, pub, _ = generate_keypair(root / "keys" / "signer")
    write_run(root / "unsigned", repeat=1)
    write_run(root / "signed", repeat=1, signing_key=priv)
    return {"root": root, "unsigned": root / "unsigned", "signed": root / "signed", "pub": pub}


def test_verify_of_a_config_nested_300_deep_is_ok_not_a_traceback(tmp_path: Path) -> None:
    """DiaryWriter writes it and the seed's snippet verifies it; verify printed a traceback
    (orjson's TypeError "Recursion limit reached"), exit 1, no FAILED line."""
    fields = {**BODIES["run_start"], "config": {"x": json.loads("[" * 300 + "]" * 300)}}
    with DiaryWriter(tmp_path, seal=False) as writer:
        writer.append("run_start", fields)
    out = cli("verify", tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr[-2000:]
    assert "Traceback" not in out.stderr and out.stdout.startswith("OK: 1 line verified")


def test_verify_says_not_signed_for_an_unsigned_seal(records: dict[str, Path]) -> None:
    out = cli("verify", records["unsigned"])
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.endswith(", not signed)") and "not checked" not in out.stdout
    seal = json.loads((records["unsigned"] / "record.json").read_text())
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seal["sealed_at"]))
    assert f"sealed {stamp} over {seal['diary']['lines']} lines" in first
    doc = json.loads(cli("verify", records["unsigned"], "--json").stdout)
    assert (doc["signature"], doc["sealed_at"], doc["sealed_lines"]) == (
        "absent",
        seal["sealed_at"],
        seal["diary"]["lines"],
    )


def test_verify_says_signature_not_checked_and_how_to_check_it(records: dict[str, Path]) -> None:
    out = cli("verify", records["signed"])
    assert out.returncode == 0, out.stderr
    assert "signed, signature not checked: pass --key PUBLIC_KEY to check it" in out.stdout
    doc = json.loads(cli("verify", records["signed"], "--json").stdout)
    assert doc["signature"] == "not checked" and doc["sealed"] and not doc["signed"]
    out = cli("verify", records["signed"], "--key", records["pub"], "--json")
    doc = json.loads(out.stdout)
    assert out.returncode == 0 and doc["signature"] == "valid" and doc["signed"]


def test_an_unsealed_record_names_no_signature(tmp_path: Path) -> None:
    write_run(tmp_path, seal=False)
    out = cli("verify", tmp_path)
    assert out.returncode == 0 and "(ended with run_end, not sealed)" in out.stdout
    doc = json.loads(cli("verify", tmp_path, "--json").stdout)
    assert (doc["signature"], doc["sealed_at"], doc["sealed_lines"]) == (None, None, None)


@pytest.mark.parametrize("record", ["unsigned", "signed"])
def test_a_missing_or_garbage_key_is_a_usage_error_signed_or_not(
    records: dict[str, Path], record: str
) -> None:
    """For an unsigned record the key was never read: a missing --key file gave
    seal.signature.missing (exit 1) as if the key were fine."""
    run, root = records[record], records["root"]
    out = cli("verify", run, "--key", root / "nope.pub")
    err = out.stderr.strip()
    assert out.returncode == 2 and "Traceback" not in err and "\n" not in err, err
    assert f"--key {root / 'nope.pub'}: No such file or directory" in err
    garbage = root / "garbage.pub"
    garbage.write_text("-----BEGIN PUBLIC KEY-----\nSECRETSTUFF\n-----END PUBLIC KEY-----\n")
    out = cli("verify", run, "--key", garbage)
    assert out.returncode == 2 and "seal.key.format" in out.stderr and str(garbage) in out.stderr
    assert "SECRETSTUFF" not in out.stdout + out.stderr


def test_a_valid_key_for_an_unsigned_record_fails_naming_the_missing_signature(
    records: dict[str, Path],
) -> None:
    out = cli("verify", records["unsigned"], "--key", records["pub"])
    assert out.returncode == 1, out.stdout + out.stderr
    assert "[seal.signature.missing]" in out.stdout
    assert "record.json names no signature and there is no record.sig" in out.stdout


def test_the_torn_summary_claims_no_knowledge_of_intent(tmp_path: Path) -> None:
    write_run(tmp_path, seal=False)
    data = (tmp_path / "diary.jsonl").read_bytes()
    (tmp_path / "diary.jsonl").write_bytes(data[:6000] if len(data) > 6000 else data[:-5])
    out = cli("verify", tmp_path)
    assert out.returncode == 3 and "TORN TAIL" in out.stdout
    assert "not tampering" not in out.stdout
    assert "A cut made on purpose leaves the same" in out.stdout


def test_another_records_seal_is_not_reported_as_an_append(
    records: dict[str, Path], tmp_path: Path
) -> None:
    run = tmp_path / "run"
    write_run(run, repeat=2, seal=False)
    shutil.copy(records["unsigned"] / "record.json", run / "record.json")
    out = cli("verify", run)
    assert out.returncode == 1 and "[seal.diary.lines]" in out.stdout
    assert "appended to" not in out.stdout and "another record's seal" in out.stdout
