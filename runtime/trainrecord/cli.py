"""The ``trainrecord`` command line.

Each subcommand lives in its own module under ``trainrecord.commands`` and exposes
``register(subparsers)``, which adds its parser and sets ``func(args) -> int``. Errors the
user can fix (a :class:`~trainrecord.errors.RecordRefused`, a missing file) are printed as
one clear message with exit status 2, never as a traceback; so is a missing optional
dependency (``... needs matplotlib, which is not installed: pip install
"trainrecord[plot]"``), also when the command line itself cannot load (a base install
without the ``runtime`` extra). A reader that stops early (``trainrecord-conformance rules |
head``) ends the command quietly with exit status 141 (see :data:`STDOUT_CLOSED`), and
Ctrl+C with 130 (:data:`INTERRUPTED`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import select
import sys
from collections.abc import Sequence

from trainrecord import __version__
from trainrecord.errors import RecordRefused
from trainrecord.extras import missing_extra

STDOUT_CLOSED = 141
"""Exit status when the reader of stdout went away before the output ended (``... | head``):
128 + SIGPIPE (13), what a shell reports for the usual commands (``cat``, ``grep``; they die
of SIGPIPE) in the same place, so ``set -o pipefail`` treats every command of a pipeline
alike. Not 0, since the output was cut short (for ``verify`` it may have cut the verdict),
and not 1 or 2, which mean a failed check or a usage error."""

COMMANDS = ("validate", "verify", "show", "plot", "keygen", "seal", "demo", "serve")
"""Subcommand modules under ``trainrecord.commands``, in the order ``--help`` lists them."""


EPILOG = """\
examples:
  trainrecord demo --out runs/demo   train a small CNN, break it, record what happened
  trainrecord show runs/demo         a human summary of the record
  trainrecord verify runs/demo       check that the diary, metrics and seal are untouched
  trainrecord validate results/      check each record file against the spec
  trainrecord serve --port 8787      receive Reporting API v2 job-status reports

verify: was the diary changed? validate: is each file's shape right?
'trainrecord COMMAND --help' describes each command and lists its exit statuses; every
command exits 130 when interrupted (Ctrl+C) and 141 when its stdout is closed early
(trainrecord show RUN | head -1), quietly (no traceback)."""
"""The examples under ``trainrecord --help``, and which of verify and validate to use."""


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every available subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="trainrecord",
        description="Write, verify and follow training-run records.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"trainrecord {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"trainrecord.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"trainrecord.commands.{name}":
                continue  # not built yet
            raise
        module.register(sub)
    return parser


INTERRUPTED = 130
"""Exit status on Ctrl+C (SIGINT): 128 + SIGINT (2), what a shell reports for a command that
Ctrl+C stopped; quietly, with no traceback, wherever the interrupt lands (while the
command's modules load, too)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        try:
            parser = build_parser()
        except ModuleNotFoundError as exc:
            return missing_dependency(exc, "trainrecord")
        return run_parser(parser, argv, "trainrecord")
    except KeyboardInterrupt:  # (while the command modules load: before run_parser's own)
        return INTERRUPTED


def missing_dependency(exc: ModuleNotFoundError, where: str, extra: str | None = None) -> int:
    """Print ``WHERE needs MODULE, which is not installed: pip install "trainrecord[X]"``
    for a missing optional dependency and return 2; re-raise any other ``exc``.

    ``extra`` names the extra to install for a missing runtime dependency (a command line
    shipped with another extra that holds the runtime's, as ``conformance`` does)."""
    line = missing_extra(exc, where, extra)
    if line is None:
        raise exc
    print(line, file=sys.stderr)
    return 2


def run_parser(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    prog: str,
    extra: str | None = None,
) -> int:
    """Parse ``argv`` and run the chosen subcommand's ``func``; returns the exit status.

    Refused input, file errors and a missing optional dependency (naming the extra to
    install; ``extra`` as for :func:`missing_dependency`) become one line on stderr and
    exit status 2, Ctrl+C :data:`INTERRUPTED` (130, wherever it lands); stdout closed by its
    reader :data:`STDOUT_CLOSED` (141); no traceback. Shared by every command line of the
    distribution."""
    try:
        try:
            status = _dispatch(parser, argv, prog, extra)
        except SystemExit:  # argparse's --help, --version or usage error: flush its text here
            sys.stdout.flush()
            raise
        sys.stdout.flush()  # here, not at exit, where a closed pipe can no longer be caught
    except KeyboardInterrupt:  # (in parsing or the flush; the command's own is _dispatch's)
        return INTERRUPTED
    except BrokenPipeError:
        if not _stdout_closed():
            raise  # another pipe (a harness's, say): a real error
        # The usual recipe: point stdout at devnull, so that the interpreter's own flush at
        # exit does not fail again ("Exception ignored ... BrokenPipeError").
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return STDOUT_CLOSED
    return status


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (so a BrokenPipeError came from it);
    True where poll() cannot tell (Windows)."""
    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
    except (AttributeError, OSError, ValueError):
        return True
    poller.register(fd, 0)  # POLLERR and POLLHUP are always reported
    return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))


def _dispatch(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    prog: str,
    extra: str | None,
) -> int:
    """:func:`run_parser` without its care for a closed stdout."""
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    command = getattr(args, "command", None)
    where = f"{prog} {command}" if command else prog
    try:
        return int(args.func(args) or 0)
    except RecordRefused as exc:
        print(f"{where}: refused: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        raise  # stdout's reader gone: run_parser's to judge (exit 141), not a file error
    except OSError as exc:  # a file or folder: missing, in the way, read-only, full disk ...
        said = exc.strerror or str(exc) or type(exc).__name__  # (a TimeoutError has no strerror)
        named = f": {exc.filename}" if exc.filename is not None else ""
        print(f"{where}: {said}{'' if str(exc.filename) in said else named}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        return missing_dependency(exc, where, extra)
    except KeyboardInterrupt:
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
