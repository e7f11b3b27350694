"""Ed25519 keys for signing a sealed record: generate, load, fingerprint.

Private keys are PKCS#8 PEM files written with mode 0600; public keys are
SubjectPublicKeyInfo PEM. The fingerprint of a public key is the SHA-256 (hex) of its raw
32 bytes; record.json names it. A private key never enters a record, a log line or an
error message: errors name the file, never its content.
"""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from trainrecord.errors import RecordRefused
from trainrecord.folders import blocked_by, in_the_way


def generate_keypair(
    private_path: str | os.PathLike[str],
    public_path: str | os.PathLike[str] | None = None,
    *,
    overwrite: bool = False,
) -> tuple[Path, Path, str]:
    """Write a new key pair; return (private path, public path, fingerprint). Missing
    folders are made; a file where a folder must be is a ``NotADirectoryError`` naming it;
    both keys are written to temporary files first and renamed into place, so a failure
    leaves no half pair (and, with ``overwrite=True``, the old pair as it was).

    Args:
        private_path: where the private key goes (PEM, PKCS#8, unencrypted; mode 0600).
        public_path: where the public key goes (PEM; mode 0644). Default None:
            ``<private_path>.pub`` beside it.
        overwrite: replace key files already there (default False: an existing one raises
            :class:`~trainrecord.errors.RecordRefused`, ``seal.key.exists``, and nothing is
            written).

    The fingerprint returned is the SHA-256 (hex) of the raw public key, as record.json's
    ``public_key_sha256`` names the signer::

        private, public, sha = generate_keypair("keys/signer")  # and keys/signer.pub
        write_seal("runs/exp1", signing_key=private)
        print(verify("runs/exp1", public_key=public).summary())
    """
    priv = Path(private_path)
    pub = Path(public_path) if public_path else priv.with_name(priv.name + ".pub")
    for path in (priv, pub):
        if path.exists() and not overwrite:
            raise RecordRefused.one(
                "seal.key.exists",
                [str(path)],
                "the key file exists; choose another path or remove it",
            )
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    for path in (priv, pub):  # both checked before any folder is made
        part = blocked_by(path.parent)
        if part is not None:
            raise NotADirectoryError(
                errno.ENOTDIR, in_the_way(path.parent, part, "the key's folder"), str(part)
            )
    for path in (priv, pub):
        path.parent.mkdir(parents=True, exist_ok=True)
    public = key.public_key()
    pub_pem = public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    # both written beside their names first, then renamed: a failure leaves the old pair
    # (overwrite=True) or nothing, never a new private key beside an old public one
    written: list[Path] = []
    try:
        for path, data, mode in ((priv, pem, 0o600), (pub, pub_pem, 0o644)):
            temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            try:
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            except OSError as exc:  # named after the key's own path, not the temporary one
                raise type(exc)(exc.errno, exc.strerror, str(path)) from None
            written.append(temp)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(temp, mode)
        os.replace(written[0], priv)
        os.replace(written[1], pub)
    except BaseException:
        for temp in written:
            temp.unlink(missing_ok=True)
        raise
    return priv, pub, fingerprint(public)


def _read(source: Any) -> tuple[bytes, str]:
    if isinstance(source, bytes):
        return source, "the given key"
    path = Path(source)
    return path.read_bytes(), str(path)


def load_private_key(source: Any) -> Ed25519PrivateKey:
    """An Ed25519 private key from a key object, PEM bytes, or a PEM file path."""
    if isinstance(source, Ed25519PrivateKey):
        return source
    data, name = _read(source)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise RecordRefused.one(
            "seal.key.format",
            [name],
            "not an unencrypted PEM private key; make one with trainrecord keygen",
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise RecordRefused.one("seal.key.format", [name], "the private key is not Ed25519")
    return key


def load_public_key(source: Any) -> Ed25519PublicKey:
    """An Ed25519 public key from a key object, PEM bytes, or a PEM file path.

    A private key (object or file) is accepted too; its public half is used.
    """
    if isinstance(source, Ed25519PublicKey):
        return source
    if isinstance(source, Ed25519PrivateKey):
        return source.public_key()
    data, name = _read(source)
    try:
        key: Any = serialization.load_pem_public_key(data)
    except (ValueError, TypeError):
        try:
            key = serialization.load_pem_private_key(data, password=None).public_key()
        except (ValueError, TypeError):
            raise RecordRefused.one(
                "seal.key.format",
                [name],
                "not a PEM public key; pass the .pub file that trainrecord keygen wrote",
            ) from None
    if not isinstance(key, Ed25519PublicKey):
        raise RecordRefused.one("seal.key.format", [name], "the public key is not Ed25519")
    return key


def fingerprint(public_key: Ed25519PublicKey) -> str:
    """SHA-256 (hex) of the raw 32-byte public key."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()
