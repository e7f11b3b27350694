"""A reseal that fails part-way leaves the record's seal as it was, and says so in one line.

``trainrecord seal --key KEY --replace RUN`` on a signed record wrote record.json, then
record.sig; when record.sig could not be written (a full disk) or put in place (an immutable
file), it deleted record.json: the record that verified before, signed, then failed
verification (no seal). Now both files are written beside their names first and then
renamed, record.json first, and a failure puts the old bytes back (or never replaced them).
Real files, real processes: a real full tmpfs (root only) and ``chattr +i`` (where allowed);
each test skips where its file system cannot be had. Each failed before the fix.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.diary.helpers import cli, write_run
from trainrecord.diary import generate_keypair

SEAL_FILES = ("record.json", "record.sig")


def _signed(where: Path, keys: Path) -> tuple[Path, dict[str, Path]]:
    """A record signed by key "old" in ``where``/run, and the paths of keys old and new."""
    old, old_pub, _ = generate_keypair(keys / "old")
    new, _, _ = generate_keypair(keys / "new")
    run = where / "run"
    write_run(run, signing_key=old)
    return run, {"old": old, "old_pub": old_pub, "new": new}


def _seal_bytes(run: Path) -> dict[str, bytes]:
    return {name: (run / name).read_bytes() for name in SEAL_FILES}


def _fill(fs: Path, leave: int) -> None:
    """Fill the tmpfs ``fs`` up to ``leave`` free bytes (a whole number of pages)."""
    stat = os.statvfs(fs)
    free = stat.f_bavail * stat.f_frsize
    (fs / "filler").write_bytes(b"\0" * (free - leave))
    stat = os.statvfs(fs)
    assert stat.f_bavail * stat.f_frsize == leave


def _one_clear_line(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 2, out.stdout + out.stderr[-2000:]
    err = out.stderr.strip()
    assert "Traceback" not in err and "\n" not in err, err
    return err


def test_a_reseal_whose_record_sig_does_not_fit_keeps_the_signed_seal(
    small_fs: Callable[[str], Path], tmp_path: Path
) -> None:
    """A full disk with room for record.json and none for record.sig: refused, the old seal
    and signature stay, and the record still verifies with the old key.

    A reader holds the old record.json open (a verify or a backup running meanwhile), so
    replacing it frees no room: the old code wrote record.json, failed at record.sig and
    deleted record.json (seal.missing)."""
    fs = small_fs("64k")
    run, keys = _signed(fs, tmp_path / "keys")
    before = _seal_bytes(run)
    page = os.statvfs(fs).f_frsize
    assert len(before["record.json"]) < page  # one page for a new record.json, none after
    _fill(fs, leave=page)
    with open(run / "record.json", "rb"):
        out = cli("seal", "--key", keys["new"], "--replace", run)
    assert sorted(os.listdir(run)) == ["diary.jsonl", "metrics.jsonl", *SEAL_FILES]
    assert _seal_bytes(run) == before
    (fs / "filler").unlink()
    assert cli("verify", "--key", keys["old_pub"], run).returncode == 0
    err = _one_clear_line(out)
    assert f"could not write {run}/record.sig: No space left on device (ENOSPC)" in err, err
    assert "the seal is not replaced (record.json and record.sig" in err, err
    assert "Free space on that disk" in err, err


@pytest.mark.parametrize("resign", [True, False], ids=["another-key", "unsigned"])
def test_a_reseal_whose_record_sig_cannot_be_changed_puts_record_json_back(
    tmp_path: Path, resign: bool
) -> None:
    """record.sig immutable (``chattr +i``): record.json was already replaced when
    record.sig could not be (with a key) or removed (without one); the old code left the
    new record.json (deleted with a key; unsigned, beside the old record.sig, without one),
    and the record failed verification. The old record.json is put back now."""
    run, keys = _signed(tmp_path, tmp_path / "keys")
    before = _seal_bytes(run)
    sig = run / "record.sig"
    if subprocess.run(["chattr", "+i", str(sig)], capture_output=True, check=False).returncode:
        pytest.skip("chattr +i is not allowed here (root on a file system that has it)")
    try:
        out = cli("seal", *(("--key", keys["new"]) if resign else ()), "--replace", run)
    finally:
        subprocess.run(["chattr", "-i", str(sig)], check=True)
    assert sorted(os.listdir(run)) == ["diary.jsonl", "metrics.jsonl", *SEAL_FILES]
    assert _seal_bytes(run) == before
    assert cli("verify", "--key", keys["old_pub"], run).returncode == 0
    err = _one_clear_line(out)
    verb = "write" if resign else "remove"
    assert f"could not {verb} {run}/record.sig: Operation not permitted (EPERM)" in err, err
    assert "the seal is not replaced (record.json and record.sig" in err, err


def test_a_put_back_record_json_keeps_its_permission_bits(tmp_path: Path) -> None:
    """The old record.json put back after record.sig failed keeps its mode, not only its
    bytes: a seal its owner made read-only (0o440) was put back 0o644 (a fresh file under
    the umask) while the error said record.json was "as it was"."""
    run, keys = _signed(tmp_path, tmp_path / "keys")
    seal = run / "record.json"
    seal.chmod(0o440)
    before = _seal_bytes(run)
    sig = run / "record.sig"
    if subprocess.run(["chattr", "+i", str(sig)], capture_output=True, check=False).returncode:
        pytest.skip("chattr +i is not allowed here (root on a file system that has it)")
    try:
        out = cli("seal", "--key", keys["new"], "--replace", run)
    finally:
        subprocess.run(["chattr", "-i", str(sig)], check=True)
    assert "the seal is not replaced (record.json and record.sig" in _one_clear_line(out)
    assert _seal_bytes(run) == before
    assert oct(seal.stat().st_mode & 0o7777) == oct(0o440)
    assert sorted(os.listdir(run)) == ["diary.jsonl", "metrics.jsonl", *SEAL_FILES]
