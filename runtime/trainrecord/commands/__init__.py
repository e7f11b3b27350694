"""Subcommands of the ``trainrecord`` command line, one module each (see ``trainrecord.cli``)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainrecord.errors import escaped

_ROLE = re.compile(r":[a-z]+:`([^`]*)`")


def plain(doc: str | None) -> str:
    """A module docstring as ``--help`` text: its reStructuredText markup removed
    (````x```` and ``:mod:`x``` become ``x``), its layout kept."""
    return _ROLE.sub(r"\1", doc or "").replace("``", "").strip() + "\n"


def run_dir_problem(run_dir: Path) -> str | None:
    """Why ``run_dir`` is no run directory, as the end of a usage error (``does not exist:
    runs/nope``, ``not a directory: runs/x.txt (a file)``), or None when it is a directory
    (whether it holds a record is for the command to say)."""
    if run_dir.is_dir():
        return None
    if not (run_dir.exists() or run_dir.is_symlink()):
        return f"does not exist: {run_dir}"
    what = "a file" if run_dir.is_file() else "a broken link" if not run_dir.exists() else None
    return f"not a directory: {run_dir}" + (f" ({what})" if what else "")


def no_diary(command: str, run_dir: Path) -> str:
    """The usage error of ``verify`` and ``show`` for a directory without diary.jsonl: what to
    give instead, and, for a folder of Foundry run records, the command that checks those."""
    foundry = sorted(
        escaped(p.name)  # names found in the folder: any text a file name may hold
        for pattern in ("observed.attempt*.json", "metrics.json")
        for p in run_dir.glob(pattern)
    )
    if foundry:
        return (
            f"trainrecord {command}: {run_dir} holds Foundry run records ({', '.join(foundry)}), "
            f"not a training diary: check them with trainrecord validate {run_dir}"
        )
    return (
        f"trainrecord {command}: no diary.jsonl in {run_dir}; give the run directory that "
        "holds the record (the run_dir the Monitor or DiaryWriter wrote)"
    )


def whole_number(
    minimum: int, maximum: int | None = None, what: str = "", hint: str = ""
) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number from ``minimum`` to ``maximum`` (inclusive):
    any other text is a usage error (exit 2) naming the range, ``what`` is counted and
    ``hint``, never a traceback from deep inside (``serve --port 99999`` raised
    OverflowError from socketserver)."""
    span = f"{minimum} or more" if maximum is None else f"from {minimum} to {maximum}"
    unit = f" {what}" if what else ""
    extra = f" ({hint})" if hint else ""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a whole number; give {span}{unit}{extra}"
            ) from None
        if value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"{value}{unit}; give {span}{extra}")
        return value

    return parse


def _is_private_key(path: Path) -> bool:
    """Whether the file holds a PEM private key (of any kind, encrypted or not). A file that
    cannot be read is left to the loader, which names it."""
    try:
        with path.open("rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return False
    return b"PRIVATE KEY-----" in head


def load_key_option(command: str, path: Path | None) -> tuple[Any, str | None]:
    """``--key PUBLIC_KEY`` of ``verify`` and ``show``: ``(key, None)``, ``(None, None)``
    without the option, or ``(None, usage error)`` naming the command and what to pass (a
    private key given by mistake, a file that cannot be read), never the key's text."""
    if path is None:
        return None, None
    from trainrecord.diary import load_public_key

    if _is_private_key(path):
        return None, (
            f"trainrecord {command}: --key {path} is a private key; pass the signer's PUBLIC "
            "key (the .pub file trainrecord keygen wrote beside it)"
        )
    try:
        return load_public_key(path), None
    except OSError as exc:
        return None, (
            f"trainrecord {command}: --key {path}: {exc.strerror or exc}; pass the "
            "signer's public key (the .pub file trainrecord keygen wrote)"
        )
