"""Mutant: a key loader that reads the raw key at its fixed offset in the DER, checking the
algorithm's OID arc 1.3.101 but not the algorithm itself: an X25519 key (1.3.101.110, the
same shape as Ed25519's 1.3.101.112) loads as an Ed25519 key."""

from __future__ import annotations

import base64
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.errors import RecordRefused
from trainrecord_conformance.operations import load_key

BREAKS = "seal.key.format"

ARC = bytes.fromhex("06032b65")  # OBJECT IDENTIFIER 1.3.101.x
SHAPES = {
    "public": (44, bytes.fromhex("302a3005") + ARC, 12),
    "private": (48, bytes.fromhex("302e020100") + bytes.fromhex("3005") + ARC, 16),
}
"""kind -> (DER length, prefix up to the OID's last byte, offset of the raw key)."""


def lenient(data: dict[str, Any]) -> dict[str, Any]:
    """The reference loader; a key it refuses gets a second chance by shape."""
    try:
        return load_key(data)
    except RecordRefused:
        from cryptography.hazmat.primitives.asymmetric import ed25519

        from trainrecord.diary import fingerprint

        size, prefix, offset = SHAPES[data["kind"]]
        with open(data["path"], "rb") as f:
            lines = f.read().splitlines()
        try:
            der = base64.b64decode(b"".join(lines[1:-1]), validate=True)
        except ValueError:
            raise RecordRefused.one("seal.key.format", ["key"], "not a key") from None
        if len(der) != size or not der.startswith(prefix):
            raise
        raw = der[offset:]
        if data["kind"] == "private":
            public = ed25519.Ed25519PrivateKey.from_private_bytes(raw).public_key()
        else:
            public = ed25519.Ed25519PublicKey.from_public_bytes(raw)
        return {"fingerprint": fingerprint(public)}


if __name__ == "__main__":
    run_mutant("key_oid_arc", {"load_key": lenient})
