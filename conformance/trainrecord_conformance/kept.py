"""What a failing check leaves for its implementer: the harness requests of the failing
example, as the harness got them, and the files they name, copied where they stay.

The counterexample Hypothesis shrinks to is the check's own draw (events, rows, a line
number to tamper); what an implementer can replay is the requests the check sent for it.
The folders they name live under the run's temporary root, removed when the run ends: on a
failure they are copied to ``<tmp>/trainrecord-conformance-failures-<run>/<check>-<unique>/`` (FIFOs
made again, links kept as links, at most :data:`MAX_BYTES` of files) and the requests are
shown with those paths."""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

MAX_BYTES = 64 << 20
"""Files a failure keeps at most (a larger example is named, not copied)."""

_ROOT: list[Path] = []


def failures_root() -> Path:
    """Where this run keeps the files of its failures: one folder per run, made on first
    use by ``mkdtemp`` (private to the user, a name no one could have put a link at, in a
    temporary folder others share)."""
    if not _ROOT:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        _ROOT.append(Path(tempfile.mkdtemp(prefix=f"trainrecord-conformance-failures-{stamp}-")))
    return _ROOT[0]


def keep(root: Path, sent: list[tuple[str, dict[str, Any]]], check: str) -> tuple[list[Any], str]:
    """The requests ``sent`` (operation, input) as harness run lines, with every path under
    ``root`` moved to its kept copy; and a note on where the files are (or why not)."""
    cases = sorted({case for _, data in sent for case in _cases(data, root)})
    note = ""
    moved: dict[str, str] = {}
    if cases:
        size = sum(_size(root / c) for c in cases)
        if size > MAX_BYTES:
            note = f"the files they name ({size} bytes) were not kept (over {MAX_BYTES})"
        else:
            # one folder per failure: checks share names across rules, and targets of one
            # run count their cases from case0 alike (a later failure replaced the files)
            name = re.sub(r"[^A-Za-z0-9._-]+", "_", check)[:100]
            dest = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=failures_root()))
            for case in cases:
                src = root / case
                if src.exists() or src.is_symlink():
                    _copy(src, dest / case)
                moved[str(src)] = str(dest / case)
            note = f"the files they name are kept, as they were when the check failed, in {dest}"
    requests = [
        {"cmd": "run", "seq": i, "op": op, "input": _moved(data, moved)}
        for i, (op, data) in enumerate(sent, 1)
    ]
    return requests, note


def _cases(value: Any, root: Path) -> set[str]:
    """The case folders under ``root`` that ``value`` names anywhere in its strings."""
    prefix = f"{root}{os.sep}"
    if isinstance(value, str):
        if value.startswith(prefix):
            return {value[len(prefix) :].split(os.sep, 1)[0]}
        return set()
    if isinstance(value, dict):
        return set().union(*(_cases(v, root) for v in value.values()))
    if isinstance(value, (list, tuple)):
        return set().union(*(_cases(v, root) for v in value))
    return set()


def _moved(value: Any, moved: dict[str, str]) -> Any:
    if isinstance(value, str):
        for src, dst in moved.items():
            if value == src or value.startswith(src + os.sep):
                return dst + value[len(src) :]
        return value
    if isinstance(value, dict):
        return {k: _moved(v, moved) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_moved(v, moved) for v in value]
    return value


def _size(path: Path) -> int:
    if path.is_symlink() or not path.exists():
        return 0
    if path.is_file():
        return path.stat().st_size
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _copy(src: Path, dst: Path) -> None:
    """``src`` (a folder, a file, a link, a FIFO) at ``dst``; never reads a FIFO."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    mode = os.lstat(src).st_mode
    if stat.S_ISLNK(mode):
        os.symlink(os.readlink(src), dst)
    elif stat.S_ISDIR(mode):
        dst.mkdir(exist_ok=True)
        for child in sorted(src.iterdir()):
            _copy(child, dst / child.name)
    elif stat.S_ISFIFO(mode):
        os.mkfifo(dst)
    elif stat.S_ISREG(mode):
        shutil.copy2(src, dst)
