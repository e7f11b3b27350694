"""The seal record.json and its detached signature record.sig.

The chain links cannot show a cut tail: dropping the last lines leaves a valid chain.
record.json pins the record as it stood when sealed: the number of lines, the head (the
last line's seq and hash), the SHA-256 and size of diary.jsonl and of metrics.jsonl, the
record_version, what sealed it and when, and, when signed, the fingerprint of the Ed25519
public key. record.sig is the detached Ed25519 signature over the exact bytes of
record.json, written base64 on one line. Its schema is
``spec/schemas/diary/record.schema.json``; its rules are ``seal.*``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import InvalidSignature

from trainrecord import __version__
from trainrecord.canonical import loads_strict
from trainrecord.diary.chain import CRLF_FIX, LineFailure, crlf_note, irregular, problem_text
from trainrecord.diary.durability import fsync_dir
from trainrecord.diary.events import RECORD_VERSION, SEAL_SCHEMA
from trainrecord.diary.keys import fingerprint, load_private_key, load_public_key
from trainrecord.errors import RecordRefused, RecordWriteError, cause_text, write_failed
from trainrecord.schemas import problems

if TYPE_CHECKING:
    from trainrecord.diary.verifier import VerifyResult

DIARY, METRICS, SEAL, SIGNATURE = "diary.jsonl", "metrics.jsonl", "record.json", "record.sig"


def _file_facts(path: Path) -> tuple[str, int, int]:
    """(sha256, bytes, lines) of a file."""
    digest = hashlib.sha256()
    size = lines = 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
            size += len(block)
            lines += block.count(b"\n")
    return digest.hexdigest(), size, lines


def _old_seal(path: Path) -> tuple[bytes, int] | None:
    """The bytes and permission bits of record.json as it is, to put back should the new
    seal fail half-way; None when there is none to put back (none there, or no regular file
    of at most 1 MiB: no seal that verifies)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        facts = os.fstat(fd)
        if not stat.S_ISREG(facts.st_mode) or facts.st_size > 1 << 20:
            return None
        return fh.read(), stat.S_IMODE(facts.st_mode)


def _old_mode(path: Path) -> int | None:
    """The permission bits of the regular file at ``path`` (a link is not followed), which a
    reseal keeps on the new file; None when there is none (the new file then gets the
    umask's bits, as any new file)."""
    try:
        facts = os.lstat(path)
    except OSError:
        return None
    return stat.S_IMODE(facts.st_mode) if stat.S_ISREG(facts.st_mode) else None


def _put_back(path: Path, old: tuple[bytes, int] | None) -> OSError | None:
    """Put record.json back as it was (``old``: its bytes and permission bits, as
    :func:`_old_seal` read them; None: none there); the error, if it fails. The bits are
    set on the new file before it is renamed into place (a record.json its owner made
    read-only stays read-only)."""
    from trainrecord.foundry import files

    try:
        if old is None:
            path.unlink(missing_ok=True)
            return None
        data, mode = old
        tmp = files.write_temp(path, data)
        try:
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as exc:
        return exc
    return None


def _write_seal_files(run: Path, data: bytes, signature: bytes | None) -> None:
    """Put record.json (``data``) in place, and record.sig (``signature``; None: no
    record.sig), all or nothing as far as a failure goes: each new file is written whole
    beside its name first (a full disk or a read-only mount fails there, before either file
    is touched), then renamed over it; should record.sig then fail to be put in place (or
    removed), the old record.json is put back. The error names the file that failed.

    A reseal keeps each old file's permission bits (a record.sig its owner made 0600 stays
    0600): they are set on the new file before it is renamed over the old one. A file that
    was not there gets the umask's bits.

    record.json is renamed first, record.sig last. No order of two renames keeps a record
    that verifies between them (record.sig signs record.json's bytes, and record.json names
    the signing key), so a crash (power cut, SIGKILL) between them leaves a seal that fails
    verification. This order leaves the new record.json beside the old record.sig
    (``verify --key NEW`` says ``seal.signature.invalid``; an unsigned reseal,
    ``seal.signature.unexpected``), and the same ``trainrecord seal`` run again finishes it
    without ``--replace``, since record.json already names the new key (or none); the other
    order would leave a seal naming the old key beside a signature it does not hold, which
    only ``--replace`` mends. The diary and metrics are never touched."""
    from trainrecord.foundry import files

    seal_path, sig_path = run / SEAL, run / SIGNATURE
    resealed = seal_path.exists() or sig_path.exists()
    old = _old_seal(seal_path)
    modes = (_old_mode(seal_path), _old_mode(sig_path))
    temps: list[Path] = []
    failing, verb, replaced = seal_path, "write", False
    try:
        temps.append(files.write_temp(seal_path, data))
        if modes[0] is not None:
            os.chmod(temps[0], modes[0])
        if signature is not None:
            failing = sig_path
            temps.append(files.write_temp(sig_path, signature))
            if modes[1] is not None:
                os.chmod(temps[1], modes[1])
        failing = seal_path
        os.replace(temps[0], seal_path)
        replaced, failing = True, sig_path
        if signature is None:  # (a record.sig left beside an unsigned seal would fail it)
            verb = "remove"
            sig_path.unlink(missing_ok=True)
        else:
            os.replace(temps[1], sig_path)
    except BaseException as exc:
        lost = _put_back(seal_path, old) if replaced else None
        if not isinstance(exc, OSError):
            raise
        raise _not_sealed(failing, exc, verb, resealed, lost) from None
    finally:
        for tmp in temps:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)


def _not_sealed(
    path: Path, exc: OSError, verb: str, resealed: bool, lost: OSError | None
) -> RecordWriteError:
    """The error of a seal that could not be written: the file, the cause, what the seal
    files hold now and what to do."""
    if lost is not None:
        state = (
            f"record.json was replaced, and the old one could not be put back "
            f"({cause_text(lost)}): the record fails verification until it is sealed again"
        )
    elif resealed:
        state = (
            "the seal is not replaced (record.json and record.sig, the diary and metrics are "
            "as they were: a seal is written whole or not at all)"
        )
    else:
        state = (
            "the record is not sealed (the diary and metrics are as they were: a seal is "
            "written whole or not at all)"
        )
    then = f"`trainrecord seal {path.parent}` seals it"
    return write_failed(path, exc, state, elsewhere=None, then=then, verb=verb)


def write_seal(
    run_dir: str | os.PathLike[str], *, signing_key: Any = None, verify_first: bool = True
) -> dict[str, Any]:
    """Seal ``run_dir`` (write record.json, and record.sig with a key); return the seal.

    The record is verified first (without its old seal); a record that does not verify
    is never sealed.

    Args:
        run_dir: the run directory that holds diary.jsonl (no directory there:
            ``FileNotFoundError`` or ``NotADirectoryError``, as from
            :func:`~trainrecord.diary.verify`).
        signing_key: an Ed25519 private key (a PEM file path, PEM bytes or a key object)
            to sign record.json with, written to record.sig. Default None: an unsigned seal,
            and a record.sig already there is removed. A file that cannot be read raises
            ``OSError``; one that is not an unencrypted Ed25519 private key
            :class:`~trainrecord.errors.RecordRefused` (``seal.key.format``).
        verify_first: verify the record (seal not checked) before sealing it (default
            True); a record that does not verify, a torn one too, raises
            :class:`~trainrecord.errors.RecordRefused` (``seal.verify``). False is for
            tests of the verifier: the seal then names no head hash.

    This function replaces the seal and signature already there, whoever signed them
    (``trainrecord seal`` neither replaces another key's signature nor drops one unless
    given ``--replace``). A seal that cannot be written (a full disk, a read-only mount)
    raises :class:`~trainrecord.errors.RecordWriteError` naming the file and what to do,
    and leaves record.json and record.sig as they were (see :func:`_write_seal_files` for
    the order they are put in place)::

        write_seal("runs/exp1", signing_key="keys/signer")   # record.json + record.sig
        print(verify("runs/exp1", public_key="keys/signer.pub").summary())
    """
    from trainrecord.diary.verifier import verify

    run = Path(run_dir)
    key = load_private_key(signing_key) if signing_key is not None else None
    result = verify(run, check_seal=False, workers=1) if verify_first else None
    if result is not None and not result.ok:
        reason = result.failure or result.summary()
        raise RecordRefused.one(
            "seal.verify", [DIARY], f"the record does not verify and is not sealed: {reason}"
        )
    sha, size, lines = _file_facts(run / DIARY)
    if result is not None:
        head_seq, head_hash = result.head_seq, result.head_hash
    else:  # pragma: no cover - verify_first=False is for tests of the verifier
        head_seq, head_hash = lines - 1, None
    metrics_path = run / METRICS
    metrics = None
    if metrics_path.exists():
        msha, msize, mrows = _file_facts(metrics_path)
        metrics = {"file": METRICS, "sha256": msha, "bytes": msize, "rows": mrows}
    seal: dict[str, Any] = {
        "record_version": RECORD_VERSION,
        "sealed_by": f"trainrecord {__version__}",
        "sealed_at": round(time.time(), 3),
        "diary": {
            "file": DIARY,
            "sha256": sha,
            "bytes": size,
            "lines": lines,
            "head_seq": head_seq,
            "head_hash": head_hash,
        },
        "metrics": metrics,
        "signature": None
        if key is None
        else {
            "algorithm": "ed25519",
            "file": SIGNATURE,
            "public_key_sha256": fingerprint(key.public_key()),
        },
    }
    import json

    data = (json.dumps(seal, indent=2, sort_keys=True, allow_nan=False) + "\n").encode()
    signature = None if key is None else base64.b64encode(key.sign(data)) + b"\n"
    _write_seal_files(run, data, signature)
    fsync_dir(run)
    return seal


def _hash_of_line(path: Path, number: int) -> Any:
    """The ``hash`` field of line ``number`` (1-based) of ``path``, None when there is no
    such line or it is not a JSON object."""
    with open(path, "rb") as fh:
        for at, raw in enumerate(fh, 1):
            if at == number:
                try:
                    line = loads_strict(raw)
                except ValueError:
                    return None
                return line.get("hash") if isinstance(line, dict) else None
    return None


def _lines_cause(path: Path, sealed: int, head_hash: str, lines: int) -> str:
    """What a line count unlike the seal's shows, and only that: when the diary's line
    ``sealed`` carries the sealed head hash, lines were added after it; otherwise the seal
    is another record's or the diary was cut or rewritten (the files cannot tell which)."""
    if lines >= sealed and _hash_of_line(path, sealed) == head_hash:
        return "its first lines end at the sealed head, so the diary was appended to after sealing"
    if lines < sealed:
        return "the diary was cut after sealing, or record.json is another record's seal"
    return (
        f"its line {sealed} is not the sealed head, so record.json is another record's "
        "seal, or the diary was rewritten after sealing"
    )


def _crlf_signed(key: Any, signature: bytes, data: bytes) -> str:
    """What to add to a signature that does not hold when record.json has CRLF line ends:
    whether it holds over the LF bytes (the ones signed), and what to do; "" otherwise."""
    if b"\r\n" not in data:
        return ""
    try:
        key.verify(signature, data.replace(b"\r\n", b"\n"))
    except InvalidSignature:
        return (
            "; record.json has CRLF line ends, and with LF line ends the signature does not "
            "hold either: more than its line ends was changed"
        )
    return f"; record.json has CRLF line ends, and with LF line ends it matches: {CRLF_FIX}"


def _fail(rule: str, message: str, file: str = SEAL) -> LineFailure:
    return LineFailure(0, None, rule, message, file)


def check_seal(
    run: Path, result: VerifyResult, torn: int, public_key: Any = None
) -> LineFailure | None:
    """Check record.json (and record.sig) against the files; None when they hold."""
    seal_path, sig_path = run / SEAL, run / SIGNATURE
    odd = irregular(seal_path, SEAL) or irregular(sig_path, SIGNATURE)
    if odd is not None:
        return odd
    if not seal_path.exists():
        if sig_path.exists():
            return _fail("seal.missing", "record.sig is present but record.json is missing")
        if public_key is not None:
            return _fail(
                "seal.missing",
                "a public key was given but the record is not sealed (no record.json)",
            )
        result.warnings.append("not sealed: no record.json (a cut tail cannot be detected)")
        return None
    data = seal_path.read_bytes()
    try:
        seal = loads_strict(data)
    except ValueError as exc:
        return _fail("seal.file.json", f"record.json is not strict JSON: {exc}")
    found = problems(seal, SEAL_SCHEMA)  # the oracle: one small document
    if found:
        return _fail(found[0].rule, problem_text(found[0], seal, data))
    diary = seal["diary"]
    sha, size, lines = _file_facts(run / DIARY)
    if lines != diary["lines"] or torn:
        return _fail(
            "seal.diary.lines",
            f"the seal pins {diary['lines']} lines but diary.jsonl "
            f"has {lines}{' and a torn tail' if torn else ''}: "
            + _lines_cause(run / DIARY, diary["lines"], diary["head_hash"], lines),
        )
    if diary["head_seq"] != result.head_seq or diary["head_hash"] != result.head_hash:
        return _fail(
            "seal.diary.head",
            "the seal's head (last seq and hash) is not the diary's: record.json is another "
            "record's seal, or the diary was rewritten after sealing",
        )
    if sha != diary["sha256"] or size != diary["bytes"]:
        return _fail(
            "seal.diary.sha256",
            "diary.jsonl's SHA-256 differs from the sealed one"
            + crlf_note(run / DIARY, diary["sha256"]),
        )
    metrics = seal["metrics"]
    mpath = run / METRICS
    if metrics is None:
        if mpath.exists():
            return _fail("seal.metrics.sha256", "metrics.jsonl exists but the seal has none")
    else:
        if not mpath.exists():
            return _fail("seal.metrics.sha256", "the seal names metrics.jsonl but it is missing")
        msha, msize, mrows = _file_facts(mpath)
        if (msha, msize, mrows) != (metrics["sha256"], metrics["bytes"], metrics["rows"]):
            return _fail(
                "seal.metrics.sha256",
                "metrics.jsonl differs from the sealed one" + crlf_note(mpath, metrics["sha256"]),
            )
    result.sealed = True
    result.sealed_at, result.sealed_lines = seal["sealed_at"], diary["lines"]
    return _check_signature(seal, data, sig_path, result, public_key)


def _check_signature(
    seal: dict[str, Any], data: bytes, sig_path: Path, result: VerifyResult, public_key: Any
) -> LineFailure | None:
    sig_meta = seal["signature"]
    if sig_meta is None:
        if sig_path.exists():
            return _fail(
                "seal.signature.unexpected",
                "record.sig is present but record.json names no signature",
                SIGNATURE,
            )
        if public_key is not None:
            return _fail(
                "seal.signature.missing",
                "a public key was given but the record is not signed: record.json names no "
                "signature and there is no record.sig (an unsigned seal can be written by "
                "anyone)",
            )
        result.signature = "absent"
        return None
    if not sig_path.exists():
        return _fail(
            "seal.signature.missing",
            "record.json names a signature but record.sig is missing",
            SIGNATURE,
        )
    raw = sig_path.read_bytes()
    try:
        text = raw.decode("ascii")
        if not text.endswith("\n") or text.count("\n") != 1:
            raise ValueError("not one line")
        signature = base64.b64decode(text.strip(), validate=True)
        if len(signature) != 64:
            raise ValueError("not 64 bytes")
        if base64.b64encode(signature).decode("ascii") + "\n" != text:
            raise ValueError("not canonical base64 (the padding bits are not zero)")
    except (UnicodeDecodeError, ValueError, binascii.Error):
        return _fail(
            "seal.signature.format",
            "record.sig is not one line of base64 holding a 64-byte Ed25519 signature"
            + crlf_note(sig_path),
            SIGNATURE,
        )
    if public_key is None:
        result.signature = "not checked"
        result.warnings.append(
            "signature not checked: record.sig is there; pass the signer's public key "
            "(--key PUBLIC_KEY) to check it"
        )
        return None
    key = load_public_key(public_key)
    if fingerprint(key) != sig_meta["public_key_sha256"]:
        return _fail(
            "seal.signature.key",
            "the record was signed with another key (the "
            "fingerprint in record.json is not the given key's)",
        )
    try:
        key.verify(signature, data)
    except InvalidSignature:
        return _fail(
            "seal.signature.invalid",
            "record.sig is not a valid signature of record.json by the given key"
            + _crlf_signed(key, signature, data),
            SIGNATURE,
        )
    result.signed = True
    result.signature = "valid"
    return None
