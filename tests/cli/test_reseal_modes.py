"""``trainrecord seal`` over a seal that is there keeps record.json's and record.sig's
permission bits; a seal file that was not there gets the umask's.

A reseal wrote each new file beside its name (``0666`` less the umask) and renamed it over
the old one, so a record.sig its owner had made ``0600`` came back ``0644``. Real key
files, real records and the real command line, each in its own process; failed before the
fix (the modes came back as the umask's)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.diary.helpers import cli, mode, umask_bits, write_run


def test_a_reseal_keeps_the_modes_of_record_json_and_record_sig(tmp_path: Path) -> None:
    run, key = tmp_path / "run", tmp_path / "keys" / "signer"
    write_run(run)
    assert cli("keygen", key).returncode == 0
    out = cli("seal", run, "--key", key)
    assert out.returncode == 0, out.stderr
    seal, sig = run / "record.json", run / "record.sig"
    os.chmod(seal, 0o640)
    os.chmod(sig, 0o600)
    out = cli("seal", run, "--key", key)  # the same key: no --replace needed
    assert out.returncode == 0, out.stderr
    assert (oct(mode(seal)), oct(mode(sig))) == (oct(0o640), oct(0o600))
    os.chmod(seal, 0o444)  # read-only as well: the rename replaces it all the same
    out = cli("seal", run, "--key", key)
    assert out.returncode == 0, out.stderr
    assert (oct(mode(seal)), oct(mode(sig))) == (oct(0o444), oct(0o600))
    assert cli("verify", run, "--key", f"{key}.pub").returncode == 0


def test_a_signature_new_to_a_reseal_gets_the_umask(tmp_path: Path) -> None:
    run, key = tmp_path / "run", tmp_path / "signer"
    write_run(run)  # sealed, unsigned: no record.sig yet
    os.chmod(run / "record.json", 0o600)
    assert cli("keygen", key).returncode == 0
    out = cli("seal", run, "--key", key)
    assert out.returncode == 0, out.stderr
    assert oct(mode(run / "record.json")) == oct(0o600)
    assert oct(mode(run / "record.sig")) == oct(umask_bits())
