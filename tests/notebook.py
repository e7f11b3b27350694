"""Notebook cells run for real: one long-lived Python process runs cells one after another
in one namespace, as a Jupyter kernel does.

Each cell is compiled and run by :class:`code.InteractiveInterpreter`, which catches what
the cell raised (``KeyboardInterrupt`` too), prints its traceback and keeps it in
``sys.last_type``, ``sys.last_value`` and ``sys.last_traceback``, as IPython does: objects
of a cell that raised stay alive through that traceback until another error replaces it. A
cell's output is what it printed (stdout and stderr: warnings, log lines, tracebacks).

A cell may interrupt itself with a real SIGINT to its own process (``interrupt_in(name)``:
at the next call of a function of that name in the main thread, through ``sys.setprofile``,
or ``os.kill(os.getpid(), signal.SIGINT)`` from a thread): the Python handler raises
``KeyboardInterrupt`` in the main thread where it runs then, as the stop button does.

``run_cells(cells, cwd)`` returns one :class:`Cell` per cell; a process that runs past its
timeout fails the test with where each thread was (faulthandler) and what it printed.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.processes import communicate

ROOT = Path(__file__).resolve().parent.parent

KERNEL = r"""
import code, contextlib, io, json, os, signal, sys


def interrupt_in(name):
    '''A real SIGINT at the next call of a function called ``name`` (main thread).'''

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == name:
            sys.setprofile(None)
            os.kill(os.getpid(), signal.SIGINT)

    sys.setprofile(profile)


class _Kernel(code.InteractiveInterpreter):
    error = None

    def showtraceback(self):
        self.error = sys.exc_info()[1]
        super().showtraceback()


def _run(cells, mark):
    # the cells' namespace is __main__'s, as IPython's user namespace is
    kernel = _Kernel(sys.modules["__main__"].__dict__)
    for number, source in enumerate(cells, 1):
        out = io.StringIO()
        kernel.error = None
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                kernel.runcode(compile(source, f"<cell {number}>", "exec"))
        except KeyboardInterrupt:  # (a late SIGINT, after the cell's own code: as ipykernel)
            pass
        sys.setprofile(None)
        error = kernel.error
        result = {
            "error": None if error is None else type(error).__name__,
            "message": None if error is None else str(error),
            "output": out.getvalue(),
        }
        print(mark + json.dumps(result), flush=True)  # at once: a cell may end the process


with open(sys.argv[1], encoding="utf-8") as _file:
    _cells = json.load(_file)
_run(_cells, sys.argv[2])
# the process ends as a kernel does at shutdown: what atexit and finalizers say is kept too
"""
MARK = "<<<cell>>> "


@dataclass
class Cell:
    """What one cell did: the type and message of the error it raised (None: none), and its
    output."""

    error: str | None
    message: str | None
    output: str


@dataclass
class Notebook:
    """The results of the cells that ran, what the process printed besides (at its end:
    atexit, finalizers) and its exit status."""

    cells: list[Cell]
    at_exit: str
    returncode: int


def run_cells(
    cells: list[str], cwd: Path, timeout: float = 120, env: dict[str, str] | None = None
) -> Notebook:
    """Run ``cells`` in one new Python process (working directory ``cwd``; ``env``: more
    environment variables). A cell that ends the process (a SIGTERM) has no result, nor
    have the cells after it."""
    source = cwd / "cells.json"
    source.write_text(json.dumps(cells), encoding="utf-8")
    environ = {**os.environ, **(env or {})}
    environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), environ.get("PYTHONPATH", "")])
    command = [sys.executable, "-c", KERNEL, str(source), MARK]
    code, out, err = communicate(
        command, what="the notebook", timeout=timeout, env=environ, cwd=cwd
    )
    results = [Cell(**json.loads(x[len(MARK) :])) for x in out.splitlines() if x.startswith(MARK)]
    rest = [x for x in out.splitlines() if not x.startswith(MARK)]
    return Notebook(results, "\n".join(rest) + err, code)
