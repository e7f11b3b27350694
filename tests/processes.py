"""A test's child processes: run one to its end, or fail the test with where it hung.

:func:`communicate` runs a command with faulthandler on (``PYTHONFAULTHANDLER=1``); one
that runs past its timeout is sent SIGABRT, so faulthandler prints where each of its
threads was, and the test fails with that and what the process printed, not with a bare
``TimeoutExpired`` (a CI log then tells where a process hung)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path


def communicate(
    command: Sequence[str],
    *,
    what: str,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> tuple[int, str, str]:
    """Run ``command`` (its environment: ``env``, default this process's, with
    PYTHONFAULTHANDLER=1) to its end: its exit status, stdout and stderr as text. ``what``
    names it in the failure when it runs past ``timeout`` seconds."""
    environ = {**(os.environ if env is None else env), "PYTHONFAULTHANDLER": "1"}
    with subprocess.Popen(
        list(command),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
    ) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)
            try:
                out, err = process.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                out, err = process.communicate()
            raise AssertionError(
                f"{what} ran past {timeout} s; its threads at SIGABRT:\n{err[-6000:]}\n"
                f"its output:\n{out[-2000:]}"
            ) from None
    return process.returncode, out, err
