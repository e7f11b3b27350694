"""Every ``trainrecord`` command lists its exit statuses in ``--help``, and each status a
real failure (or stop) of theirs ends with is one their help lists: 130 on Ctrl+C and 141
on a closed stdout included, for every command. Each command runs as a real process.

Ctrl+C that landed while the command's modules loaded (``build_parser`` imports every
command module: cryptography, jsonschema ...) printed a KeyboardInterrupt traceback and
died of SIGINT; it now ends quietly with 130, as one during the command did already. The
interrupt is a real SIGINT the process sends itself at a set point (the import of a
command module, or the opening of a record file, found by an import finder and an audit
hook), so no test depends on timing. Before the fix the help texts listed neither 130 nor
141, and Ctrl+C at start-up gave a traceback.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import read_only_bind
from tests.diary.helpers import cli, write_run

TOKEN = {"CORREAD_REPORT_TOKEN": "help-exit-status-token-0123456789"}


def listed(command: str) -> set[int]:
    """The exit statuses ``trainrecord COMMAND --help`` lists (``exit status: 0 ...; 2 ...``)."""
    out = cli(command, "--help")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    found = re.search(
        r"\bexit status: (.*?)(?: positional arguments:| options:|$)", text, re.IGNORECASE
    )
    assert found, f"trainrecord {command} --help lists no exit status:\n{out.stdout}"
    return {int(n) for n in re.findall(r"(?:^|[;,:] )(\d+) ", found.group(1))}


COMMANDS = ("demo", "keygen", "plot", "seal", "serve", "show", "validate", "verify")


def test_every_command_lists_its_exit_statuses() -> None:
    assert listed("demo") == {0, 1, 2, 130, 141}
    assert listed("keygen") == {0, 2, 130, 141}
    assert listed("plot") == {0, 2, 130, 141}
    assert listed("seal") == {0, 2, 130, 141}
    assert listed("serve") == {0, 2, 130, 141}
    assert listed("show") == {0, 1, 2, 3, 130, 141}
    assert listed("validate") == {0, 1, 2, 130, 141}
    assert listed("verify") == {0, 1, 2, 3, 130, 141}
    top = " ".join(cli("--help").stdout.split())
    assert "every command exits 130 when interrupted (Ctrl+C) and 141 when its stdout is" in top


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


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete, sealed record with metrics."""
    run = tmp_path_factory.mktemp("record") / "run"
    write_run(run)
    return run


def invocations(record: Path, tmp: Path) -> dict[str, list[str]]:
    """A run of each command that prints to stdout (and of --json where there is one)."""
    run = tmp / "run"
    if not run.exists():
        shutil.copytree(record, run)
    return {
        "verify": ["verify", str(run)],
        "verify --json": ["verify", "--json", str(run)],
        "show": ["show", str(run)],
        "validate": ["validate", str(run)],
        "validate --json": ["validate", "--json", str(run)],
        "seal": ["seal", str(run)],
        "plot": ["plot", str(run), "-o", str(tmp / "plot.png")],
        "keygen": ["keygen", str(tmp / "keys" / "thekey")],
        "demo": ["demo", "--tiny", "--out", str(tmp / "demo")],
        "serve": ["serve", "--port", "0", "--db", str(tmp / "reports.sqlite")],
    }


def into_closed_pipe(args: list[str]) -> subprocess.CompletedProcess[str]:
    """``trainrecord ARGS`` with stdout a pipe whose reader has gone (``| true`` without the
    race of ``| head``)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "trainrecord.cli", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=300,
            env={**os.environ, **TOKEN},
        )
    finally:
        os.close(write)


@pytest.mark.parametrize(
    "name",
    [
        "verify",
        "verify --json",
        "show",
        "validate",
        "validate --json",
        "seal",
        "plot",
        "keygen",
        "demo",
        "serve",
    ],
)
def test_a_closed_stdout_ends_every_command_quietly_with_141(
    record: Path, tmp_path: Path, name: str
) -> None:
    args = invocations(record, tmp_path)[name]
    out = into_closed_pipe(args)
    assert out.stderr == "", out.stderr  # no traceback, no "Exception ignored"
    assert out.returncode == 141 and 141 in listed(args[0])


INTERRUPT = """
import importlib.abc, os, signal, sys
how, name = sys.argv[1], sys.argv[2]
fired = []
def fire():
    if not fired:
        fired.append(True)
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl+C: KeyboardInterrupt at the next bytecode
if how == "import":  # while the module NAME loads
    class Hit(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname == name:
                fire()
            return None
    sys.meta_path.insert(0, Hit())
else:  # as a file whose name ends with NAME is opened
    def hook(event, args):
        if event == "open" and str(args[0]).endswith(name):
            fire()
    sys.addaudithook(hook)
from trainrecord.cli import main
sys.exit(main(sys.argv[3:]))
"""


def interrupted(how: str, name: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", INTERRUPT, how, name, *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**os.environ, **TOKEN},
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_ctrl_c_while_the_commands_load_ends_quietly_with_130(
    record: Path, tmp_path: Path, command: str
) -> None:
    args = invocations(record, tmp_path)[command]
    out = interrupted("import", "trainrecord.commands.serve", args)  # the last one loaded
    assert out.stderr == "" and out.stdout == "", out.stderr[-2000:]
    assert out.returncode == 130 and 130 in listed(command)


def test_ctrl_c_while_the_conformance_suite_loads_ends_quietly_with_130() -> None:
    """trainrecord-conformance's main() too: its parser imports the suite's modules."""
    script = INTERRUPT.replace("trainrecord.cli import", "trainrecord_conformance.cli import")
    out = subprocess.run(
        [sys.executable, "-c", script, "import", "trainrecord_conformance.targets", "rules"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert out.stderr == "" and out.stdout == "", out.stderr[-2000:]
    assert out.returncode == 130


SUITE_INTERRUPT = """
import os, signal, sys
opened = []
def hook(event, args):  # Ctrl+C at the 30th temporary file: a random draw of a check
    if event == "open" and str(args[0]).endswith(".tmp"):
        opened.append(args[0])
        if len(opened) == 30:
            os.kill(os.getpid(), signal.SIGINT)
sys.addaudithook(hook)
from trainrecord_conformance.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("json_out", [False, True], ids=["summary", "json"])
def test_ctrl_c_while_the_conformance_suite_runs_ends_quietly_with_130(json_out: bool) -> None:
    """Ctrl+C in a check's random draws (the dev profile): Hypothesis printed "You can
    reproduce this failure by adding @seed(...) to this test" on stdout (a --json reader's),
    about a test the user never wrote."""
    args = ["run", "--target", "python", "--rules", "metrics.*", "--profile", "dev"]
    out = subprocess.run(
        [sys.executable, "-c", SUITE_INTERRUPT, *args, *(["--json"] if json_out else [])],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**os.environ, "HYPOTHESIS_PROFILE": "dev"},
    )
    assert out.stderr == "" and out.stdout == "", (out.stdout[-2000:], out.stderr[-2000:])
    assert out.returncode == 130


@pytest.mark.parametrize(
    ("name", "opened"),
    [
        ("verify", "diary.jsonl"),
        ("verify --json", "diary.jsonl"),
        ("show", "diary.jsonl"),
        ("validate", "diary.jsonl"),
        ("seal", "diary.jsonl"),
        ("plot", "metrics.jsonl"),
        ("keygen", ".tmp"),  # its private key's temporary file
    ],
)
def test_ctrl_c_while_a_command_works_ends_quietly_with_130(
    record: Path, tmp_path: Path, name: str, opened: str
) -> None:
    args = invocations(record, tmp_path)[name]
    out = interrupted("open", opened, args)
    assert out.stderr == "", out.stderr[-2000:]
    assert out.returncode == 130 and 130 in listed(args[0])
