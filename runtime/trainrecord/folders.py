"""Folders a record is written into: made when missing, with the file in the way named.

``Path.mkdir(parents=True, exist_ok=True)`` says only "File exists" when a file (or a link
that leads to no folder) stands where the folder or one of its parents must be; the
writers, ``open_run`` and ``keygen`` name that path instead, before anything is made.
The readers' refusal of a path that is no regular file says what it is in the same words
(:func:`not_regular`). Files a writer opens to append or lock are never opened through a
symbolic link (:func:`open_no_link`).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from trainrecord.errors import RecordWriteError, escaped

NAME_MAX = 255
"""The longest file name, in bytes, where ``os.pathconf`` cannot say (every common local
filesystem: ext4, XFS, Btrfs, APFS, NTFS)."""


def name_too_long(folder: Path, what: str) -> OSError | None:
    """An ``OSError`` (``ENAMETOOLONG``) naming the first missing part of ``folder`` whose name
    is longer than its filesystem allows, or None; makes nothing. Checked before a folder is
    made: ``mkdir(parents=True)`` would make the parents first and then fail, leaving them."""
    missing = []
    part = folder
    while not (part.exists() or part.is_symlink()) and part != part.parent:
        missing.append(part)
        part = part.parent
    try:
        limit = os.pathconf(part if part.is_dir() else ".", "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        limit = NAME_MAX
    for name in reversed(missing):
        size = len(os.fsencode(name.name))
        if size > limit:
            shown = name.name if len(name.name) <= 40 else name.name[:40] + "..."
            message = (
                f"{what} {folder}: the name {shown} is {size} bytes, longer than the "
                f"filesystem allows ({limit}); give a shorter name (nothing was made)"
            )
            return OSError(errno.ENAMETOOLONG, message, str(folder))
    return None


def blocked_by(folder: Path) -> Path | None:
    """The path that stands where ``folder`` or one of its parents must be a folder: a
    file, or a link to no folder (dangling or looping); None when ``folder`` is a folder
    or can be made. Makes nothing."""
    for part in (folder, *folder.parents):
        if part.exists() or part.is_symlink():
            return None if part.is_dir() else part
    return None


def make_folder(folder: Path, what: str) -> None:
    """Make ``folder`` and its parents when missing; ``NotADirectoryError`` naming the path
    in the way (``what``: the folder's role, as the message's start) when one is."""
    part = blocked_by(folder)
    if part is not None:
        raise NotADirectoryError(errno.ENOTDIR, in_the_way(folder, part, what), str(part))
    folder.mkdir(parents=True, exist_ok=True)


def in_the_way(folder: Path, part: Path, what: str) -> str:
    """The message for ``part`` standing in the way of ``folder``: what it is and the fix."""
    kind = _kind(part)
    where = "is" if part == folder else f"sits under {part}, which is"
    return f"{what} {folder} {where} {kind}, not a folder; give a folder (it is made when missing)"


def _kind(part: Path) -> str:
    """What ``part``, which is no folder, is: a file, a link to nothing, a link to a file..."""
    if part.is_symlink():
        try:
            mode = os.stat(part).st_mode
        except OSError as exc:
            return "a link loop" if exc.errno == errno.ELOOP else "a link to nothing"
        return "a link to a file" if stat.S_ISREG(mode) else "a link to something not a folder"
    try:
        mode = os.lstat(part).st_mode
    except OSError:
        return "not a folder"
    return "a file" if stat.S_ISREG(mode) else "a special file (a FIFO, a socket or a device)"


def not_regular(mode: int) -> str:
    """What a path of ``st_mode`` ``mode`` that is no regular file is, for a message: "a
    folder", "a FIFO (named pipe)", "a socket" or "a device" (the readers' refusals)."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    return "a socket" if stat.S_ISSOCK(mode) else "a device"


def open_no_link(path: Path, flags: int, mode: int = 0o644, what: str = "") -> int:
    """``os.open(path, flags | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode)``: a descriptor of
    the file itself, never of what a symbolic link at ``path`` points to. Someone who can
    write into a run folder could plant a link at a file the run appends to, cuts or
    locks; the run would then write, truncate or create that file with its owner's rights.
    A link there is a :class:`~trainrecord.errors.RecordWriteError` (an ``OSError``,
    ``ELOOP``) naming it and the fix."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    try:
        return os.open(path, flags | os.O_CREAT | nofollow | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno != errno.ELOOP or not path.is_symlink():
            raise
        role = f"{what} " if what else ""
        raise RecordWriteError(
            errno.ELOOP,
            f"{role}{path} is a symbolic link (to {escaped(os.readlink(path))}); trainrecord never "
            "writes through one, since it could point at any file: remove the link (or "
            "give another folder)",
            str(path),
        ) from None
