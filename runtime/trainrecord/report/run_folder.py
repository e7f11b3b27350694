"""A run's identity from its run folder (§3, §4 of the reporting seed).

A run is one folder (``models/<group>/<name>`` or ``wordsets/<name>``). Its ``run_id`` (a
UUID, the receiver's primary key) is stored in the folder's ``metadata.json`` and stays the
same across resumes; a folder that was deleted (a discarded run) and started again is a new
run with a new run_id. :func:`open_run` is the one call a job makes at every start:

* **fresh folder**: creates the folder and ``metadata.json`` holding a new UUID4
  ``run_id``, ``started_at`` (now, the run's first start) and the job's own ``metadata``
  fields. The file is created atomically and exclusively (temporary file, fsync, hard
  link to the final name, folder fsync: :func:`trainrecord.foundry.files.create_new`), so
  of several processes starting the same folder at once exactly one run_id is written and
  every process uses it.
* **resume**: reads ``metadata.json`` (strict JSON, one object) and returns its run_id and
  started_at unchanged, with every other field the job stored. A metadata.json that is not
  strict JSON (``report.metadata.json``) or whose run_id is not a UUID in canonical
  lowercase form (``report.metadata.run_id``) is refused; it is never replaced.
* **metadata.json without run_id** (the job wrote its metadata first): a run_id and
  started_at are added, every other field kept, under an exclusive lock (``fcntl``) and
  with an atomic replace, so again exactly one run_id is ever written.

The returned :class:`RunFolder` builds the job's :class:`~trainrecord.report.JobState`
(run_id, name and group from the folder, started_at from metadata.json) and its
:class:`~trainrecord.report.SeqClock`, whose last seq is kept beside metadata.json in
``report_seq.json`` so seq keeps rising across resumes and processes.

A start refused before any work (the :class:`~trainrecord.report.Reporter` refuses the
job's first report) is undone by :meth:`RunFolder.undo_start`: the metadata.json this start
created is removed (one the job wrote without a run_id is restored byte for byte) and the
folders ``open_run`` made are removed when empty, so the next start is a new run, not a
resume. A resumed run, and anything that existed before the start, are never touched.

Public API: :func:`open_run` ``(folder, metadata=None, *, create=True) -> RunFolder``; :class:`RunFolder`
(``folder``, ``run_id``, ``started_at``, ``created``, ``resumed``, ``metadata``,
``new_folder``, ``name``, ``group``, ``seq_path``, ``job_state(kind, config, **fields)``,
``seq_clock(clock=None)``, ``update(**fields)``, ``undo_start(secrets=None)``, ``spend()``,
``discard()``); :func:`is_run_id`; :data:`METADATA`.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Unpack

from trainrecord.arguments import ArgumentRefused
from trainrecord.canonical import dumps_strict
from trainrecord.errors import RecordRefused, RecordWriteError
from trainrecord.folders import make_folder, open_no_link
from trainrecord.foundry import files
from trainrecord.report.payload import (
    JobState,
    JobStateFields,
    Kind,
    check_kind,
    consistent_entry,
    local_time,
    mended_entry,
)
from trainrecord.report.privacy import Secrets, exception_said
from trainrecord.report.seq import ELSEWHERE, SEQ_FILE, SeqClock, unwritable, written

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the exclusive create still holds
    fcntl = None  # type: ignore[assignment]

METADATA = "metadata.json"
"""The name of the run's metadata file in its folder."""
LOCK = ".metadata.json.lock"
"""The lock file that serialises changes to an existing metadata.json."""
ACTIVE = ".report.active.lock"
"""The lock file every Reporter given the run folder holds shared while it reports the run
(:func:`hold`): a Ctrl+C deletes the folder only when no other process holds it
(:func:`alone`), and a second process reporting the run at once is told so."""
RESERVED = ("run_id", "started_at")
"""Fields of metadata.json that :func:`open_run` owns; a job does not set them."""
HISTORY = "report_history"
"""The metadata.json field where a Reporter given the run folder keeps the run's history
(the epoch entries sent so far), so that a resume or a snapshot from another process
reports the whole history."""
log = logging.getLogger("trainrecord.report")
RULE_JSON = "report.metadata.json"
RULE_RUN_ID = "report.metadata.run_id"
RULE_STABLE = "report.run_id.stable"

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def is_run_id(value: Any) -> bool:
    """Whether ``value`` is a UUID string in canonical lowercase 8-4-4-4-12 form."""
    return isinstance(value, str) and _UUID.fullmatch(value) is not None


@dataclass(frozen=True)
class RunFolder:
    """One run's folder and identity, as :func:`open_run` found or made it."""

    folder: Path
    run_id: str
    started_at: str | None
    created: bool
    """True when this call wrote the run_id (a new run); False on a resume."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """The whole of metadata.json as read or written (a copy; run_id included)."""
    new_folder: bool = False
    """True when this call made the folder itself: only such a folder may ever be deleted
    (:meth:`discard`); one that existed before may hold files of something else."""
    made: tuple[Path, ...] = field(default=(), compare=False, repr=False)
    """The folders this call made (the run folder, then the missing parents above it),
    deepest first; :meth:`undo_start` removes those that are still empty."""
    before: bytes | None = field(default=None, compare=False, repr=False)
    """metadata.json as it was before this call added a run_id to it (the job wrote its
    metadata first); None when this call created the file or resumed the run."""
    _undo: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    @property
    def resumed(self) -> bool:
        """True when the run existed before this start (same run_id as before)."""
        return not self.created

    @property
    def name(self) -> str:
        """The run's folder name, the report's ``name``."""
        return self.folder.name

    @property
    def group(self) -> str:
        """The folder the run is in, the report's ``group`` (``wordsets`` for a word set)."""
        return self.folder.parent.name

    @property
    def metadata_path(self) -> Path:
        """The run's metadata.json."""
        return self.folder / METADATA

    @property
    def seq_path(self) -> Path:
        """The file beside metadata.json that keeps the run's last seq."""
        return self.folder / SEQ_FILE

    def seq_clock(self, clock: Callable[[], int] | None = None) -> SeqClock:
        """The run's seq clock, shared through ``report_seq.json`` by every process."""
        return SeqClock(self.seq_path, clock=clock)

    def job_state(
        self, kind: Kind, config: dict[str, Any], **fields: Unpack[JobStateFields]
    ) -> JobState:
        """A :class:`JobState` with this run's run_id, name, group and first start time.

        ``fields`` are the other JobState fields (``epochs_first``, ``epochs_total``,
        ``words_total``, ...; typed by :class:`~trainrecord.report.payload.JobStateFields`,
        so a type checker flags a misspelt one); ``name`` and ``group`` may be given to
        override the folder's.
        ``history`` defaults to the one a Reporter kept in metadata.json (:data:`HISTORY`):
        a resumed job and a snapshot from another process report every epoch so far. A
        kept entry that breaks the spec (the schema, or a consistency rule tying it to
        ``config`` or to the entry before it) is mended or left out, with a warning, as
        :meth:`Reporter.epoch_end <trainrecord.report.Reporter.epoch_end>` does.
        """
        check_kind(kind)
        identity: dict[str, Any] = {
            "name": self.name,
            "group": self.group,
            "started_at": self.started_at,
        }
        if "run_id" in fields:
            raise ArgumentRefused(
                "RunFolder.job_state", "run_id", "run_id comes from the run folder; do not pass it"
            )
        kept = self.metadata.get(HISTORY)
        if kind != "wordset" and isinstance(kept, list):
            # The epochs of earlier sessions. An entry no report may carry (kept by an
            # older version, or edited) is mended or left out, with a warning, as at
            # epoch_end: kept, it would make every report of the run unsendable.
            where = f"{METADATA} {HISTORY} of {self.group}/{self.name}"
            history: list[dict[str, Any]] = []
            for entry in kept:
                last = history[-1].get("epoch") if history else None
                fitted = consistent_entry(
                    kind,
                    config,
                    mended_entry(kind, entry, where=where),
                    where=where,
                    previous_epoch=last if isinstance(last, int) else None,
                )
                if fitted is not None:
                    history.append(fitted)
            identity["history"] = history
        identity.update(fields)
        return JobState(kind=kind, run_id=self.run_id, config=config, **identity)

    def update(self, **fields: Any) -> dict[str, Any]:
        """Store ``fields`` in metadata.json (atomically, under the lock), keeping the rest.

        run_id never changes: a different one is refused with ``report.run_id.stable``.
        Returns the new content of metadata.json.
        """
        if "run_id" in fields and fields["run_id"] != self.run_id:
            raise RecordRefused.one(
                RULE_STABLE,
                ("run_id",),
                "a run keeps its run_id across resumes; start a new folder for a new run",
                fields["run_id"],
            )
        with _locked(self.folder, self.metadata_path):
            current = _read(self.metadata_path)
            stored = current.get("run_id")
            if stored != self.run_id:
                raise RecordRefused.one(
                    RULE_STABLE,
                    ("run_id",),
                    f"{METADATA} now holds another run's run_id (the folder was started "
                    "again); this run can no longer store its metadata there",
                    stored,
                )
            merged = {**current, **fields}
            _replace(self.metadata_path, _encode(merged))
        return merged

    def undo_start(self, secrets: Secrets | None = None) -> bool:
        """Undo this start of a new run, refused before any work (the
        :class:`~trainrecord.report.Reporter` calls it when it refuses the job's first
        report), so that the next start is a new run, not a resume of this one.

        Only a run this start created (``created``; never a resume), only while
        metadata.json still holds exactly what this start wrote and no report took a seq
        (no ``report_seq.json``), and only until a Reporter accepted the run: then the
        metadata.json this start created is removed (one that existed before without a
        run_id is restored byte for byte), and the folders :func:`open_run` made are
        removed when empty. Nothing that existed before this start is removed. Returns
        whether the start was undone; a file system error is a warning, never raised (its
        message scrubbed of ``secrets``' token and the home folder, and escaped).
        """
        if not self.created or self._undo.get("spent"):
            return False
        self._undo["spent"] = True
        try:
            if self.seq_path.exists() or _read(self.metadata_path) != self.metadata:
                return False  # a report took a seq, or the job changed metadata.json
        except (OSError, RecordRefused):
            return False  # gone or rewritten since: not this start's to undo
        try:
            if self.before is not None:
                with _locked(self.folder, self.metadata_path):
                    if _read(self.metadata_path) != self.metadata:
                        return False
                    _replace(self.metadata_path, self.before)
            else:
                self.metadata_path.unlink()
                _fsync_dir(self.folder)
        except (OSError, RecordRefused) as exc:
            log.warning(
                "trainrecord report: the refused start of %s/%s could not be undone (%s); "
                "its next start resumes it unless %s is deleted",
                self.group,
                self.name,
                exception_said(exc, secrets),
                self.metadata_path.name,
            )
            return False
        _unmake(self.made)
        return True

    def spend(self) -> None:
        """A Reporter accepted this run: from now on :meth:`undo_start` does nothing."""
        self._undo["spent"] = True

    def discard(self) -> None:
        """Delete the run folder (a discarded run, §3); its next start is a new run.

        The :class:`~trainrecord.report.Reporter` given this folder (``run=``) calls it at
        Ctrl+C for a new (not resumed) training run that finished no epoch, and only then.
        """
        shutil.rmtree(self.folder)


def open_run(
    folder: str | os.PathLike[str],
    metadata: Mapping[str, Any] | None = None,
    *,
    create: bool = True,
) -> RunFolder:
    """Start or resume the run in ``folder``; see the module docstring.

    ``metadata``: the job's own fields for metadata.json, written with the new run_id when
    the run is first started. On a resume the stored fields are kept and returned as they
    are (change them with :meth:`RunFolder.update`). ``create=False`` only reads an
    existing run (e.g. for a ``report_status()`` snapshot from another process): a missing
    metadata.json raises ``FileNotFoundError`` and one without a run_id is refused
    (``report.metadata.run_id``); nothing is written.

    Args:
        folder: the run's folder (made, with its missing parents, on a first start). Its
            name is the report's ``name``, its parent folder's name the ``group``.
        metadata: the job's own fields for metadata.json (JSON values), written on the
            first start only (default None: none). ``run_id`` or ``started_at`` in it
            raises ``ValueError``: open_run chooses them.
        create: start a new run when there is none (default True); False only reads an
            existing run.

    A metadata.json that is not strict JSON, or whose run_id is not a lowercase UUID, is
    refused (``report.metadata.json``, ``report.metadata.run_id``), never replaced::

        run = open_run("models/pre/pre_s_49", {"mode": "pre", "batch_size": 100})
        print(run.run_id, run.resumed)   # the same run_id on every resume
        state = run.job_state("training", config("training", mode="pre", batch_size=100,
                              lr=0.01), epochs_first=0, epochs_total=50)
    """
    path = Path(os.path.abspath(folder))
    fields = dict(metadata or {})
    for name in RESERVED:
        if name in fields:
            raise ArgumentRefused(
                "open_run", "metadata", f"{name} is chosen by open_run; remove it from metadata"
            )
    if not create:
        stored = _read(path / METADATA)
        if "run_id" not in stored:
            raise RecordRefused.one(
                RULE_RUN_ID,
                ("run_id",),
                f"{METADATA} holds no run_id: the run was never started with open_run; "
                "start it first",
            )
        return _resumed(path, stored)
    made: list[Path] = []
    missing = path
    while not missing.exists() and missing != missing.parent:
        made.append(missing)  # deepest first
        missing = missing.parent
    new_folder = bool(made)
    target = path / METADATA
    for _ in range(10):
        record = {"run_id": str(uuid.uuid4()), "started_at": local_time(), **fields}
        data = _encode(record)
        try:
            _create(path, target, data, made)
        except FileExistsError:
            pass
        else:
            return RunFolder(
                path, record["run_id"], record["started_at"], True, record, new_folder, tuple(made)
            )
        try:
            stored = _read(target)
        except FileNotFoundError:  # deleted (discarded) meanwhile: start afresh
            path.mkdir(parents=True, exist_ok=True)
            continue
        if "run_id" in stored:
            return _resumed(path, stored)
        return _add_run_id(path, target, tuple(made))
    raise RuntimeError(f"{METADATA} kept appearing and disappearing; is the folder shared?")


def _create(path: Path, target: Path, data: bytes, made: list[Path]) -> None:
    """Make the run folder and create its metadata.json (``FileExistsError``: there is one).

    A part in the way of the folder is ``NotADirectoryError`` naming it; a folder or file
    that cannot be written (a read-only mount, a full disk) is a
    :class:`~trainrecord.errors.RecordWriteError` naming metadata.json, the cause and the
    fix, and the folders made for it (``made``) are removed again: nothing is left, so the
    next start is a new run in a folder it makes (and may discard) itself."""
    try:
        make_folder(path, "the run folder")
    except NotADirectoryError:
        raise
    except OSError as exc:
        _unmake(made)
        with files.failures_named(target, elsewhere=ELSEWHERE):
            raise exc
    if target.exists():  # a resume reads it: no write, so a read-only folder resumes
        raise FileExistsError(errno.EEXIST, "exists", str(target))
    try:
        with files.failures_named(target, elsewhere=ELSEWHERE):
            files.create_new(target, data)
    except RecordWriteError:
        _unmake(made)
        raise
    written(path)


def _unmake(made: tuple[Path, ...] | list[Path]) -> None:
    """Remove the folders a start made (deepest first), each only while it is empty: never
    anything put there since."""
    for folder in made:
        try:
            folder.rmdir()
        except FileNotFoundError:
            continue  # not made after all (the making failed below it)
        except OSError:
            break


def _replace(target: Path, data: bytes) -> None:
    """Replace ``target`` (metadata.json) whole: a failure (a read-only mount, a full disk) is
    a :class:`~trainrecord.errors.RecordWriteError` naming it, the file left as it was."""
    with files.failures_named(target, elsewhere=ELSEWHERE):
        files.replace(target, data)
    written(target.parent)


def _resumed(folder: Path, stored: dict[str, Any]) -> RunFolder:
    run_id = stored["run_id"]
    if not is_run_id(run_id):
        raise RecordRefused.one(
            RULE_RUN_ID,
            ("run_id",),
            f"the run_id in {METADATA} must be a UUID in lowercase 8-4-4-4-12 form; "
            "restore the run's own run_id (a new one would make it another run)",
            run_id,
        )
    started = stored.get("started_at")
    return RunFolder(folder, run_id, started if isinstance(started, str) else None, False, stored)


def _add_run_id(folder: Path, target: Path, made: tuple[Path, ...]) -> RunFolder:
    """metadata.json exists without a run_id: add one (once, whoever races for it)."""
    with _locked(folder, target):
        before = target.read_bytes()
        stored = _read(target)
        if "run_id" in stored:
            return _resumed(folder, stored)
        record = {"run_id": str(uuid.uuid4()), "started_at": local_time(), **stored}
        _replace(target, _encode(record))
    return RunFolder(
        folder, record["run_id"], record["started_at"], True, record, bool(made), made, before
    )


def _fsync_dir(folder: Path) -> None:
    """Make a removal in ``folder`` durable (POSIX; a no-op where folders cannot be opened)."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def stored_run_id(folder: Path) -> str | None:
    """The run_id metadata.json in ``folder`` holds now (None: no metadata.json, or none
    in it). One that is not strict JSON is refused (``report.metadata.json``)."""
    try:
        stored = _read(folder / METADATA).get("run_id")
    except FileNotFoundError:
        return None
    return stored if isinstance(stored, str) else None


def _read(target: Path) -> dict[str, Any]:
    value, _ = files.read_json(target, RULE_JSON)
    if not isinstance(value, dict):
        raise RecordRefused.one(
            RULE_JSON,
            (),
            f"{METADATA} must hold one JSON object, not {type(value).__name__}; "
            "restore the run's metadata",
        )
    return value


def _encode(record: Mapping[str, Any]) -> bytes:
    try:
        return (dumps_strict(dict(record), indent=2) + "\n").encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise RecordRefused.one(
            RULE_JSON,
            (),
            f"the metadata for {METADATA} must be strict JSON (no NaN, Infinity or "
            f"objects JSON has no form for): {str(exc)[:120]}",
        ) from None


def hold(folder: Path) -> tuple[IO[bytes] | None, bool]:
    """Hold the run in ``folder`` as reported by this process: a shared lock on
    :data:`ACTIVE`, kept until the returned handle is closed. Returns the handle (None where
    there is no ``fcntl``, or the file cannot be made) and whether another process held the
    run already (two processes reporting one run: the receiver keeps whichever reports
    last). A lock file that cannot be made (a read-only mount, a full disk) is said once
    (:func:`~trainrecord.report.seq.unwritable`, with what is lost: :data:`UNHELD`)."""
    if fcntl is None:  # pragma: no cover - not POSIX
        return None, False
    try:
        with files.failures_named(folder / ACTIVE, elsewhere=ELSEWHERE):
            handle = os.fdopen(open_no_link(folder / ACTIVE, os.O_RDWR), "r+b")
    except RecordWriteError as exc:
        unwritable(exc, also=UNHELD)
        return None, False
    except OSError:
        return None, False
    others = False
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        others = True
    except OSError:
        handle.close()
        return None, False
    fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
    _HELD.add(handle)
    return handle, others


UNHELD = (
    "Nor is another process reporting this run at the same time detected (its lock file "
    f"{ACTIVE} cannot be made): no warning when a second one starts, and a Ctrl+C may "
    "delete a new run's folder while the other still reports from it."
)
"""What :func:`hold` says is lost when it cannot make :data:`ACTIVE`."""


def release(handle: IO[bytes] | None) -> None:
    """Stop holding the run (see :func:`hold`)."""
    if handle is not None:
        _HELD.discard(handle)
        handle.close()


_HELD: set[IO[bytes]] = set()
"""The handles :func:`hold` gave out and not yet released: a forked child (a DataLoader
worker) closes its copies at once, or its inherited descriptor kept the run held after the
Reporter had closed (a later Reporter was told another process reports the run)."""


def _forget_held_in_child() -> None:
    for handle in list(_HELD):
        with contextlib.suppress(OSError):
            handle.close()
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_held_in_child)


def alone(handle: IO[bytes] | None) -> bool:
    """Whether no other process holds the run (see :func:`hold`). When so, ``handle`` now
    holds it exclusively: a process starting to report it waits until this one closes the
    handle (after deleting the folder). When not, ``handle`` holds it shared again."""
    if fcntl is None or handle is None:  # pragma: no cover - not POSIX
        return True
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # (a failed conversion drops the lock: take it shared again)
        fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
        return False
    return True


@contextlib.contextmanager
def _locked(folder: Path, target: Path) -> Iterator[None]:
    """Hold the lock on changes to ``target`` (metadata.json); a lock file that cannot be
    made or opened (a read-only mount) is the RecordWriteError naming ``target``."""
    if fcntl is None:  # pragma: no cover - not POSIX
        yield
        return
    with files.failures_named(target, elsewhere=ELSEWHERE):
        fd = open_no_link(folder / LOCK, os.O_RDWR)
    with os.fdopen(fd, "r+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
