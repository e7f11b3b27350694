"""Command-line misuse found by a probe, each as a real process: one line on stderr and exit
status 2 (or the file's problem with its rule and exit 1), never a traceback, a hang or a
half-made key pair."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.diary.helpers import cli

CONFORMANCE = [sys.executable, "-m", "trainrecord_conformance.cli"]
DEEP = "[" * 100_000 + "]" * 100_000


def one_line(out: subprocess.CompletedProcess[str], status: int = 2) -> str:
    err = out.stderr.strip()
    assert out.returncode == status, (out.returncode, out.stdout[-500:], out.stderr[-2000:])
    assert "Traceback" not in err and "\n" not in err, err
    return err


def test_validate_refuses_a_fifo_instead_of_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "metrics.json"
    os.mkfifo(fifo)
    err = one_line(cli("validate", fifo))  # cli() times out (a hang) after 120 s
    assert err == (
        f"{fifo}: error: cannot read the file: not a regular file (a FIFO, socket or device): "
        "give a record file"
    )


def test_json_nested_deeper_than_the_parser_goes_is_a_problem_of_the_file(tmp_path: Path) -> None:
    (tmp_path / "metrics.json").write_text(DEEP)
    out = cli("validate", tmp_path / "metrics.json")
    assert out.returncode == 1 and not out.stderr, out.stderr[-2000:]
    assert "[metrics.file.json]" in out.stdout and "nested too deeply" in out.stdout
    run = tmp_path / "run"
    run.mkdir()
    (run / "diary.jsonl").write_text(DEEP + "\n")
    out = cli("verify", run)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "[diary.file.json]" in out.stdout and "nested too deeply" in out.stdout
    out = cli("show", run)  # verified first: the verdict heads what it can show
    assert out.returncode == 1 and not out.stderr, out.stderr[-2000:]
    assert out.stdout.startswith("integrity: FAILED: diary.jsonl line 1")
    assert "[diary.file.json]" in out.stdout and "nested too deeply" in out.stdout
    assert "nested too deeply" in one_line(cli("show", "--no-verify", run))


@pytest.mark.parametrize("port", ["-1", "99999", "abc"])
def test_serve_refuses_a_port_outside_0_to_65535(port: str) -> None:
    out = cli("serve", "--port", port)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "argument --port:" in out.stderr and "give from 0 to 65535" in out.stderr


def test_keygen_names_the_file_in_the_way_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    err = one_line(cli("keygen", tmp_path / "afile" / "key"))
    assert err == (
        f"trainrecord keygen: the key's folder {tmp_path / 'afile'} is a file, not a folder; "
        "give a folder (it is made when missing)"
    )
    public = tmp_path / "afile" / "deeper" / "k.pub"
    err = one_line(cli("keygen", tmp_path / "new" / "key", "--public", public))
    assert f"sits under {tmp_path / 'afile'}, which is a file" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # no folder made either


def test_keygen_removes_the_private_key_when_the_public_one_cannot_be_written(
    tmp_path: Path,
) -> None:
    # /proc takes no new file, not even from root (file modes do not stop root)
    public = Path("/proc/self/trainrecord-test-key.pub")
    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc here")
    err = one_line(cli("keygen", tmp_path / "key", "--public", public))
    assert str(public) in err
    assert not (tmp_path / "key").exists()


@pytest.mark.parametrize("examples", ["-3", "0", "many"])
def test_conformance_refuses_examples_below_one(examples: str) -> None:
    out = subprocess.run(
        [*CONFORMANCE, "run", "--target", "python", "--examples", examples],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "argument --examples:" in out.stderr and "give 1 or more" in out.stderr


def test_verify_says_a_diary_link_leads_nowhere_or_loops(tmp_path: Path) -> None:
    dangling, looping = tmp_path / "a", tmp_path / "b"
    dangling.mkdir()
    looping.mkdir()
    (dangling / "diary.jsonl").symlink_to(tmp_path / "nowhere" / "x")
    (looping / "diary.jsonl").symlink_to("diary.jsonl")
    out = cli("verify", dangling)
    assert out.returncode == 1, out.stderr
    assert f"is a link to {tmp_path / 'nowhere' / 'x'}, which does not exist" in out.stdout
    out = cli("verify", looping)
    assert out.returncode == 1, out.stderr
    assert "is a link that loops back on itself" in out.stdout


def test_open_run_names_the_file_in_the_way_of_its_folder(tmp_path: Path) -> None:
    # open_run on a file said "File exists" (mkdir's words) about a path that is a file
    from trainrecord.report import open_run

    (tmp_path / "afile").write_text("")
    (tmp_path / "loop").symlink_to("loop")
    for folder, kind in ((tmp_path / "afile", "a file"), (tmp_path / "loop", "a link loop")):
        with pytest.raises(NotADirectoryError) as caught:
            open_run(folder / "run")
        assert caught.value.filename == str(folder)
        assert f"sits under {folder}, which is {kind}" in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "loop"]


def test_an_os_error_without_strerror_shows_its_message(capsys: pytest.CaptureFixture[str]) -> None:
    # A review: the CLI printed exc.strerror or the class name, so TimeoutError("timed out
    # reading the server") came out as the bare word "TimeoutError"
    import argparse

    from trainrecord.cli import run_parser

    def fail(args: argparse.Namespace) -> int:
        raise TimeoutError("timed out reading the server")

    parser = argparse.ArgumentParser(prog="trainrecord")
    parser.add_subparsers(dest="command").add_parser("x").set_defaults(func=fail)
    assert run_parser(parser, ["x"], "trainrecord") == 2
    assert capsys.readouterr().err == "trainrecord x: timed out reading the server\n"


def test_keygen_overwrite_keeps_the_old_pair_when_the_new_one_cannot_be_written(
    tmp_path: Path,
) -> None:
    # A review: with overwrite=True the old private key was truncated and rewritten before
    # the public key failed, then removed: the old pair lost, a .pub left without its key
    from trainrecord.diary import generate_keypair

    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc here")
    old, _, _ = generate_keypair(tmp_path / "key")
    before = old.read_bytes()
    with pytest.raises(OSError) as caught:
        generate_keypair(old, Path("/proc/self/trainrecord-test.pub"), overwrite=True)
    assert caught.value.filename == "/proc/self/trainrecord-test.pub"
    assert old.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["key", "key.pub"]


def test_a_field_name_from_the_file_never_acts_on_the_terminal(tmp_path: Path) -> None:
    # A field name is part of the problem's path: it was shown as the file wrote it, so a
    # name holding ESC [2J cleared the terminal and U+202E turned the rest of the line round.
    (tmp_path / "metrics.json").write_text('[{"x\\u001b[2Jy\\u202ez\\u0085": 1}]')
    out = cli("validate", tmp_path / "metrics.json")
    assert out.returncode == 1 and not out.stderr, out.stderr[-2000:]
    [line] = [x for x in out.stdout.splitlines() if "[metrics.row.extra]" in x]
    assert "[0].x\\x1b[2Jy\\u202ez\\x85: field" in line, line
    assert not {"\x1b", "\u202e", "\x85"} & set(out.stdout)
