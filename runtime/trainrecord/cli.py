"""The ``trainrecord`` command line.

Each subcommand lives in its own module under ``trainrecord.commands`` and exposes
``register(subparsers)``, which adds its parser and sets ``func(args) -> int``. Errors the
user can fix (a :class:`~trainrecord.errors.RecordRefused`, a missing file) are printed as
one clear message with exit status 2, never as a traceback; so is a missing optional
dependency (``... needs matplotlib, which is not installed: pip install
"trainrecord[plot]"``), also when the command line itself cannot load (a base install
without the ``runtime`` extra).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from trainrecord import __version__
from trainrecord.errors import RecordRefused
from trainrecord.extras import missing_extra

COMMANDS = ("validate", "verify", "show", "plot", "keygen", "seal", "demo", "serve")
"""Subcommand modules under ``trainrecord.commands``, in the order ``--help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every available subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="trainrecord",
        description="Write, verify and follow training-run records.",
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        parser = build_parser()
    except ModuleNotFoundError as exc:
        return missing_dependency(exc, "trainrecord")
    return run_parser(parser, argv, "trainrecord")


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
    exit status 2, Ctrl+C 130; no traceback. Shared by every command line of the
    distribution."""
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
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as exc:
        named = f": {exc.filename}" if exc.filename is not None else ""
        print(f"{where}: {exc.strerror or type(exc).__name__}{named}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        return missing_dependency(exc, where, extra)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
