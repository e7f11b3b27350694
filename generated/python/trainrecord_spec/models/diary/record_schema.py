# DO NOT EDIT: generated from spec/schemas/diary/record.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from trainrecord_spec._base import StrictModel


class Diary(StrictModel):
    """
    What the seal pins of diary.jsonl.
    """

    file: Literal['diary.jsonl']
    """
    Always "diary.jsonl".
    """
    sha256: Annotated[
        str, Field(max_length=64, min_length=64, pattern='^[0-9a-f]{64}$')
    ]
    """
    SHA-256 of the whole file.
    """
    bytes: Annotated[int, Field(ge=0)]
    """
    The file's size in bytes.
    """
    lines: Annotated[int, Field(ge=1)]
    """
    How many lines the diary has (at least 1: a seal of an empty diary is refused).
    """
    head_seq: Annotated[int, Field(ge=0)]
    """
    The seq of the last line: lines - 1.
    """
    head_hash: Annotated[
        str, Field(max_length=64, min_length=64, pattern='^[0-9a-f]{64}$')
    ]
    """
    The hash of the last line (the chain head).
    """


class Metrics(StrictModel):
    """
    What the seal pins of metrics.jsonl, or null when the run has no metrics file.
    """

    file: Literal['metrics.jsonl']
    """
    Always "metrics.jsonl".
    """
    sha256: Annotated[
        str, Field(max_length=64, min_length=64, pattern='^[0-9a-f]{64}$')
    ]
    """
    SHA-256 of the whole file.
    """
    bytes: Annotated[int, Field(ge=0)]
    """
    The file's size in bytes.
    """
    rows: Annotated[int, Field(ge=0)]
    """
    How many rows (lines) the file has.
    """


class Signature(StrictModel):
    """
    The signature record.sig, or null when the record is not signed.
    """

    algorithm: Literal['ed25519']
    """
    Always "ed25519".
    """
    file: Literal['record.sig']
    """
    Always "record.sig": the detached signature over the exact bytes of record.json, base64 on one line.
    """
    public_key_sha256: Annotated[
        str, Field(max_length=64, min_length=64, pattern='^[0-9a-f]{64}$')
    ]
    """
    The signer's public key fingerprint: SHA-256 of the raw 32-byte Ed25519 public key.
    """


class DiaryRecordSeal(StrictModel):
    """
    record.json, the seal of a training record: it pins the diary as it stood when sealed (line count, head seq and hash, SHA-256 and size) and metrics.jsonl, so that a cut tail or an appended line fails verification even though the chain links alone cannot show a cut tail. record.sig, when present, is the detached Ed25519 signature over the exact bytes of this file. Fields a reader does not know are ignored, here and in its objects (the seed: "Readers should ignore fields they do not know"); every field it names is checked.
    """

    record_version: Annotated[int, Field(ge=1, le=1)]
    """
    The record format version the sealed diary follows; 1. A verifier refuses a version it does not know.
    """
    sealed_by: Annotated[str, Field(min_length=1)]
    """
    What wrote the seal and its version, e.g. "trainrecord 0.1.0".
    """
    sealed_at: Annotated[float, Field(ge=0.0)]
    """
    Unix time in seconds when the seal was written, rounded to milliseconds.
    """
    diary: Diary
    """
    What the seal pins of diary.jsonl.
    """
    metrics: Metrics | None
    """
    What the seal pins of metrics.jsonl, or null when the run has no metrics file.
    """
    signature: Signature | None
    """
    The signature record.sig, or null when the record is not signed.
    """
