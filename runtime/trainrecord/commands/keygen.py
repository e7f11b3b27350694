"""``trainrecord keygen PRIVATE_KEY [--public PUBLIC_KEY]``: make an Ed25519 key pair.

The private key is written as unencrypted PKCS#8 PEM with mode 0600, the public key
(``PRIVATE_KEY.pub`` unless ``--public`` says otherwise) as PEM. Existing files are never
overwritten. Prints the paths and the public key's fingerprint, never the private key.

exit status: 0 both keys written; 2 neither written: a key file is there already
(seal.key.exists), or a folder for them cannot be made or written (a file in its way,
read-only, no permission); 130 interrupted (Ctrl+C); 141 stdout closed early (| head;
the keys are written).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from trainrecord.commands import plain
from trainrecord.diary import generate_keypair


def register(subparsers: Any) -> None:
    """Add the ``keygen`` subcommand."""
    parser = subparsers.add_parser(
        "keygen",
        help="make an Ed25519 key pair for signing sealed records",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "private_key",
        metavar="PRIVATE_KEY",
        type=Path,
        help="where to write the private key (for seal --key; keep it secret)",
    )
    parser.add_argument(
        "--public",
        metavar="PUBLIC_KEY",
        type=Path,
        default=None,
        help="where to write the public key (default PRIVATE_KEY.pub; for verify --key)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the key pair and print where it went."""
    priv, pub, fp = generate_keypair(args.private_key, args.public)
    print(f"private key: {priv} (keep it secret; mode 0600)")
    print(f"public key:  {pub}")
    print(f"fingerprint: {fp}")
    return 0
