"""Atomic file writes and strict reads for the Foundry records.

* :func:`create_new` writes a file that must not exist yet: the bytes go to a temporary
  file in the same folder, are flushed to disk (fsync), and the temporary file is then
  hard-linked to the final name. ``link`` fails when the name exists, so of several
  processes racing for one name exactly one wins, and a reader sees either no file or the
  complete file, never a partial one.
* :func:`replace` writes a file that may exist: temporary file, fsync, ``os.replace``. A
  crash leaves the old file or the new one, never a mix.
* :func:`read_json` reads strict JSON (UTF-8, no NaN or Infinity tokens).

Temporary files (:func:`write_temp`) are named ``.<final name>.<random>.tmp`` and are
removed on every path. A writer names its own file, never the temporary one, when a write
fails: :func:`failures_named` makes such an ``OSError`` a
:class:`~trainrecord.errors.RecordWriteError` saying the file, the cause and what to do.
The folders a writer made for its file (:func:`make_folders`) are removed again when the
write fails (each only while empty), so "nothing was written" holds; one that cannot be
removed is named in the message.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trainrecord.canonical import loads_strict
from trainrecord.errors import RecordRefused, RecordWriteError, write_failed
from trainrecord.folders import blocked_by, in_the_way, name_too_long, not_regular
from trainrecord.foundry.numbers import MAX_INT_DIGITS, long_int_in


def check_folder(results_dir: Path, rule: str) -> None:
    """Refuse (``rule``) a ``results_dir`` that is, or sits under, something not a folder.

    A part to be made whose name is longer than the filesystem allows raises ``OSError``
    (``ENAMETOOLONG``) naming results_dir. Creates nothing; called before the results
    directory is made."""
    part = blocked_by(results_dir)
    if part is not None:
        raise RecordRefused.one(
            rule, ("results_dir",), in_the_way(results_dir, part, "results_dir")
        )
    too_long = name_too_long(results_dir, "results_dir")
    if too_long is not None:
        raise too_long


def _fsync_dir(folder: Path) -> None:
    """Make a new or renamed directory entry durable (POSIX; a no-op elsewhere)."""
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_temp(target: Path, data: bytes) -> Path:
    """Write ``data`` to a fresh temporary file beside ``target`` and fsync it; return its
    path (the caller renames or removes it). Nothing is left when this fails."""
    while True:
        tmp = target.parent / f".{target.name}.{secrets.token_hex(8)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:  # pragma: no cover - 64 random bits collided
            continue
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return tmp


def create_new(target: Path, data: bytes) -> None:
    """Create ``target`` with ``data`` atomically; ``FileExistsError`` if it exists."""
    tmp = write_temp(target, data)
    try:
        os.link(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    _fsync_dir(target.parent)


def replace(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` atomically, replacing any file there."""
    tmp = write_temp(target, data)
    try:
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _fsync_dir(target.parent)


def make_folders(folder: Path, made: list[Path]) -> None:
    """Make ``folder`` and any missing parents (as ``mkdir -p``), adding each folder this
    call made to ``made``, deepest first; a folder another process made meanwhile is not
    added (it is not this writer's to remove)."""
    missing = []
    part = folder
    while not part.is_dir():
        missing.append(part)
        if part.parent == part:  # pragma: no cover - the root is always a folder
            break
        part = part.parent
    for part in reversed(missing):
        try:
            part.mkdir()
        except FileExistsError:
            if not part.is_dir():
                raise
            continue
        made.insert(0, part)


def _unmake(made: list[Path]) -> list[Path]:
    """Remove the folders in ``made`` (deepest first), each only while it is empty (never
    anything put there since); the ones left in place."""
    left = []
    for folder in made:
        try:
            folder.rmdir()
        except FileNotFoundError:
            continue
        except OSError:
            left.append(folder)
    return left


@contextlib.contextmanager
def failures_named(
    target: Path, *, elsewhere: str = "results_dir", made: list[Path] | None = None
) -> Iterator[None]:
    """Raise an ``OSError`` of the block (making ``target``'s folder, writing ``target``
    whole: :func:`create_new`, :func:`replace`) as a
    :class:`~trainrecord.errors.RecordWriteError` naming ``target``, not its temporary
    file: "trainrecord could not write DIR/metrics.json: Read-only file system (EROFS);
    nothing was written (metrics.json is as it was). The folder is on a read-only file
    system ...". ``FileExistsError`` (:func:`create_new`'s name taken) is the caller's.

    ``made``: the folders the block made for ``target`` (:func:`make_folders`); on a
    failure they are removed again while empty, and any that stays is named ("no
    metrics.json was made; the folder DIR it made is left (not empty)")."""
    try:
        yield
    except (FileExistsError, RecordWriteError):
        raise
    except OSError as exc:
        left = _unmake(made or [])
        kept = f"{target.name} is as it was" if target.exists() else f"no {target.name} was made"
        if left:
            names = ", ".join(str(folder) for folder in left)
            plural = "s" if len(left) > 1 else ""
            state = f"{kept}; the folder{plural} {names} it made {'are' if plural else 'is'} left"
        else:
            state = f"nothing was written ({kept})"
        raise write_failed(target, exc, state, elsewhere=elsewhere) from None


MAX_BYTES = {"witness": 1 << 20, "metrics": 256 << 20}
"""The largest file each reader reads: a witness is a few hundred bytes; 256 MiB of
metrics is millions of rows. A larger file is refused without being read past it. Another
kind of file read here (a report run folder's metadata.json) has :data:`OTHER_MAX_BYTES`."""
OTHER_MAX_BYTES = 16 << 20


def _read_regular(path: Path, kind: str, other_rule: str) -> bytes:
    """The bytes of ``path`` when it is a regular file (a link to one counts) of at most
    ``MAX_BYTES[kind]``; else ``<kind>.file.regular`` (``other_rule`` for a kind without
    a limit of its own, as metadata.json's ``report.metadata.json``). A FIFO is opened
    without blocking and never read; a device is never read."""
    rule = f"{kind}.file.regular" if kind in MAX_BYTES else other_rule
    limit = MAX_BYTES.get(kind, OTHER_MAX_BYTES)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = not_regular(mode)
            raise RecordRefused.one(
                rule,
                (),
                f"{Path(path).name} is {what}, not a regular file; a {kind} record is a file "
                "(nothing was read)",
            )
        if os.name == "posix" and hasattr(os, "O_NONBLOCK"):
            os.set_blocking(fd, True)
        chunks = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise RecordRefused.one(
                rule,
                (),
                f"{Path(path).name} is larger than {limit >> 20} MiB, more than any {kind} "
                "record holds; it was not read past that",
            )
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_json(path: Path, rule: str) -> tuple[Any, str]:
    """Parse ``path`` as strict JSON; return the value and the text.

    A file that is not UTF-8, not JSON, or has NaN/Infinity tokens is refused with ``rule``;
    one that is no regular file, or is too large, with ``<kind>.file.regular``.
    """
    raw = _read_regular(Path(path), rule.split(".")[0], rule)
    too_long = (
        f"an integer token of more than {MAX_INT_DIGITS} digits, which the records never "
        "hold (no JSON reader of Python takes one)"
    )
    try:
        text = raw.decode("utf-8")
        data = loads_strict(text)
    except (UnicodeDecodeError, ValueError) as exc:
        reason = str(exc).splitlines()[0][:160]
        if "int_max_str_digits" in str(exc) or "Exceeds the limit" in str(exc):
            reason = too_long
        raise RecordRefused.one(
            rule,
            (),
            f"{Path(path).name} is not strict JSON text (RFC 8259, UTF-8): "
            f"{reason}; rewrite it with a JSON writer",
        ) from None
    if long_int_in(data):  # read because this process raised sys.set_int_max_str_digits
        raise RecordRefused.one(rule, (), f"{Path(path).name} is not a record: it holds {too_long}")
    return data, text
