"""What a CI pipeline and a model registry do to a record, each command a real process on
real files (the runtime's own writers): a checkout that converts line ends to CRLF, a
record sealed while its run is still writing it, a read-only mount, a folder holding no
record file, a folder name that is not UTF-8 in ``--json``. Each test failed before its fix
(a pipeline probe found them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import read_only_bind
from tests.diary.helpers import BODIES, cli, write_run
from trainrecord.diary import DiaryWriter, MetricsWriter, generate_keypair

CONVERTED = "with LF line ends it matches: a Windows checkout (git's core.autocrlf)"
"""What verify adds to a digest or signature failure of a file converted to CRLF."""


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("pipeline-probe")
    priv, pub, _ = generate_keypair(root / "keys" / "signer")
    write_run(root / "signed", repeat=3, signing_key=priv)
    return {"root": root, "run": root / "signed", "key": priv, "pub": pub}


def _copy(records: dict[str, Path], tmp_path: Path, name: str = "run") -> Path:
    run = tmp_path / name
    shutil.copytree(records["run"], run)
    return run


def _to_crlf(path: Path) -> None:
    """What git's core.autocrlf does to a text file on a Windows checkout."""
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("metrics.jsonl", "[diary.metrics.sha256]"),
        ("diary.jsonl", "[seal.diary.sha256]"),
        ("record.json", "[seal.signature.invalid]"),
    ],
)
def test_a_file_converted_to_crlf_fails_naming_its_line_ends_and_what_to_do(
    signed: dict[str, Path], tmp_path: Path, name: str, rule: str
) -> None:
    """The verdict stays FAILED (exit 1: the bytes are not the ones pinned), but it said only
    "does not match" / "differs" / "not a valid signature", as for tampering; it now says
    the file has CRLF line ends, that with LF line ends it matches, and how to undo it."""
    run = _copy(signed, tmp_path)
    _to_crlf(run / name)
    out = cli("verify", run, "--key", signed["pub"])
    assert out.returncode == 1, out.stdout + out.stderr[-2000:]
    assert rule in out.stdout and f"{name} has CRLF line ends, and {CONVERTED}" in out.stdout
    assert "dos2unix" in out.stdout and "-text` in .gitattributes" in out.stdout
    for file in ("diary.jsonl", "metrics.jsonl", "record.json"):  # dos2unix: verifies again
        path = run / file
        path.write_bytes(path.read_bytes().replace(b"\r\n", b"\n"))
    assert cli("verify", run, "--key", signed["pub"]).returncode == 0


def test_a_whole_record_checked_out_with_crlf_names_the_conversion(
    signed: dict[str, Path], tmp_path: Path
) -> None:
    run = _copy(signed, tmp_path)
    for name in ("diary.jsonl", "metrics.jsonl", "record.json", "record.sig"):
        _to_crlf(run / name)
    for command in ("verify", "show"):
        out = cli(command, run, "--key", signed["pub"])
        assert out.returncode == 1, out.stdout + out.stderr[-2000:]
        assert "[diary.metrics.sha256]" in out.stdout and CONVERTED in out.stdout


def test_a_crlf_file_changed_beyond_its_line_ends_is_not_called_converted(
    signed: dict[str, Path], tmp_path: Path
) -> None:
    run = _copy(signed, tmp_path)
    path = run / "metrics.jsonl"
    path.write_bytes(path.read_bytes().replace(b"2.3", b"2.4", 1))
    _to_crlf(path)
    out = cli("verify", run)
    assert out.returncode == 1 and "[diary.metrics.sha256]" in out.stdout, out.stdout
    assert "with LF line ends it does not match either" in out.stdout
    assert "dos2unix" not in out.stdout


def test_seal_refuses_a_record_whose_writer_is_still_open(tmp_path: Path) -> None:
    """A pipeline step sealing a run still in progress sealed it: the writer's next row
    made the intact record FAILED (seal.metrics.sha256), for good if the run then crashed."""
    run = tmp_path / "live"
    with DiaryWriter(run) as diary, MetricsWriter(run) as metrics:
        diary.append("run_start", BODIES["run_start"])
        metrics.append({"step": 0, "loss": 2.3, "grad": {"fc": 0.1}, "stuck": {"fc": [0] * 4}})
        out = cli("seal", run)
        assert out.returncode == 2, out.stdout + out.stderr[-2000:]
        err = out.stderr.strip()
        assert "Traceback" not in err and "\n" not in err, err
        assert "[diary.writer.locked] diary.jsonl: a writer" in err
        assert "the writer seals the record when it closes" in err
        assert not (run / "record.json").exists()
        metrics.append({"step": 1, "loss": 2.2, "grad": {"fc": 0.1}, "stuck": {"fc": [0] * 4}})
        end = {**BODIES["run_end"], "checks": 2, "metrics_sha256": metrics.sha256()}
        diary.append("run_end", end)
    assert cli("verify", run).returncode == 0  # sealed by the writer at close
    assert cli("seal", run).returncode == 0  # and once no writer is left, by seal too


def test_seal_refuses_while_only_the_metrics_writer_is_open(tmp_path: Path) -> None:
    run = tmp_path / "live"
    write_run(run, seal=False)
    with MetricsWriter(run):
        out = cli("seal", run)
    assert out.returncode == 2 and "[diary_metrics.writer.locked] metrics.jsonl" in out.stderr
    assert not (run / "record.json").exists()


def test_validate_json_on_a_folder_without_record_files_says_not_valid(tmp_path: Path) -> None:
    """--json said "valid": true with exit 2, and nothing on stderr said why."""
    (tmp_path / "notes.json").write_text("{}", encoding="utf-8")
    out = cli("validate", "--json", tmp_path)
    assert out.returncode == 2
    assert json.loads(out.stdout) == {"valid": False, "files": []}
    assert "no record files found in" in out.stderr and "observed.attempt<N>.json" in out.stderr


def test_verify_json_of_a_folder_name_not_utf8_is_json_any_reader_takes(
    signed: dict[str, Path], tmp_path: Path
) -> None:
    """verify --json wrote the name's surrogate as a lone \\udce9 escape, which RFC 8259
    leaves to each reader (serde_json refuses it, jq makes it U+FFFD); validate --json
    escaped it. Both now write the escape as text: "caf\\\\udce9"."""
    run = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9"))
    try:
        shutil.copytree(signed["run"], run)
    except (OSError, UnicodeEncodeError):  # pragma: no cover - a file system that refuses it
        pytest.skip("this file system takes no file name that is not UTF-8")
    for command in ("verify", "validate"):
        out = subprocess.run(
            [sys.executable, "-m", "trainrecord.cli", command, "--json", os.fsencode(run)],
            capture_output=True,
            check=False,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        out.stdout.decode("utf-8", "strict")
        doc = json.loads(out.stdout)
        name = doc["run_dir"] if command == "verify" else doc["files"][0]["path"]
        name.encode("utf-8", "strict")  # no lone surrogate
        assert name.startswith(str(tmp_path) + "/caf\\udce9")


def test_seal_on_a_read_only_mount_names_record_json_and_what_to_do(tmp_path: Path) -> None:
    """An unsealed record on a read-only mount: seal said "Read-only file system:
    .../record.sig", a file that is not there (it removed record.sig first)."""
    run = tmp_path / "run"
    write_run(run, seal=False)
    target = tmp_path / "ro"
    out = read_only_bind(
        run, target, [sys.executable, "-m", "trainrecord.cli", "seal", str(target)]
    )
    assert out.returncode == 2, out.stdout + out.stderr[-2000:]
    err = out.stderr.strip()
    assert "Traceback" not in err and "\n" not in err and "record.sig" not in err, err
    assert f"could not write {target}/record.json: Read-only file system (EROFS)" in err
    assert "the record is not sealed" in err and "a read-only mount): remount it writable" in err


def test_a_failed_reseal_keeps_the_signature_it_would_have_removed(
    signed: dict[str, Path], tmp_path: Path
) -> None:
    """seal --replace without --key removed record.sig before writing record.json: when the
    write failed (here record.json cannot be replaced: immutable), the old signed seal was
    left without its signature, and the intact record failed seal.signature.missing."""
    run = _copy(signed, tmp_path)
    seal = run / "record.json"
    if subprocess.run(["chattr", "+i", str(seal)], capture_output=True, check=False).returncode:
        pytest.skip("chattr +i is not allowed here (root on a file system that has it)")
    try:
        out = cli("seal", run, "--replace")
    finally:
        subprocess.run(["chattr", "-i", str(seal)], check=True)
    assert out.returncode == 2 and "record.json" in out.stderr, out.stderr[-2000:]
    assert (run / "record.sig").exists()
    assert cli("verify", run, "--key", signed["pub"]).returncode == 0
