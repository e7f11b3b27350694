"""The Node implementation's seal writes record.json and record.sig as the Python one does
(tests/cli/test_reseal_modes.py, tests/cli/test_seal_write_failure.py): a reseal keeps each
file's permission bits, a new file gets the umask's, and a reseal whose record.sig cannot
be put in place or removed puts the old record.json back, so the record still verifies.

Before, the Node seal replaced both files under the umask's bits, removed an old record.sig
before record.json was written, and left a new record.json beside a record.sig it could not
change. Real files, the real harness process; ``chattr +i`` where allowed (root)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.diary.helpers import mode, umask_bits, write_run
from tests.typescript.node_harness import Harness
from trainrecord.diary import load_public_key, verify
from trainrecord.diary.keys import generate_keypair

pytestmark = pytest.mark.xdist_group("node")


def _signed_run(tmp_path: Path, harness: Harness) -> tuple[Path, Path, Path]:
    """A record sealed and signed by the Node seal: its folder, private and public key."""
    run = tmp_path / "run"
    write_run(run, seal=False)
    key, pub, _ = generate_keypair(tmp_path / "k.pem", tmp_path / "k.pub")
    harness.run("seal", dir=str(run), key=str(key))
    return run, key, pub


def test_a_node_reseal_keeps_the_modes_and_a_new_signature_gets_the_umask(
    harness: Harness, tmp_path: Path
) -> None:
    run, key, pub = _signed_run(tmp_path, harness)
    seal, sig = run / "record.json", run / "record.sig"
    os.chmod(seal, 0o640)
    os.chmod(sig, 0o600)
    harness.run("seal", dir=str(run), key=str(key))
    assert (oct(mode(seal)), oct(mode(sig))) == (oct(0o640), oct(0o600))
    os.chmod(seal, 0o444)  # read-only as well: the rename replaces it all the same
    harness.run("seal", dir=str(run), key=str(key))
    assert (oct(mode(seal)), oct(mode(sig))) == (oct(0o444), oct(0o600))
    assert verify(run, public_key=load_public_key(pub), workers=1).ok
    harness.run("seal", dir=str(run))  # unsigned: record.sig goes
    assert sorted(os.listdir(run)) == ["diary.jsonl", "metrics.jsonl", "record.json"]
    harness.run("seal", dir=str(run), key=str(key))  # signed again: a new record.sig
    assert oct(mode(sig)) == oct(umask_bits()) and oct(mode(seal)) == oct(0o444)


@pytest.mark.parametrize("resign", [True, False], ids=["signed", "unsigned"])
def test_a_node_reseal_whose_record_sig_cannot_be_changed_puts_record_json_back(
    harness: Harness, tmp_path: Path, resign: bool
) -> None:
    run, key, pub = _signed_run(tmp_path, harness)
    seal, sig = run / "record.json", run / "record.sig"
    seal.chmod(0o440)
    before = {p.name: p.read_bytes() for p in (seal, sig)}
    if subprocess.run(["chattr", "+i", str(sig)], capture_output=True, check=False).returncode:
        pytest.skip("chattr +i is not allowed here (root on a file system that has it)")
    try:
        harness.seq += 1
        answer = harness.request(
            {
                "cmd": "run",
                "seq": harness.seq,
                "op": "seal",
                "input": {"dir": str(run), **({"key": str(key)} if resign else {})},
            }
        )
    finally:
        subprocess.run(["chattr", "-i", str(sig)], check=True)
    assert answer["outcome"] == "error" and "EPERM" in answer.get("message", ""), answer
    assert {p.name: p.read_bytes() for p in (seal, sig)} == before
    assert oct(mode(seal)) == oct(0o440)
    assert sorted(os.listdir(run)) == ["diary.jsonl", "metrics.jsonl", "record.json", "record.sig"]
    assert verify(run, public_key=load_public_key(pub), workers=1).ok
