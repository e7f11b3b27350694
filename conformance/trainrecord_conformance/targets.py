"""Targets: the implementations the suite runs against.

* ``python``: this project's runtime, in-process (:mod:`.operations`).
* ``harness``: the same runtime through the reference exec harness, in a subprocess
  (``exec:<this python> -m trainrecord_conformance.harness``): tests the protocol itself.
* ``exec:<command>``: any program in any language speaking the harness protocol
  (:mod:`.protocol`): one process for the whole run, many ``run`` messages. A harness that
  lists ``serve`` runs a reporting receiver in its process; the server checks POST to it.
* ``http://...`` / ``https://...``: a reporting server (Reporting API v2 §2 and §4).

A target's ``run(op, input)`` returns a :class:`~.protocol.Result`. A crash, a timeout or
a protocol error raises :class:`TargetError`: the suite reports it as an *error* of the
check, never as a rule failure; so does an ``error`` answer (the checks' context raises it).
``unsupported`` is an answer only from ``validate``, for a schema the implementation does
not implement (the checks skip that example); from a listed operation otherwise it is an
error. Whatever a harness writes to stderr is kept for the error
report and otherwise ignored.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from trainrecord.errors import RecordRefused
from trainrecord_conformance import protocol
from trainrecord_conformance.protocol import ProtocolError, Result

DEFAULT_TIMEOUT = 20.0


class TargetError(Exception):
    """The implementation crashed, hung or broke the protocol."""

    def __init__(self, message: str, rules: list[str] | None = None) -> None:
        super().__init__(message)
        self.rules = rules or []


class Target(ABC):
    """An implementation under test."""

    name: str = ""
    implementation: dict[str, Any]
    operations: frozenset[str] = frozenset()
    nonfinite: bool = False
    """Whether inputs may carry NaN and infinities (only in-process: JSON has no token)."""
    capabilities: frozenset[str] = frozenset()
    """Pseudo-operations: ``@nonfinite`` (Python values JSON cannot carry), ``@exec``."""
    url: str | None = None
    """For a reporting-server target: the endpoint."""
    token: str | None = None
    ca_file: str | None = None
    read_url: str | None = None

    def server(self) -> tuple[str, str | None, str | None, str | None]:
        """(POST URL, token, CA file, read URL) of the reporting server under test."""
        if self.url is None:
            raise TargetError(f"{self.name} is not a reporting server")
        return self.url, self.token, self.ca_file, self.read_url

    @abstractmethod
    def run(self, op: str, data: dict[str, Any]) -> Result:
        """Perform one operation."""

    def close(self) -> None:  # noqa: B027 - most targets hold nothing to release
        """Release the target (stop a harness process)."""

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PythonTarget(Target):
    """This project's runtime, called in-process."""

    nonfinite = True
    capabilities = frozenset({"@nonfinite", "@race"})

    def __init__(self) -> None:
        from trainrecord import __version__
        from trainrecord_conformance.operations import OPERATIONS

        self.name = "python"
        self.implementation = {"name": "trainrecord", "language": "python", "version": __version__}
        self._ops = OPERATIONS
        self.operations = frozenset(OPERATIONS) | {"serve", "serve_read"}
        self._receiver: Any = None
        self._folder: str | None = None

    def server(self) -> tuple[str, str | None, str | None, str | None]:
        """The reference receiver (``trainrecord serve``), started in-process on loopback."""
        if self._receiver is None:
            import secrets

            from trainrecord.report import ReportStore, make_server

            self._folder = tempfile.mkdtemp(prefix="trc-serve-")
            self.token = "conformance-" + secrets.token_hex(12)
            store = ReportStore(os.path.join(self._folder, "reports.sqlite"))
            self._receiver = make_server("127.0.0.1", 0, token=self.token, store=store)
            self._receiver.serve_in_thread()
            self.url = self.read_url = self._receiver.url + "/api/runs"
        return super().server()

    def close(self) -> None:
        """Stop the receiver when one was started."""
        if self._receiver is not None:
            self._receiver.shutdown()
            self._receiver.server_close()
            self._receiver = None
        if self._folder is not None:
            import shutil

            shutil.rmtree(self._folder, ignore_errors=True)

    def run(self, op: str, data: dict[str, Any]) -> Result:
        """Call the operation; a refusal is a result, any other exception an error."""
        try:
            return Result("ok", self._ops[op](data))
        except RecordRefused as exc:
            return Result("refused", rules=list(dict.fromkeys(exc.rules)), message=str(exc))
        except Exception as exc:
            return Result("error", message="".join(traceback.format_exception(exc))[-2000:])


class ExecTarget(Target):
    """A harness program speaking the protocol on stdin/stdout (one process, reused)."""

    capabilities = frozenset({"@exec", "@race"})

    def __init__(
        self, command: str, *, name: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.command = command
        self.name = name or f"exec:{command}"
        self.timeout = timeout
        self.implementation = {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the target
        self._buffer = b""
        self._seq = 0
        self._serving: subprocess.Popen[bytes] | None = None
        self._folders: list[str] = []
        self.start()

    # -- process ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the harness and read its start response."""
        self._buffer = b""
        self._proc = subprocess.Popen(
            shlex.split(self.command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self._send(protocol.start_request())
        message = self._receive(self.timeout + 30)
        try:
            protocol.check_start(message)
        except ProtocolError as exc:
            self.kill()
            raise TargetError(f"start: {exc}", exc.rules) from exc
        self.implementation = message["implementation"]
        self.operations = frozenset(message["operations"])
        if "serve" in self.operations:
            self.operations |= {"serve_read"}  # the read_url of serve's answer, when not null

    def stderr_tail(self, size: int = 1500) -> str:
        """The last bytes the harness wrote to stderr."""
        self._stderr.seek(0, os.SEEK_END)
        end = self._stderr.tell()
        self._stderr.seek(max(0, end - size))
        return self._stderr.read().decode("utf-8", "replace")

    def kill(self) -> None:
        """End the harness process now."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._proc = None

    def _send(self, message: dict[str, Any]) -> None:
        self.send_line(protocol.encode(message))

    def _died(self, what: str) -> TargetError:
        code = None
        if self._proc is not None:
            # its stdout closed just now: the exit status follows within moments (poll()
            # alone raced it and said "exit status None")
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = self._proc.wait(2.0)
        tail = self.stderr_tail()
        self.kill()
        status = (
            f"exit status {code}"
            if code is not None
            else "its output closed, but the process was still running 2 s later: killed"
        )
        return TargetError(f"{what} ({status}); stderr: {tail[-600:]}")

    def _receive(self, timeout: float) -> Any:
        assert self._proc is not None and self._proc.stdout is not None
        deadline = time.monotonic() + timeout
        fd = self._proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.kill()
                    raise TargetError(f"no response within {timeout:g} s (timeout)")
                if not sel.select(left):
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise self._died("the harness exited without answering")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            return protocol.decode(line)
        except ProtocolError as exc:
            self.kill()
            raise TargetError(str(exc), exc.rules) from exc

    # -- protocol -----------------------------------------------------------------------

    def server(self) -> tuple[str, str | None, str | None, str | None]:
        """The harness's own receiver: started with the ``serve`` operation once per harness
        process (again after a restart), a fresh token and store folder each time."""
        if "serve" not in self.operations:
            raise TargetError(f"{self.name} does not list serve")
        alive = self._proc is not None and self._proc.poll() is None
        if not alive or self._serving is not self._proc:
            import secrets

            if not alive:
                self.start()
            token = "conformance-" + secrets.token_hex(12)
            folder = tempfile.mkdtemp(prefix="trc-serve-")
            self._folders.append(folder)
            result = self.run("serve", {"dir": folder, "token": token})
            if result.outcome != "ok":
                raise TargetError(f"serve gave {result.describe()}")
            self.token, self.url = token, result.output["url"]
            self.read_url = result.output.get("read_url")
            self._serving = self._proc
        return super().server()

    def run(self, op: str, data: dict[str, Any]) -> Result:
        """Send one run and read its response; restart the harness if it died before."""
        seq, line = self.prepare_run(op, data)
        self.send_line(line)
        return self.finish_run(seq, op)

    def prepare_run(self, op: str, data: dict[str, Any]) -> tuple[int, bytes]:
        """A run message ready to send, and its seq (starting the harness if needed): the
        racing checks prepare one per harness, then send them within microseconds."""
        if self._proc is None or self._proc.poll() is not None:
            self.start()
        seq = self._seq
        self._seq += 1
        return seq, protocol.encode(protocol.run_request(seq, op, data))

    def send_line(self, line: bytes) -> None:
        """Write a prepared message."""
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(line)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise self._died("the harness closed its input") from exc

    def finish_run(self, seq: int, op: str) -> Result:
        """Read the response of the run ``seq`` of ``op``."""
        message = self._receive(self.timeout)
        try:
            result = protocol.to_result(message, seq, op)
        except ProtocolError as exc:
            self.kill()
            raise TargetError(f"{op}: {exc}", exc.rules) from exc
        if result.outcome == "unsupported" and op != "validate":
            raise TargetError(f"{op}: the harness listed {op} at start but answered unsupported")
        return result

    def raw(self, message: dict[str, Any], timeout: float | None = None) -> Any:
        """Send any message and return the decoded response (for protocol checks)."""
        if self._proc is None or self._proc.poll() is not None:
            self.start()
        self._send(message)
        return self._receive(timeout or self.timeout)

    def stop(self, timeout: float = 10.0) -> tuple[Any, int | None]:
        """Send stop; return the response and the exit status."""
        if self._proc is None or self._proc.poll() is not None:
            self.start()
        assert self._proc is not None
        self._send(protocol.stop_request())
        message = self._receive(timeout)
        try:
            code = self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            code = None
        self.kill()
        return message, code

    def close(self) -> None:
        """Stop the harness politely, then for sure."""
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(TargetError):
                self.stop(5.0)
        self.kill()
        self._stderr.close()
        import shutil

        for folder in self._folders:
            shutil.rmtree(folder, ignore_errors=True)


class HttpTarget(Target):
    """A reporting server at ``url`` (Reporting API v2 §2, §4)."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        ca_file: str | None = None,
        read_url: str | None = None,
    ) -> None:
        from trainrecord.report.settings import redact_url

        self.name = redact_url(url)  # what the output shows: never a password or a query value
        self.url = url
        self.token = token if token is not None else os.environ.get("CORREAD_REPORT_TOKEN")
        self.ca_file = ca_file
        self.read_url = read_url
        self.implementation = {"name": self.name, "language": "http"}
        self.operations = frozenset({"serve"} | ({"serve_read"} if read_url else set()))

    def server(self) -> tuple[str, str | None, str | None, str | None]:
        """The server under test, as given on the command line."""
        return self.url or "", self.token, self.ca_file, self.read_url

    def run(self, op: str, data: dict[str, Any]) -> Result:
        """A server target has no harness operations."""
        raise TargetError(f"{op} is not an operation of a reporting server")


def shown_target(spec: str) -> str:
    """A target as the output shows it: an http(s) URL as ``redact_url`` writes it (a
    password as ``user:***@``, query values and the fragment as ``***``), anything else as
    given."""
    if spec.startswith(("http://", "https://")):
        from trainrecord.report.settings import redact_url

        return redact_url(spec)
    return spec


def harness_command() -> str:
    """The command line of the reference exec harness of this project's runtime."""
    return f"{shlex.quote(sys.executable)} -m trainrecord_conformance.harness"


NODE_HARNESS = Path(__file__).resolve().parent.parent / "implementations" / "node" / "harness.js"
"""The Node implementation's harness, found from this package's place in the checkout
(``conformance/trainrecord_conformance/`` beside ``conformance/implementations/node/``),
never from the working directory."""


def node_command() -> str:
    """The command line of the ``node`` target; ValueError when the package does not sit in
    a checkout (a ``pip install .`` copies only the Python packages)."""
    if not NODE_HARNESS.is_file():
        raise ValueError(
            f"the node target needs a checkout of trainrecord: {NODE_HARNESS} does not exist "
            "(this trainrecord_conformance was installed without it); run "
            '--target "exec:node <checkout>/conformance/implementations/node/harness.js"'
        )
    return f"node {shlex.quote(str(NODE_HARNESS))}"


def make_target(
    spec: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    token: str | None = None,
    ca_file: str | None = None,
    read_url: str | None = None,
) -> Target:
    """A target from its command-line spelling."""
    if spec == "python":
        return PythonTarget()
    if spec == "harness":
        return ExecTarget(harness_command(), name="harness", timeout=timeout)
    if spec == "node":
        return ExecTarget(node_command(), name="node", timeout=timeout)
    if spec.startswith("exec:"):
        return ExecTarget(spec[5:], timeout=timeout)
    if spec.startswith(("http://", "https://")):
        return HttpTarget(spec, token=token, ca_file=ca_file, read_url=read_url)
    raise ValueError(
        f"unknown target {spec!r}: use python, harness, node, exec:<command> or an http(s):// URL"
    )
