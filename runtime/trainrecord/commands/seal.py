"""``trainrecord seal RUN_DIR [--key PRIVATE_KEY]``: write record.json (and record.sig).

The record is verified first; one that does not verify is never sealed. With ``--key``
the seal is signed (record.sig, Ed25519 over the exact bytes of record.json).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from trainrecord.diary import write_seal


def register(subparsers: Any) -> None:
    """Add the ``seal`` subcommand."""
    parser = subparsers.add_parser(
        "seal",
        help="seal a verified record (record.json) and sign it (record.sig)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", type=Path)
    parser.add_argument("--key", metavar="PRIVATE_KEY", type=Path, help="sign with this key")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Seal the record and print what was pinned."""
    if not (args.run_dir / "diary.jsonl").is_file():
        print(f"trainrecord seal: no diary.jsonl in {args.run_dir}", file=sys.stderr)
        return 2
    seal = write_seal(args.run_dir, signing_key=args.key)
    diary = seal["diary"]
    print(f"sealed {args.run_dir}: {diary['lines']} lines, head {diary['head_hash'][:16]}...")
    if seal["signature"]:
        print(f"signed: record.sig (key {seal['signature']['public_key_sha256'][:16]}...)")
    return 0
