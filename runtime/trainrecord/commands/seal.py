"""``trainrecord seal RUN_DIR [--key PRIVATE_KEY]``: write record.json (and record.sig).

The record is verified first; one that does not verify is never sealed. With ``--key``
the seal is signed (record.sig, Ed25519 over the exact bytes of record.json). A record
already signed by another key (or, without ``--key``, signed at all) is resealed only with
``--replace``, which replaces its signature. A record still being written (a Monitor or
writer has its diary.jsonl or metrics.jsonl open) is not sealed: its writer seals it at close.

exit status: 0 sealed; 2 not sealed: usage error (no run directory, no diary.jsonl, a --key
that is not a private key), a record that does not verify, one still being written, one
signed by another key without --replace, or a seal that could not be written (the record
is left as it was); 130 interrupted (Ctrl+C); 141 stdout closed early (| head; sealed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from trainrecord.commands import plain, run_dir_problem
from trainrecord.diary import write_seal
from trainrecord.diary.durability import writers_kept_off
from trainrecord.diary.keys import fingerprint, load_private_key
from trainrecord.errors import escaped

LOCKS = (("diary.jsonl", "diary.writer.locked"), ("metrics.jsonl", "diary_metrics.writer.locked"))
"""The files a live run's writers hold locked, each with the rule of a second writer."""


def register(subparsers: Any) -> None:
    """Add the ``seal`` subcommand."""
    parser = subparsers.add_parser(
        "seal",
        help="seal a verified record (record.json) and sign it (record.sig)",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", type=Path)
    parser.add_argument("--key", metavar="PRIVATE_KEY", type=Path, help="sign with this key")
    parser.add_argument(
        "--replace",
        action="store_true",
        help="reseal a record signed by another key (or, without --key, unsign it): its "
        "signature is replaced",
    )
    parser.set_defaults(func=run)


def _signer(run_dir: Path) -> str | None:
    """The fingerprint of the key that signed the record's current seal, if it is signed
    (record.json names a signature); None for no seal, an unsigned or unreadable one."""
    try:
        seal = json.loads((run_dir / "record.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # (nested past the parser's depth)
        return None
    signature = seal.get("signature") if isinstance(seal, dict) else None
    if isinstance(signature, dict) and isinstance(signature.get("public_key_sha256"), str):
        return signature["public_key_sha256"]
    return None


def run(args: argparse.Namespace) -> int:
    """Seal the record and print what was pinned."""
    problem = run_dir_problem(args.run_dir)
    if problem or not (args.run_dir / "diary.jsonl").is_file():
        print(
            f"trainrecord seal: {problem or f'no diary.jsonl in {args.run_dir}'}", file=sys.stderr
        )
        return 2
    key = load_private_key(args.key) if args.key is not None else None
    signer = _signer(args.run_dir)
    if signer is not None and not args.replace:
        new = fingerprint(key.public_key()) if key is not None else None
        if new != signer:
            what = (
                "sealing with --key " + str(args.key) + " (another key) would replace its signature"
                if key is not None
                else "sealing without --key would remove its signature (record.sig)"
            )
            print(
                f"trainrecord seal: {args.run_dir} is already signed by key "
                f"{escaped(signer[:16])}...; "
                f"{what}: pass --replace to do that",
                file=sys.stderr,
            )
            return 2
    with writers_kept_off(args.run_dir, LOCKS):  # not a record still being written
        seal = write_seal(args.run_dir, signing_key=key)
    diary = seal["diary"]
    print(f"sealed {args.run_dir}: {diary['lines']} lines, head {diary['head_hash'][:16]}...")
    if seal["signature"]:
        print(f"signed: record.sig (key {seal['signature']['public_key_sha256'][:16]}...)")
    return 0
