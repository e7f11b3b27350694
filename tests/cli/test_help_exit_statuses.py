"""``trainrecord demo``, ``keygen`` and ``serve`` list their exit statuses in ``--help`` as
the other commands do, and each status a real failure (or stop) of theirs ends with is one
their help lists. Each command runs as a real process."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

from tests.conftest import read_only_bind
from tests.diary.helpers import cli

TOKEN = {"CORREAD_REPORT_TOKEN": "help-exit-status-token-0123456789"}


def listed(command: str) -> set[int]:
    """The exit statuses ``trainrecord COMMAND --help`` lists (``exit status: 0 ...; 2 ...``)."""
    out = cli(command, "--help")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    found = re.search(r"\bexit status: (.*?)(?: positional arguments:| options:|$)", text)
    assert found, f"trainrecord {command} --help lists no exit status:\n{out.stdout}"
    return {int(n) for n in re.findall(r"(?:^|[;,] )(\d+) ", found.group(1))}


def test_demo_keygen_and_serve_help_list_their_exit_statuses() -> None:
    assert listed("demo") == {0, 1, 2}
    assert listed("keygen") == {0, 2}
    assert listed("serve") == {0, 2}


def test_keygen_onto_an_existing_key_ends_with_a_listed_status(tmp_path: Path) -> None:
    assert cli("keygen", tmp_path / "k").returncode == 0
    out = cli("keygen", tmp_path / "k")
    assert "[seal.key.exists]" in out.stderr
    assert out.returncode in listed("keygen") - {0}


def test_keygen_and_demo_onto_a_read_only_folder_end_with_a_listed_status(
    tmp_path: Path,
) -> None:
    source, one, two = tmp_path / "source", tmp_path / "ro1", tmp_path / "ro2"
    source.mkdir()
    run = [sys.executable, "-m", "trainrecord.cli"]
    out = read_only_bind(source, one, [*run, "keygen", str(one / "k")])
    assert "Read-only file system" in out.stderr and out.returncode in listed("keygen") - {0}
    out = read_only_bind(source, two, [*run, "demo", "--tiny", "--out", str(two / "d")])
    assert "Read-only file system" in out.stderr and out.returncode in listed("demo") - {0, 1}
    assert cli("demo", "--steps", "5").returncode in listed("demo") - {0, 1}


def serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "trainrecord.cli", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **TOKEN},
    )


def test_serve_on_a_port_in_use_and_stopped_ends_with_a_listed_status(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        busy = serve("--port", port, "--db", str(tmp_path / "a.sqlite"))
        _, err = busy.communicate(timeout=120)
    assert "address already in use" in err and busy.returncode in listed("serve") - {0}
    server = serve("--port", "0", "--db", str(tmp_path / "b.sqlite"))
    try:
        assert server.stdout is not None
        assert server.stdout.readline().startswith("serving http://")
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=120)
    finally:
        if server.poll() is None:  # pragma: no cover
            server.kill()
    assert server.returncode == 0 and 0 in listed("serve")
