"""What a reader sees while a Foundry file is written: the witness appears complete or not
at all (``witness.write.atomic_no_overwrite``), a rewrite replaces metrics.json whole
(``metrics.write.atomic_replace``).

Both are about what another process sees *during* the write, which no check after it can
tell: a writer that creates the final name and fills it in place leaves a complete file
behind. A :class:`Watcher` opens the final name over and over from a thread of the suite,
for as long as the operation runs (and once more after it), and keeps the first content
that is not a complete document as ``seen``. An empty file counts: it is not a complete
document either.

The thread spins without sleeping, so a window of a millisecond is nearly always caught
and one of a few microseconds (a file created, then written in one call) now and then; it
runs only while the operation runs (the suite's own thread then waits on the harness's
pipe, outside the GIL), so its cost is the operation's time.

On Linux the kernel's change events of the folder make the verdict independent of timing:
the watcher also asks inotify for every write to a name in the folder (``IN_MODIFY``). A
file written atomically gets its data under a temporary name and only then its final name
(``link``, ``rename``), so the final name never receives a write; a file filled in place
does, however short the window, and that is reported even when no read fell into it.
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from trainrecord.canonical import loads_strict
from trainrecord_conformance import strategies as S
from trainrecord_conformance.checks.base import Check, Context, Failed

Judge = Callable[[bytes], str | None]
"""What is wrong with the bytes read (None: a complete document, as the writer meant it)."""


IN_MODIFY = 0x00000002
_EVENT = struct.Struct("iIII")


class Writes:
    """Linux: the names in one folder that were written to, from inotify's ``IN_MODIFY``
    events (``available`` is False elsewhere, or when inotify cannot be had)."""

    def __init__(self, folder: Path) -> None:
        self.fd = -1
        init = getattr(_libc(), "inotify_init1", None)
        if init is None:
            return
        fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            return
        if _libc().inotify_add_watch(fd, os.fsencode(folder), IN_MODIFY) < 0:
            os.close(fd)
            return
        self.fd = fd

    @property
    def available(self) -> bool:
        return self.fd >= 0

    def names(self) -> set[str]:
        """The names written to so far (and stop watching)."""
        if self.fd < 0:
            return set()
        data = b""
        try:
            while chunk := os.read(self.fd, 1 << 16):
                data += chunk
        except BlockingIOError:
            pass
        finally:
            os.close(self.fd)
            self.fd = -1
        out: set[str] = set()
        at = 0
        while at + _EVENT.size <= len(data):
            _wd, mask, _cookie, size = _EVENT.unpack_from(data, at)
            name = data[at + _EVENT.size : at + _EVENT.size + size].rstrip(b"\0")
            if mask & IN_MODIFY and name:
                out.add(os.fsdecode(name))
            at += _EVENT.size + size
        return out


_LIBC: list[Any] = []


def _libc() -> Any:
    if not _LIBC:
        try:
            _LIBC.append(ctypes.CDLL(None, use_errno=True))
        except OSError:  # pragma: no cover - no C library to ask
            _LIBC.append(None)
    return _LIBC[0]


class Watcher:
    """Poll ``path`` from a thread while the ``with`` block runs; on Linux, also note
    every write to its name (its folder must exist before the block)."""

    def __init__(self, path: Path, judge: Judge) -> None:
        self.path = path
        self.judge = judge
        self.seen: str | None = None
        self.seen_data: bytes | None = None
        self.before: bytes | None = None
        self.reads = 0
        self._good = b""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._writes: Writes | None = None
        self.in_place = False
        """Whether the name itself received a write (Linux only)."""

    def __enter__(self) -> Watcher:
        self.before = self._bytes()
        if self.path.parent.is_dir():
            self._writes = Writes(self.path.parent)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self._look()
        if self._writes is not None:
            self.in_place = self.path.name in self._writes.names()

    def problem(self, op: str) -> str | None:
        """What a reader could see while ``op`` ran, or None. The file as it was before and
        as ``op`` left it are not in between, whatever they hold: what is wrong with the
        file itself is the writer checks' finding (witness.write.fields, metrics.write.rows,
        the schema rules), not this rule's."""
        if self.seen is not None and self.seen_data not in (self.before, self._bytes()):
            return f"while {op} ran, a reader of {self.path.name} read {self.seen}"
        if self.in_place:
            return (
                f"{op} wrote data into {self.path.name} itself (inotify reported a write to "
                "the final name; no read of this run fell into it): the file was filled in "
                "place, and a reader at that moment reads it empty or partial"
            )
        return None

    def _bytes(self) -> bytes | None:
        try:
            return self.path.read_bytes()
        except OSError:
            return None

    def _poll(self) -> None:
        while not self._stop.is_set() and self.seen is None:
            self._look()

    def _look(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:  # not there yet (nor its folder), or not a file: nothing to read
            return
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 16):
                chunks.append(chunk)
        except OSError:
            return
        finally:
            os.close(fd)
        data = b"".join(chunks)
        self.reads += 1
        if data and data == self._good:
            return
        problem = self.judge(data)
        if problem is None:
            self._good = data
        if problem is not None and self.seen is None:
            shown = data[:120].decode("utf-8", "replace")
            more = f"... ({len(data)} bytes)" if len(data) > 120 else f" ({len(data)} bytes)"
            self.seen = f"{problem}: {shown!r}{more}"
            self.seen_data = data


WITNESS = "https://trainrecord.dev/schemas/foundry/witness.schema.json"
METRICS = "https://trainrecord.dev/schemas/foundry/metrics.schema.json"


def _exact(value: Any) -> str:
    """A document as text that tells 1 from 1.0 and -0.0 from 0.0 (key order aside)."""
    return json.dumps(value, sort_keys=True)


def complete(schema_id: str, expected: list[Any] | None = None) -> Judge:
    """A complete document: strict JSON valid against ``schema_id`` (and, when given, one
    of the ``expected`` documents)."""
    wanted = None if expected is None else {_exact(e) for e in expected}

    def judge(data: bytes) -> str | None:
        if not data:
            return "an empty file"
        try:
            value = loads_strict(data)
        except (ValueError, RecursionError) as exc:
            return f"not one strict JSON document ({str(exc).splitlines()[0][:80]})"
        found = S.oracle_rules(value, schema_id)
        if found:
            return f"a document breaking {sorted(found)}"
        if wanted is not None and _exact(value) not in wanted:
            return "a document that is neither the file before nor the one being written"
        return None

    return judge


def visible_witness(ctx: Context, case: tuple[dict[str, str], dict[str, Any]]) -> None:
    """A reader polling the witness's name while write_witness runs finds no file or the
    complete witness, never an empty or partial one."""
    env, config = case
    folder = ctx.folder(create=True)  # to watch it (the writer takes an existing folder)
    path = folder / f"observed.attempt{int(env.get('SLURM_RESTART_COUNT', '0'))}.json"
    data = {"dir": str(folder), "env": env, "config": config, "device": "cpu", "wall_seconds": 7}
    with Watcher(path, complete(WITNESS)) as watcher:
        result = ctx.run("write_witness", data)
    problem = watcher.problem("write_witness")
    if problem is not None:
        raise Failed(
            f"{problem}: the witness must appear complete or not at all "
            "(witness.write.atomic_no_overwrite; write a temporary file, then link it to "
            "the name)"
        )
    if result.outcome != "ok":
        raise Failed(f"write_witness on a valid input gave {result.describe()}")


def visible_metrics(ctx: Context, case: tuple[list[Any], list[Any]]) -> None:
    """A reader polling metrics.json while write_metrics writes it, then rewrites it,
    finds no file, the rows before or the rows written, never anything in between."""
    first, second = case
    folder = ctx.folder(create=True)  # to watch it (the writer takes an existing folder)
    path = folder / "metrics.json"
    for before, rows in ((None, first), (first, second)):
        expected = [rows] if before is None else [before, rows]
        with Watcher(path, complete(METRICS, expected)) as watcher:
            result = ctx.run("write_metrics", {"dir": str(folder), "rows": rows})
        what = "write_metrics (a first write)" if before is None else "write_metrics (a rewrite)"
        problem = watcher.problem(what)
        if problem is not None:
            raise Failed(
                f"{problem}: the file must be replaced whole (metrics.write.atomic_replace; "
                "write a temporary file, then rename it over the name)"
            )
        if result.outcome != "ok":
            raise Failed(f"write_metrics on valid rows gave {result.describe()}")


def checks() -> list[Check]:
    """A reader polling during the witness and metrics writes."""
    return [
        Check(
            "witness.write.atomic_no_overwrite",
            "a reader polling during the write never sees a partial witness",
            frozenset({"write_witness"}),
            lambda t: st.tuples(S.foundry_env(), S.configs()),
            visible_witness,
        ),
        Check(
            "metrics.write.atomic_replace",
            "a reader polling during a write and a rewrite sees each file whole",
            frozenset({"write_metrics"}),
            lambda t: st.tuples(S.valid_instances(METRICS), S.valid_instances(METRICS)),
            visible_metrics,
        ),
    ]
