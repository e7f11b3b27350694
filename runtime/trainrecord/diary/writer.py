"""DiaryWriter and MetricsWriter: append hash-chained events and metrics rows.

``DiaryWriter(run_dir)`` creates ``run_dir/diary.jsonl``, or resumes an existing diary after
verifying it (continuing its seq and chain). ``append(event, fields)`` adds seq, time,
event, prev and hash, checks the line against its event's schema and against the verifier's
own cross-field rules (:mod:`trainrecord.diary.relations`: a run_end's checks, a repair's
relative_change; an invalid event raises :class:`~trainrecord.errors.RecordRefused` and
writes nothing), writes it as one line and returns it. Non-finite floats in ``fields``
become the strings "NaN", "Infinity", "-Infinity" first. Every line is written whole in one
``os.write`` and fsynced by policy (see :mod:`trainrecord.diary.durability`); a write that
fails (a full disk) leaves no part of its line behind and refuses every later line, with a
:class:`~trainrecord.errors.RecordWriteError`. On close the writer seals the record
(record.json, and record.sig when given a signing key), unless a write failed.

Every argument is checked before any file or folder is made (:mod:`trainrecord.arguments`;
a signing key is loaded then too, not at close after the whole run). A DiaryWriter that
made diary.jsonl and refuses its first line, or closes without one, removes the file again
while it is empty: a 0-byte diary.jsonl is a record that fails verification
(``diary.file.empty``). An empty metrics.jsonl is kept: it is the record of no rows, which a
run_end names (``diary.metrics.sha256``: a missing file is not an empty one).

Resuming a signed record: appending outdates the seal and its signature (they pin the old
head), so the writer removes record.json and record.sig. With ``signing_key=`` it signs the
new seal at close; without one the record is sealed unsigned, and a warning (logger
``trainrecord.diary``) names record.sig, the key that had signed it, and how to sign again,
when the writer resumes and again when it seals.

Resuming verifies the diary, and a record signed by the ``signing_key`` given has that
signature checked (a bad one is refused, never signed again). The chain alone, which anyone
can recompute, cannot tell a crashed diary from an edited one whose seal was removed, so a
record resumed without a seal that vouches for it (no record.json although its last session
ended with run_end: a writer seals at close; no record.json and no run_end, as a crash
leaves it; an unsigned seal, for a writer with a signing key) is resumed with a warning at
the resume and at close that the new seal (and signature) covers its lines as they are
(:attr:`DiaryWriter.unvouched`). ``require_seal=True`` refuses such a resume instead
(``diary.writer.resume``), and one of a record signed by another key. Any other warning of
the verification (a torn metrics row) is logged too.

Every string of a diary line, object keys included, must be Unicode text: one holding a
surrogate code point is refused (``diary.text.surrogate``), since it cannot be UTF-8 and
does not read back as the same string (two lone surrogates read back as one character, and
the line's hash fails). A metrics row may hold one: its bytes (``\\udXXX`` escapes) are what
run_end's digest covers, never re-serialised.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from pathlib import Path
from types import TracebackType
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a runtime dependency; json still works
    orjson = None  # type: ignore[assignment]

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from trainrecord import arguments
from trainrecord.canonical import GENESIS, canonical_line, loads_strict
from trainrecord.diary.durability import AppendFile, FsyncPolicy, check_fsync_policy, fsync_dir
from trainrecord.diary.events import (
    COMMON_FIELDS,
    METRICS_ROW_SCHEMA,
    check_line,
    fast_problems,
)
from trainrecord.diary.keys import fingerprint, load_private_key
from trainrecord.diary.nonfinite import encode
from trainrecord.diary.relations import relation_refusal
from trainrecord.diary.verifier import DIARY, METRICS, SEAL, SIGNATURE, VerifyResult, verify
from trainrecord.errors import Problem, RecordRefused, WriterClosed, printable, safe_value
from trainrecord.folders import make_folder

LOGGER = logging.getLogger("trainrecord.diary")

RESUMED = "(resumed)"
"""``last_event`` of a writer that resumed a diary without run_end (a crashed session)."""

SYNC_EVENTS = frozenset({"run_start", "run_end"})
"""Events that are always fsynced, besides every event of severity critical."""


def signing_key_from(source: Any, call: str = "DiaryWriter") -> Ed25519PrivateKey | None:
    """The Ed25519 private key ``signing_key=`` names (a key object, PEM bytes or the path
    of a PEM file), loaded now: a writer finds a missing or wrong key when it is made, not
    at close after the whole run. A refusal has rule ``seal.key.format`` and names the
    file, never its content; None stays None."""
    if source is None or isinstance(source, Ed25519PrivateKey):
        return source
    if isinstance(source, Ed25519PublicKey):
        raise RecordRefused.one(
            "seal.key.format",
            ["signing_key"],
            f"{call}(signing_key=...) is a public key: signing needs the private key (the "
            "file trainrecord keygen wrote without .pub)",
        )
    if isinstance(source, bytes):
        return load_private_key(source)
    if not isinstance(source, (str, os.PathLike)) or not os.fspath(source):
        raise arguments.ArgumentRefused(  # (the value is not shown: it may be a secret)
            call,
            "signing_key",
            "signing_key must be the path of an Ed25519 private key file (trainrecord keygen "
            "writes one), its PEM bytes, a key object, or None; got "
            + ("''" if isinstance(source, str) else f"a {type(source).__name__}"),
        )
    path = Path(os.fspath(source))
    how = (
        "pass the private key file trainrecord keygen wrote (`trainrecord keygen "
        "keys/signer` makes keys/signer and keys/signer.pub), or leave signing_key out "
        "for an unsigned seal"
    )
    try:
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise RecordRefused.one(
            "seal.key.format",
            [str(path)],
            f"{call}(signing_key=...) cannot be read ({reason}); {how}",
        ) from None
    if b"PUBLIC KEY-----" in data and b"PRIVATE KEY-----" not in data:
        raise RecordRefused.one(
            "seal.key.format",
            [str(path)],
            f"{call}(signing_key=...) is a public key: signing needs the private key (the "
            "file trainrecord keygen wrote without .pub)",
        )
    try:
        return load_private_key(data)
    except RecordRefused as exc:  # named by the path, not "the given key"
        raise RecordRefused.one(
            "seal.key.format", [str(path)], f"{call}(signing_key=...): {exc.problems[0].message}"
        ) from None


def _signer(run_dir: Path) -> str | None:
    """The key fingerprint record.json names as the signer of ``run_dir``'s seal, "" when
    record.sig is there but record.json does not say whose it is; None when unsigned."""
    if not (run_dir / SIGNATURE).exists():
        return None
    try:
        seal = loads_strict((run_dir / SEAL).read_bytes())
        found = seal["signature"]["public_key_sha256"]
    except (OSError, ValueError, TypeError, KeyError):
        return ""
    return found if isinstance(found, str) else ""


def _check_call(event: Any, fields: Any) -> None:
    """Refuse an event name that is no name, fields that are no dict or hold the fields
    the writer sets."""
    if not isinstance(event, str) or not event:
        raise RecordRefused.one(
            "diary.event.format", ["event"], "event must be a non-empty string", event
        )
    if not isinstance(fields, dict):
        raise RecordRefused.one(
            "diary.line.type", ["fields"], "fields must be a dict of the event's fields", fields
        )
    reserved = sorted(set(fields) & set(COMMON_FIELDS))
    if reserved:
        raise RecordRefused.one(
            "diary.writer.reserved",
            [reserved[0]],
            "the writer sets seq, time, event, prev and hash; remove them from fields",
        )


_SURROGATE = re.compile("[\ud800-\udfff]")


def _shown(text: str) -> str:
    """``text`` with each surrogate code point as its escape (``\\ud800``): printable."""
    return printable(text)


def surrogate_problem(body: Any) -> Problem | None:
    """The ``diary.text.surrogate`` problem of the first string in ``body`` (an object key
    or a value, at any depth) that holds a surrogate code point (U+D800 to U+DFFF), or None.

    Such a string is not Unicode text (not a sequence of Unicode scalar values): UTF-8
    cannot encode it, and JSON written from it does not read back as the same text (a
    lone high surrogate followed by a lone low one is written as ``"\\ud83d\\udc80"``,
    which every JSON parser reads as ONE character, sorted elsewhere: the line's own hash
    would fail). Python strings hold them (``os.fsdecode`` of a file name that is not
    UTF-8, ``surrogateescape``); JSON text written with ``\\u`` escapes can too."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), body)]
    while stack:
        at, value = stack.pop()
        if isinstance(value, dict):
            for key in value:
                if isinstance(key, str) and _SURROGATE.search(key):
                    return _surrogate((*at, _shown(key)), key, "the key")
            stack.extend(((*at, k), v) for k, v in reversed(value.items()))
        elif isinstance(value, (list, tuple)):
            stack.extend(((*at, i), v) for i, v in reversed(list(enumerate(value))))
        elif isinstance(value, str) and _SURROGATE.search(value):
            return _surrogate(at, value, "the text")
    return None


def _surrogate(at: tuple[str | int, ...], text: str, kind: str) -> Problem:
    """The ``diary.text.surrogate`` problem of ``text`` (a key or a value) at ``at``."""
    point = ord(_SURROGATE.findall(text)[0])
    return Problem(
        "diary.text.surrogate",
        at,
        f"{kind} holds the surrogate code point U+{point:04X}, which is not Unicode text "
        "(UTF-8 cannot encode it; JSON readers read a high and a low surrogate back as one "
        "character, so the line would not verify): give valid Unicode text (decode bytes "
        "with their real encoding, not surrogateescape; a character beyond U+FFFF as "
        "itself, not as two surrogates)",
        safe_value(text),
    )


def _checked_body(
    event: str, fields: dict[str, Any], seq: int, head: str, validate: bool
) -> tuple[dict[str, Any], str]:
    """The line at ``seq`` after ``head`` without prev and hash, and its canonical text;
    or the refusal of its fields (fields nested deeper than Python's recursion goes, a
    config of hundreds of levels, included: never a RecursionError from inside)."""
    try:
        return _body_of(event, fields, seq, head, validate)
    except RecursionError:
        raise RecordRefused.one(
            "diary.file.json",
            ["fields"],
            "the fields nest too deeply to be written (hundreds of levels); flatten them",
        ) from None


def _body_of(
    event: str, fields: dict[str, Any], seq: int, head: str, validate: bool
) -> tuple[dict[str, Any], str]:
    body = {"seq": seq, "time": round(time.time(), 3), "event": event, **encode(fields)}
    if validate:
        found = check_line({**body, "prev": head, "hash": GENESIS})
        if found:
            raise RecordRefused(found)
        related = relation_refusal(event, body)  # the verifier's cross-field rules
        if related is not None:
            raise RecordRefused([related])
    try:
        text = canonical_line(body)
    except (TypeError, ValueError) as exc:
        raise RecordRefused.one(
            "diary.file.json", ["fields"], f"a field cannot be written as JSON: {exc}"
        ) from None
    if "\\ud" in text:  # (json.dumps escapes every surrogate as \udXXX: most lines skip this)
        problem = surrogate_problem(body)
        if problem is not None:
            raise RecordRefused([problem])
    return body, text


def check_event(event: str, fields: dict[str, Any]) -> None:
    """Raise the :class:`~trainrecord.errors.RecordRefused` that a writer's
    ``append(event, fields)`` would raise for these fields (the order of events aside),
    writing nothing: the Monitor checks its run_start so before it makes any file."""
    _check_call(event, fields)
    _checked_body(event, fields, 0, GENESIS, True)


class DiaryWriter:
    """Append events to ``run_dir/diary.jsonl``, hash-chained; usable as a context manager.

    Args:
        run_dir: the record's folder (a non-empty str or path; made when missing). A
            diary.jsonl already there is verified and continued (seq and chain carry on).
        fsync_policy: when lines are fsynced besides run_start, critical events, run_end
            and close: ``"interval"`` (default; by a background thread), ``"always"`` (after
            every line) or ``"critical"`` (only then). Anything else raises
            :class:`~trainrecord.errors.RecordRefused` (``diary.writer.fsync_policy``).
        fsync_interval: with ``"interval"``, the most seconds between a line's write and
            its fsync (default 1.0; a finite number >= 0).
        validate: check each line against its event's schema and the verifier's cross-field
            rules before it is written (default True). False is only for lines checked
            already: an invalid one then fails :func:`~trainrecord.diary.verify`.
        drop_torn_tail: cut a torn last line (a crash while writing) before resuming
            (default False: such a diary is refused, ``diary.writer.resume``).
        seal: seal the record at close, record.json (default True); False leaves it
            unsealed.
        signing_key: an Ed25519 private key (the path of the file ``trainrecord keygen``
            wrote, its PEM bytes or a key object) to sign the seal with (record.sig);
            loaded now, so a missing file or a public key is refused at once
            (``seal.key.format``). Default None: an unsigned seal. Refused with
            ``seal=False``.
        require_seal: resume only a record whose seal vouches for it (signed by
            ``signing_key`` when one is given); default False resumes it with a warning
            (see the module's docstring).

    Every argument is checked before any file or folder is made: a flag that is not
    ``True``/``False``, a path that is empty or a bad ``fsync_interval`` raises
    :class:`~trainrecord.arguments.ArgumentRefused` (a TypeError and a ValueError) naming
    it. A diary another open writer holds is refused (``diary.writer.locked``); one that
    fails verification is never appended to (``diary.writer.resume``).

    Example (as in README.md)::

        with DiaryWriter("runs/exp1") as diary, MetricsWriter("runs/exp1") as metrics:
            diary.append("run_start", {...})   # its fields (README.md); seq, time, prev, hash added
            metrics.append({"step": 0, "loss": 2.3, "grad": {"fc": 0.05},
                            "stuck": {"fc": [0, 0, 0, 0]}})
            diary.append("run_end", {"steps": 1, "checks": 1, "counts": {},
                                     "metrics_sha256": metrics.sha256()})
        print(verify("runs/exp1").summary())   # sealed at close: record.json, unsigned
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        *,
        fsync_policy: FsyncPolicy = "interval",
        fsync_interval: float = 1.0,
        validate: bool = True,
        drop_torn_tail: bool = False,
        seal: bool = True,
        signing_key: Any = None,
        require_seal: bool = False,
    ) -> None:
        call = "DiaryWriter"  # every argument checked before a folder or file is made
        self.run_dir = arguments.path(call, "run_dir", run_dir, "give the folder of the record")
        check_fsync_policy(fsync_policy)
        fsync_interval = arguments.real(
            call, "fsync_interval", fsync_interval, minimum=0.0, fix="seconds, e.g. 1.0"
        )
        self.validate = arguments.flag(call, "validate", validate)
        drop_torn_tail = arguments.flag(call, "drop_torn_tail", drop_torn_tail)
        self.seal_on_close = arguments.flag(call, "seal", seal)
        if signing_key is not None and not self.seal_on_close:
            raise arguments.ArgumentRefused(
                call,
                "signing_key",
                "a signing key with seal=False would sign nothing (the key signs the seal "
                "written at close): leave seal=True to sign the record, or leave signing_key out",
            )
        self.require_seal = arguments.flag(call, "require_seal", require_seal)
        self.signing_key = signing_key_from(signing_key, call)
        self._policy: FsyncPolicy = fsync_policy
        self._interval = fsync_interval
        make_folder(self.run_dir, "run_dir")
        self.path = self.run_dir / DIARY
        self.seq = 0
        self.head = GENESIS
        self.last_event: str | None = None
        self.last_line: dict[str, Any] | None = None  # the last line this writer wrote
        self.resumed_start: dict[str, Any] | None = None
        """The last run_start of the diary this writer resumed (its latest session), None
        for a new diary."""
        self.resumed_signer: str | None = None
        """The fingerprint of the key that had signed the record this writer resumed ("" when
        its record.json did not say), None when it was not signed."""
        self.unvouched: str | None = None
        """Why no seal (or no signature by ``signing_key``) vouched for the lines this writer
        resumed, when none did: the seal written at close covers them as they are (a
        warning says so at the resume and at close). None for a new diary, and for one
        sealed (and signed by ``signing_key``, when given) as it stood."""
        self._closed = False
        self._seal_due = False  # closed, and its seal not written yet (Ctrl+C cut close short)
        self._file: AppendFile | None = None
        self._created = False  # this writer made diary.jsonl (and nothing is in it yet)
        file = self._open()
        try:
            self._resume(file, drop_torn_tail)
        except BaseException:
            file.close()
            self._closed = True
            raise

    def _open(self) -> AppendFile:
        """Open (or make) diary.jsonl, locked."""
        existed = self.path.exists()
        self._file = AppendFile(self.path, fsync_policy=self._policy, fsync_interval=self._interval)
        if not existed:
            self._created = True
            fsync_dir(self.run_dir)
        return self._file

    def _drop_empty(self) -> None:
        """At close, remove the diary this writer made while nothing is in it (its first
        lines were refused, or none was written): a 0-byte diary.jsonl is a record that
        fails verification. Never before close: the file holds the writer's lock."""
        file = self._file
        if not self._created or file is None or self.seq:
            return
        try:
            mine, there = os.fstat(file.fd), os.stat(self.path)
            if mine.st_size == 0 and (mine.st_ino, mine.st_dev) == (there.st_ino, there.st_dev):
                self.path.unlink()
            else:
                return
        except OSError:
            return
        self._file = None
        self._created = False
        file.close()

    def _resume(self, file: AppendFile, drop_torn_tail: bool) -> None:
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        signer = _signer(self.run_dir)
        own = fingerprint(self.signing_key.public_key()) if self.signing_key else None
        # a record signed by the key given has that signature checked: a bad one is refused
        # below, never signed again
        key = self.signing_key.public_key() if self.signing_key and signer == own else None
        result = verify(self.run_dir, workers=1, public_key=key)
        if result.status == "torn" and drop_torn_tail:
            os.ftruncate(file.fd, self.path.stat().st_size - result.torn_bytes)
            file.sync()
            if result.lines == 0:  # the crash came while writing the first line: start afresh
                return
            result = verify(self.run_dir, workers=1, public_key=key)
        if not result.ok:
            if result.status == "torn":
                raise RecordRefused.one(
                    "diary.writer.resume",
                    [DIARY],
                    f"the diary ends in a torn line ({result.torn_bytes} bytes, a crash while "
                    "writing); open it with drop_torn_tail=True to cut that line and append",
                )
            raise RecordRefused.one(
                "diary.writer.resume",
                [DIARY],
                f"the diary fails verification and is never appended to: {result.failure}",
            )
        self.unvouched, why = self._unvouched(result, signer, own)
        missing = self.unvouched
        if missing is None and own is not None and signer != own:  # (warned of below)
            missing = f"a seal signed by another key ({signer[:16] if signer else 'unnamed'}...)"
            why = "this writer cannot check that signature with its own key"
        if missing is not None and self.require_seal:
            raise RecordRefused.one(
                "diary.writer.resume",
                [SEAL],
                f"require_seal=True, and the record has {missing}: {why}. Check it "
                f"(`trainrecord show {self.run_dir}`, or compare it with a copy), then seal "
                f"it as it is (`trainrecord seal {self.run_dir}"
                + (" --key <your private key>" if self.signing_key else "")
                + "`) to resume it, or resume with require_seal=False",
            )
        self.seq = result.lines
        self.head = result.head_hash or GENESIS
        self.last_event = "run_end" if result.complete else RESUMED
        self.resumed_start = result.last_run_start
        self.resumed_signer = signer
        if self.unvouched is not None:
            LOGGER.warning(
                "trainrecord: resuming %s: the record has %s: %s. The seal%s this writer "
                "makes at close will cover %s (require_seal=True refuses such a resume)",
                self.run_dir,
                self.unvouched,
                why,
                " and signature" if self.signing_key else "",
                "the line already there as it is now"
                if result.lines == 1
                else f"the {result.lines} lines already there as they are now",
            )
        for warning in result.warnings:  # what the verdict said besides (a torn metrics row)
            if not any(w in warning for w in ("signature", "sealed", "record.json", "run_end")):
                LOGGER.warning("trainrecord: resuming %s: verify says: %s", self.run_dir, warning)
        if self.resumed_signer is not None:
            self._say_signature_dropped(at_close=False)
        for name in (SEAL, SIGNATURE):  # the seal pins the old head; appending outdates it
            (self.run_dir / name).unlink(missing_ok=True)

    def _unvouched(
        self, result: VerifyResult, signer: str | None, own: str | None
    ) -> tuple[str | None, str]:
        """What the verified diary being resumed has instead of a seal that vouches for its
        lines beyond their chain (which anyone can recompute), and why that matters; None
        when it has one. For a writer with a signing key an unsigned seal vouches for
        nothing (anyone can write one); a seal signed by another key is said by
        :meth:`_say_signature_dropped`."""
        if not result.sealed and result.complete:
            return "no seal (record.json) although its last session ended (run_end)", (
                "a writer seals at close (unless seal=False, or it was killed right after "
                "run_end), so a seal that is gone can mean the history was edited after it was sealed: the chain alone "
                "cannot tell"
            )
        if not result.sealed:
            return "no seal (record.json) and no run_end at its end", (
                "a crash leaves a record so, and so does a history edited or cut after its "
                "seal was removed"
            )
        if own is not None and signer is None:
            return "an unsigned seal (record.json without record.sig)", (
                "anyone can write one, so no signature of your key vouched for its lines"
            )
        return None, ""

    def _say_signature_dropped(self, *, at_close: bool) -> None:
        """Warn that the signature of the record resumed is gone (and whether, and by which
        key, the new seal is signed)."""
        old = self.resumed_signer
        by = f"key {old[:16]}..." if old else "a key record.json does not name"
        new = fingerprint(self.signing_key.public_key()) if self.signing_key else None
        if new is not None and new == old:
            return  # signed again at close by the same key: nothing is lost
        seal_again = f"`trainrecord seal {self.run_dir} --key <that private key>`"
        if new is not None:
            if not at_close:
                LOGGER.warning(
                    "trainrecord: %s was signed by %s (record.sig); appending outdates that "
                    "signature, and the record will be signed at close by the key given "
                    "(key %.16s...) instead",
                    self.run_dir,
                    by,
                    new,
                )
        elif at_close:
            LOGGER.warning(
                "trainrecord: %s is sealed unsigned: it was signed by %s (record.sig) before "
                "this writer appended to it; to sign it again, run %s",
                self.run_dir,
                by,
                seal_again,
            )
        else:
            LOGGER.warning(
                "trainrecord: %s was signed by %s (record.sig); appending outdates that "
                "signature, so record.sig is removed and the record will be sealed unsigned "
                "at close; to keep it signed, pass signing_key=<that private key> to the "
                "Monitor or DiaryWriter, or run %s after the run",
                self.run_dir,
                by,
                seal_again,
            )

    # -- writing ---------------------------------------------------------------------------

    def append(self, event: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Write one event; return the full line (seq, time, event, fields, prev, hash)."""
        if self._closed:
            raise WriterClosed(
                "the diary writer is closed; open a new DiaryWriter on the folder to continue it"
            )
        # a refused first line keeps the (empty) file and its lock: another writer must not
        # start the diary meanwhile; close() removes it while it is still empty
        body, text = self._body(event, fields)
        digest = hashlib.sha256((self.head + text).encode("utf-8")).hexdigest()
        line = {**body, "prev": self.head, "hash": digest}
        data = (canonical_line(line) + "\n").encode("utf-8")
        sync = event in SYNC_EVENTS or fields.get("severity") == "critical"
        file = self._file if self._file is not None else self._open()
        lines = file.lines
        try:
            file.write_line(data, sync=sync)
        finally:
            # the line is in the file once its last byte is: the chain moves on with it even
            # when its fsync then raised (Ctrl+C, a failed disk), or the next line would
            # repeat its seq and prev (diary.chain.seq)
            if file.lines != lines:
                self.seq += 1
                self.head = digest
                self.last_event = event
                self.last_line = line
        return line

    def _body(self, event: str, fields: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The line without prev and hash, and its canonical text; or a refusal."""
        _check_call(event, fields)
        if self.seq == 0 and event != "run_start":
            raise RecordRefused.one(
                "diary.order.run_start",
                ["event"],
                "the first line of a diary must be run_start",
                event,
            )
        if self.last_event == RESUMED and event != "run_start":
            raise RecordRefused.one(
                "diary.writer.resume",
                ["event"],
                "a resumed diary continues with the new session's run_start: write it first",
                event,
            )
        if self.last_event == "run_end" and event != "run_start":
            raise RecordRefused.one(
                "diary.order.run_end",
                ["event"],
                "after run_end only a run_start (a resumed run) may follow",
                event,
            )
        return _checked_body(event, fields, self.seq, self.head, self.validate)

    def sync(self) -> None:
        """fsync the diary now."""
        if self._file is not None:
            self._file.sync()

    def close(self) -> None:
        """fsync and close, then seal the record (record.json; record.sig with a key).

        A diary whose write (or fsync) failed is not sealed: it ends where the failure left
        it, as after a crash, and ``trainrecord seal`` can seal it once checked. A close
        cut short by Ctrl+C (in the fsync, or while the seal is written) is finished by the
        next call: the file is closed and the record sealed then."""
        if not self._closed:
            self._closed = True  # (no line is taken from now on)
            self._drop_empty()  # nothing written: no empty diary.jsonl left behind
            self._seal_due = self._file is not None and self.seal_on_close and self.seq > 0
        file = self._file
        if file is None:  # nothing was written, and the empty file it made is removed
            return
        try:
            file.close()  # (idempotent)
            if self._seal_due and not file.broken:
                self._seal()
        except Exception:  # said to the caller, once: not tried again
            self._seal_due = False
            raise
        self._seal_due = False

    def _seal(self) -> None:
        """Write the seal at close, and the warnings that go with it."""
        from trainrecord.diary.seal import write_seal

        write_seal(self.run_dir, signing_key=self.signing_key)
        self._seal_due = False
        if self.unvouched is not None:
            by = self.signing_key and fingerprint(self.signing_key.public_key())
            LOGGER.warning(
                "trainrecord: %s is %s now, and that covers the lines of its earlier "
                "sessions as this writer found them, when the record had %s: check them "
                "before trusting this seal with them",
                self.run_dir,
                f"sealed and signed (key {by[:16]}...)" if by else "sealed",
                self.unvouched,
            )
        if self.resumed_signer is not None:
            self._say_signature_dropped(at_close=True)

    @property
    def closed(self) -> bool:
        """Whether close() has run."""
        return self._closed

    def __enter__(self) -> DiaryWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def row_bytes(row: dict[str, Any]) -> bytes:
    """One metrics row as compact JSON and a newline.

    ``row`` holds no non-finite float (:func:`~trainrecord.diary.nonfinite.encode` made them
    tokens). orjson writes it about ten times faster than ``json``; its number forms differ
    (``0.00001`` for ``1e-05``) but both are JSON of the same values. What orjson refuses
    (an integer beyond 64 bits) ``json`` writes; what neither can write is refused."""
    if orjson is not None:
        try:
            return orjson.dumps(
                row,
                option=orjson.OPT_APPEND_NEWLINE
                | orjson.OPT_PASSTHROUGH_DATACLASS
                | orjson.OPT_PASSTHROUGH_DATETIME
                | orjson.OPT_PASSTHROUGH_SUBCLASS,
            )
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
    try:
        return (json.dumps(row, separators=(",", ":"), allow_nan=False) + "\n").encode()
    except (TypeError, ValueError) as exc:
        raise RecordRefused.one(
            "diary_metrics.row.type", ["row"], f"a value cannot be written as JSON: {exc}"
        ) from None


def _last_step(data: bytes) -> int | None:
    """The integer ``step`` of the last row of metrics.jsonl's ``data``, or None."""
    end = len(data) - 1
    if end < 0:
        return None
    try:
        row = loads_strict(data[data.rfind(b"\n", 0, end) + 1 : end])
    except ValueError:  # (loads_strict: nesting too deep is a ValueError too)
        return None
    step = row.get("step") if isinstance(row, dict) else None
    return step if isinstance(step, int) and not isinstance(step, bool) else None


class MetricsWriter:
    """Append rows to ``run_dir/metrics.jsonl`` and keep its running SHA-256.

    Usable as a context manager. A metrics.jsonl already there is continued: a torn last
    row (a crash while writing) is cut off first, and :meth:`sha256` covers the whole file.

    Args:
        run_dir: the record's folder (a non-empty str or path; made when missing).
        validate: check each row against the metrics row schema before it is written
            (default True); a refused row raises
            :class:`~trainrecord.errors.RecordRefused` and writes nothing.
        fsync_policy: ``"interval"`` (default; by a background thread), ``"always"`` (after
            every row) or ``"critical"`` (at close only: no row is critical); anything else raises
            :class:`~trainrecord.errors.RecordRefused` (``diary.writer.fsync_policy``).
        fsync_interval: with ``"interval"``, the most seconds between a row's write and its
            fsync (default 1.0; a finite number >= 0).

    Every argument is checked before any file or folder is made (a wrong one raises
    :class:`~trainrecord.arguments.ArgumentRefused` naming it). A metrics.jsonl another
    open writer holds is refused (``diary_metrics.writer.locked``). See
    :class:`DiaryWriter` for an example.
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        *,
        validate: bool = True,
        fsync_policy: FsyncPolicy = "interval",
        fsync_interval: float = 1.0,
    ) -> None:
        call = "MetricsWriter"  # every argument checked before a folder or file is made
        self.run_dir = arguments.path(call, "run_dir", run_dir, "give the folder of the record")
        self.validate = arguments.flag(call, "validate", validate)
        check_fsync_policy(fsync_policy)
        fsync_interval = arguments.real(
            call, "fsync_interval", fsync_interval, minimum=0.0, fix="seconds, e.g. 1.0"
        )
        make_folder(self.run_dir, "run_dir")
        self.path = self.run_dir / METRICS
        self._digest = hashlib.sha256()
        self.rows = 0
        self._file = AppendFile(
            self.path,
            fsync_policy=fsync_policy,
            fsync_interval=fsync_interval,
            lock_rule="diary_metrics.writer.locked",
            unit="row",
        )
        data = self.path.read_bytes()
        keep = data.rfind(b"\n") + 1
        if keep < len(data):  # a torn row from a crash: no run_end can name it
            os.ftruncate(self._file.fd, keep)
            self._file.sync()
            data = data[:keep]
        self._digest.update(data)
        self.rows = data.count(b"\n")
        self.last_step: int | None = _last_step(data)
        """The step of the file's last row when it was opened (None: no rows, or a last
        row without an integer step)."""
        self._torn_counted = False
        self._closed = False

    def append(self, row: dict[str, Any]) -> dict[str, Any]:
        """Write one row (non-finite floats become tokens); return the row as written."""
        if self._closed:
            raise WriterClosed(
                "the metrics writer is closed; open a new MetricsWriter on the folder to continue it"
            )
        try:
            row = encode(row)
            if self.validate:
                found = fast_problems(row, METRICS_ROW_SCHEMA)
                if found:
                    raise RecordRefused(found)
            data = row_bytes(row)
        except RecursionError:
            raise RecordRefused.one(
                "diary.metrics.json",
                ["row"],
                "the row nests too deeply to be written (hundreds of levels); flatten it",
            ) from None
        lines = self._file.lines
        try:
            self._file.write_line(data)
        except BaseException:
            # a row that failed part-way is cut off again; should that fail too, the bytes
            # left belong to the file, and so to its digest (run_end names the whole file)
            if self._file.torn_tail and not self._torn_counted:
                self._torn_counted = True
                self._digest.update(self._file.torn_tail)
            raise
        finally:
            # a whole row is in the file, and so in its digest and count, even when its
            # fsync then raised (Ctrl+C): run_end names the file as it is
            if self._file.lines != lines:
                self.rows += 1
                self._digest.update(data)  # (a signal is handled after a C call, not in it)
        return row

    def sha256(self) -> str:
        """SHA-256 (hex) of metrics.jsonl as it stands (a failed row's uncut bytes too)."""
        return self._digest.hexdigest()

    def sync(self) -> None:
        """fsync metrics.jsonl now."""
        self._file.sync()

    def close(self) -> None:
        """fsync and close (idempotent)."""
        if not self._closed:
            self._closed = True
            self._file.close()

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
