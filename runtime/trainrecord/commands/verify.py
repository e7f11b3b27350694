"""``trainrecord verify RUN_DIR [--key PUBLIC_KEY] [--json]``: is this record intact?

Checks diary.jsonl line by line (strict JSON, event schema, seq, prev, hash, order),
metrics.jsonl and the run_end hashes, and the seal record.json with its signature
record.sig (checked against ``--key``). Names the first failing line and its rule.

Exit status: 0 everything holds; 1 verification failed (tampering or an invalid record);
3 the record is intact up to a torn last line (a crash while writing); 2 usage errors
(no run directory, no diary.jsonl in it, a bad option); 130 interrupted (Ctrl+C); 141
stdout closed early (``| head``: the verdict may be cut).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from trainrecord.commands import load_key_option, no_diary, run_dir_problem, whole_number
from trainrecord.diary import verify
from trainrecord.errors import printable_tree

EXIT = {"ok": 0, "failed": 1, "torn": 3}

DESCRIPTION = """\
Verify a training record: diary.jsonl (every line strict JSON and valid against its event
schema, seq from 0 and contiguous, prev linking, hash recomputed, run_start first, and
after a run_end only a run_start: a resumed run's next session), metrics.jsonl against
each run_end.metrics_sha256, and the seal record.json with record.sig (pass --key to
check the signature).

exit status: 0 everything holds, 1 verification failed, 3 torn last line only (a crash
while writing; the lines before it verify), 2 usage error, 130 interrupted (Ctrl+C), 141 stdout closed early (| head)."""


def register(subparsers: Any) -> None:
    """Add the ``verify`` subcommand."""
    parser = subparsers.add_parser(
        "verify",
        help="verify a run directory's diary, metrics, seal and signature",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", type=Path)
    parser.add_argument(
        "--key", metavar="PUBLIC_KEY", type=Path, help="the signer's public key (PEM)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--workers",
        type=_workers,
        default=None,
        metavar="N",
        help="processes to use, 1 or more (default: every CPU, for diaries of 8 MiB and more)",
    )
    parser.add_argument("--no-progress", action="store_true", help="never draw a progress bar")
    parser.set_defaults(func=run)


_workers = whole_number(1, what="processes", hint="or leave --workers out to use every CPU")
"""``--workers``: a whole number of processes, at least 1 (argparse: usage error, exit 2)."""


def run(args: argparse.Namespace) -> int:
    """Verify and print the verdict."""
    problem = run_dir_problem(args.run_dir)
    if problem:
        print(f"trainrecord verify: {problem}", file=sys.stderr)
        return 2
    diary = args.run_dir / "diary.jsonl"
    if not (diary.exists() or diary.is_symlink()):  # (one that is not a file: diary.file.regular)
        print(no_diary("verify", args.run_dir), file=sys.stderr)
        return 2
    key, key_problem = load_key_option("verify", args.key)
    if key_problem:  # loaded first: a key problem is said for any record, signed or not
        print(key_problem, file=sys.stderr)  # (an unsigned record with --key then fails
        return 2  # seal.signature.missing)
    progress = sys.stderr.isatty() and not args.no_progress and not args.json
    result = verify(args.run_dir, public_key=key, workers=args.workers, progress=progress)
    if args.json:
        print(json.dumps(printable_tree(result.to_json()), indent=2))  # (a name not UTF-8)
    else:
        print(result.summary())
        for warning in result.warnings:
            print(f"warning: {warning}")
    return EXIT[result.status]
