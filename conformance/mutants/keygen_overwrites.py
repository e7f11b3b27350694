"""Mutant: a keygen that replaces existing key files."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.diary import generate_keypair

BREAKS = "seal.key.exists"


def faulty(data: dict[str, Any]) -> dict[str, Any]:
    """Generate with overwrite on."""
    _, _, fingerprint = generate_keypair(data["private"], data["public"], overwrite=True)
    return {"fingerprint": fingerprint}


if __name__ == "__main__":
    run_mutant("keygen_overwrites", {"keygen": faulty})
