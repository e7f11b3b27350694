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
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import InvalidSignature

from trainrecord import __version__
from trainrecord.canonical import loads_strict
from trainrecord.diary.chain import CRLF_FIX, LineFailure, crlf_note, irregular, problem_text
from trainrecord.diary.durability import cause_text, fsync_dir, write_advice
from trainrecord.diary.events import RECORD_VERSION, SEAL_SCHEMA
from trainrecord.diary.keys import fingerprint, load_private_key, load_public_key
from trainrecord.errors import RecordRefused, RecordWriteError
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


def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all: a temporary file of a random name, created
    exclusively (never through a link someone put there: a name from the pid could be
    guessed, and a planted link made the seal overwrite the file it pointed at), renamed
    over it."""
    from trainrecord.foundry import files

    try:
        files.replace(path, data)
    except OSError as exc:
        raise RecordWriteError(
            exc.errno,
            f"trainrecord could not write {path}: {cause_text(exc)}; the record is not "
            f"sealed (the diary and metrics are as they were: a seal is written whole or not "
            f"at all). {write_advice(exc.errno, elsewhere=False)}, then `trainrecord seal {path.parent}` "
            "seals it.",
            str(path),
        ) from None


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
    given ``--replace``)::

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
    sig_path = run / SIGNATURE
    _atomic_write(run / SEAL, data)  # first: a seal that cannot be written leaves record.sig
    if key is None:  # (removed before, a failed write left a signed seal without it: failed)
        sig_path.unlink(missing_ok=True)
    if key is not None:
        try:
            _atomic_write(sig_path, base64.b64encode(key.sign(data)) + b"\n")
        except BaseException:  # a seal naming a signature that is not there would fail
            with contextlib.suppress(OSError):
                (run / SEAL).unlink()
            raise
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
