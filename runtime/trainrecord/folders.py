"""Folders a record is written into: made when missing, with the file in the way named.

``Path.mkdir(parents=True, exist_ok=True)`` says only "File exists" when a file (or a link
that leads to no folder) stands where the folder or one of its parents must be; the
writers, ``open_run`` and ``keygen`` name that path instead, before anything is made.
"""

from __future__ import annotations

import errno
from pathlib import Path


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
    kind = "a link to no folder" if part.is_symlink() else "a file"
    where = "is" if part == folder else f"sits under {part}, which is"
    return f"{what} {folder} {where} {kind}, not a folder; give a folder (it is made when missing)"
