"""The training diary: a hash-chained event record, its metrics, seal and verifier.

* :class:`DiaryWriter` appends events to ``diary.jsonl`` (seq, time, prev, hash added;
  each event checked against its schema first); :class:`MetricsWriter` appends rows to
  ``metrics.jsonl``.
* :func:`verify` checks a run directory and returns a :class:`VerifyResult`.
* :func:`write_seal` writes ``record.json`` (and ``record.sig`` with a signing key);
  :func:`generate_keypair`, :func:`load_private_key`, :func:`load_public_key` handle keys.
* :func:`architecture_sha256` fingerprints parameter names and shapes.
"""

from __future__ import annotations

from trainrecord.diary.architecture import architecture_sha256, architecture_text
from trainrecord.diary.chain import LineFailure
from trainrecord.diary.events import EVENT_TYPES, RECORD_VERSION
from trainrecord.diary.keys import (
    fingerprint,
    generate_keypair,
    load_private_key,
    load_public_key,
)
from trainrecord.diary.seal import write_seal
from trainrecord.diary.verifier import VerifyResult, verify
from trainrecord.diary.writer import DiaryWriter, MetricsWriter

__all__ = [
    "EVENT_TYPES",
    "RECORD_VERSION",
    "DiaryWriter",
    "LineFailure",
    "MetricsWriter",
    "VerifyResult",
    "architecture_sha256",
    "architecture_text",
    "fingerprint",
    "generate_keypair",
    "load_private_key",
    "load_public_key",
    "verify",
    "write_seal",
]
