"""Sealing keys and the seal itself (``keygen``, ``load_key``, ``seal``).

* ``seal.key.exists``: keygen makes a key pair whose public half loads with the same
  fingerprint; keygen over an existing private or public key file is refused and the
  file keeps its bytes.
* ``seal.key.format``: a file that is not an Ed25519 PEM key (noise, PEM armour around
  noise, an RSA or EC key) is refused, and the message never shows the file's content.
* ``seal.verify``: a valid run seals (record.json names the diary's SHA-256); a run whose
  chain is broken is refused naming ``seal.verify`` and gets no record.json.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from trainrecord_conformance.checks.base import Check, Context, Failed, snapshot
from trainrecord_conformance.checks.diary import build_run, runs, write_lines
from trainrecord_conformance.targets import Target

KEYS = frozenset({"keygen", "load_key"})
SEAL = frozenset({"seal"})
HEX = frozenset("0123456789abcdef")


def _fingerprint(out: dict[str, Any]) -> str:
    value = out["fingerprint"]
    if len(value) != 64 or not set(value) <= HEX:
        raise Failed(f"the fingerprint {value!r} is not 64 lowercase hex characters")
    return value


def _pair(ctx: Context) -> tuple[Path, Path, str]:
    """A fresh key pair made by the target; its public half loads with its fingerprint."""
    folder = ctx.folder(create=True)
    private, public = folder / "seal.pem", folder / "seal.pub"
    made = _fingerprint(ctx.ok("keygen", {"private": str(private), "public": str(public)}))
    if not private.is_file() or not public.is_file():
        raise Failed("keygen did not write both key files")
    for kind, path in (("public", public), ("private", private)):
        loaded = _fingerprint(ctx.ok("load_key", {"path": str(path), "kind": kind}))
        if loaded != made:
            raise Failed(f"the {kind} key loads with fingerprint {loaded}, keygen said {made}")
    return private, public, made


def no_overwrite(ctx: Context, case: tuple[str, bytes]) -> None:
    """keygen over an existing key file is refused; every file keeps its bytes."""
    which, content = case
    private, public, _ = _pair(ctx)
    folder = ctx.folder(create=True)
    target = {"private": folder / "k.pem", "public": folder / "k.pub"}
    if which == "the pair":
        target = {"private": private, "public": public}
    else:
        target[which].write_bytes(content)
    before = snapshot(private.parent), snapshot(folder)
    ctx.refused(
        "keygen",
        {"private": str(target["private"]), "public": str(target["public"])},
        "seal.key.exists",
    )
    if (snapshot(private.parent), snapshot(folder)) != before:
        raise Failed(f"a refused keygen over {which} changed the key files")


@cache
def _foreign_keys() -> tuple[bytes, ...]:
    """PEM keys of other algorithms, private and public: RSA, EC P-256, and the neighbours
    of Ed25519 in the OID arc 1.3.101 (X25519 of the same size, Ed448)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed448, rsa, x25519

    out = []
    for key in (
        rsa.generate_private_key(65537, 2048),
        ec.generate_private_key(ec.SECP256R1()),
        x25519.X25519PrivateKey.generate(),
        ed448.Ed448PrivateKey.generate(),
    ):
        out.append(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        out.append(
            key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
    return tuple(out)


def _kind_of(pem: bytes) -> str:
    return "private" if b"PRIVATE KEY" in pem else "public"


@cache
def _ed25519_not_pem() -> tuple[tuple[str, bytes], ...]:
    """An Ed25519 key written as no PEM key: (kind, content) in DER, raw, OpenSSH and
    encrypted PKCS#8, and a public key read as a private one."""
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = ed25519.Ed25519PrivateKey.generate()
    public = key.public_key()
    spki = ser.PublicFormat.SubjectPublicKeyInfo
    return (
        (
            "private",
            key.private_bytes(ser.Encoding.DER, ser.PrivateFormat.PKCS8, ser.NoEncryption()),
        ),
        ("public", public.public_bytes(ser.Encoding.DER, spki)),
        ("private", key.private_bytes(ser.Encoding.Raw, ser.PrivateFormat.Raw, ser.NoEncryption())),
        ("public", public.public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw)),
        (
            "private",
            key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.OpenSSH, ser.NoEncryption()),
        ),
        ("public", public.public_bytes(ser.Encoding.OpenSSH, ser.PublicFormat.OpenSSH)),
        (
            "private",
            key.private_bytes(
                ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.BestAvailableEncryption(b"pw")
            ),
        ),
        ("private", public.public_bytes(ser.Encoding.PEM, spki)),
    )


def _secret_of(content: bytes) -> str:
    """What of a key file's content a refusal must never show: its first line of base64
    (for PEM and OpenSSH), else its bytes in hex."""
    lines = content.splitlines()
    if content.isascii() and len(lines) > 1:
        return lines[1].decode()
    if content.isascii() and b" " in content:
        return content.split(b" ")[1].decode()[:40]
    return content.hex()[:32]


def bad_key_edges(target: Target) -> list[tuple[str, bytes, str]]:
    """Key files that are almost Ed25519 PEM keys: each foreign key (X25519 and Ed448
    among them) as the kind it is, and cut short; an Ed25519 key in DER, raw, OpenSSH or
    encrypted, a public key read as private; an empty file; noise and PEM armour around
    noise."""
    secret = "SECRETABCDEFGHJKLMN"
    out = [(_kind_of(k), k, _secret_of(k)) for k in _foreign_keys()]
    out += [(_kind_of(k), k[:60] + secret.encode(), secret) for k in _foreign_keys()[:2]]
    out += [(kind, content, _secret_of(content)) for kind, content in _ed25519_not_pem()]
    armour = base64.b64encode(secret.encode() + bytes(8))
    out += [
        ("public", b"", ""),
        ("private", secret.encode(), secret),
        (
            "public",
            b"-----BEGIN PUBLIC KEY-----\n" + armour + b"\n-----END PUBLIC KEY-----\n",
            secret,
        ),
    ]
    return out


@st.composite
def bad_keys(draw: Callable[..., Any]) -> tuple[str, bytes, str]:
    """(kind to load as, file content, a secret the content holds)."""
    secret = "SECRET" + draw(st.text("ABCDEFGHJKLMNPQRSTUVWXYZ23456789", min_size=12, max_size=20))
    kind = draw(st.sampled_from(["private", "public"]))
    shape = draw(st.sampled_from(["noise", "armoured", "foreign", "truncated"]))
    if shape == "noise":
        content = secret.encode() + draw(st.binary(max_size=64))
    elif shape == "armoured":
        label = "PRIVATE KEY" if kind == "private" else "PUBLIC KEY"
        body = base64.b64encode(secret.encode() + draw(st.binary(min_size=8, max_size=40)))
        content = (
            f"-----BEGIN {label}-----\n".encode() + body + f"\n-----END {label}-----\n".encode()
        )
    elif shape == "foreign":
        content = draw(st.sampled_from(_foreign_keys()))
        secret = content.decode().splitlines()[1]
    else:
        content = draw(st.sampled_from(_foreign_keys()))[:60] + secret.encode()
    return kind, content, secret


def bad_format(ctx: Context, case: tuple[str, bytes, str]) -> None:
    """A real key loads; a file that is not an Ed25519 PEM key is refused, never shown."""
    kind, content, secret = case
    _pair(ctx)
    path = ctx.folder(create=True) / ("bad.pem" if kind == "private" else "bad.pub")
    path.write_bytes(content)
    result = ctx.refused("load_key", {"path": str(path), "kind": kind}, "seal.key.format")
    if secret and secret in result.message:
        raise Failed("the refusal shows the key file's content")


def verify_first(ctx: Context, case: tuple[tuple[list, list, dict | None], int]) -> None:
    """A valid run seals; a run with a broken chain is refused and gets no record.json."""
    (events, rows, end), choice = case
    folder = ctx.folder()
    lines = build_run(folder, events, rows, end)
    out = ctx.ok("seal", {"dir": str(folder), "key": None})
    sha = hashlib.sha256((folder / "diary.jsonl").read_bytes()).hexdigest()
    if not (folder / "record.json").is_file():
        raise Failed("seal answered ok but wrote no record.json")
    diary = out["seal"].get("diary")
    if not isinstance(diary, dict) or diary.get("sha256") != sha:
        raise Failed(f"the seal names diary sha256 {out['seal'].get('diary')}, the file is {sha}")
    broken = ctx.folder()
    lines = build_run(broken, events, rows, end)
    index = choice % len(lines)
    lines[index] = {
        **lines[index],
        "hash": "0" * 64 if lines[index]["hash"] != "0" * 64 else "1" * 64,
    }
    write_lines(broken / "diary.jsonl", lines)
    before = snapshot(broken)
    ctx.refused("seal", {"dir": str(broken), "key": None}, "seal.verify")
    if snapshot(broken) != before:
        raise Failed(f"a refused seal changed the run folder: {sorted(snapshot(broken))}")


def checks() -> list[Check]:
    """The key and seal checks."""

    which = ["private", "public", "the pair"]

    def existing(t: Target) -> st.SearchStrategy[tuple[str, bytes]]:
        return st.tuples(st.sampled_from(which), st.binary(max_size=32))

    return [
        Check(
            "seal.key.exists",
            "keygen never overwrites",
            KEYS,
            existing,
            no_overwrite,
            edges=lambda t: (
                [(w, c) for w in which[:2] for c in (b"", b"\n", bytes(32))] + [("the pair", b"")]
            ),  # an empty file, a line break, a raw key's 32 bytes
        ),
        Check(
            "seal.key.format",
            "only Ed25519 PEM keys, never shown",
            KEYS,
            lambda t: bad_keys(),
            bad_format,
            edges=bad_key_edges,
        ),
        Check(
            "seal.verify",
            "a run that does not verify is never sealed",
            SEAL,
            lambda t: st.tuples(runs(t), st.integers(0, 100)),
            verify_first,
        ),
    ]
