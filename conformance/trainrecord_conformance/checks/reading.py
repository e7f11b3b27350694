"""Foundry run records v1: the metrics reader (``read_metrics``).

The suite writes ``metrics.json`` itself: a valid file must read back as the rows written;
the same rows made non-strict JSON (a NaN or Infinity token, a byte that is not UTF-8, a
cut or trailing garbage) must be refused naming ``metrics.file.json``; and a valid file
beside a witness of another ``run_record_format`` must be refused naming
``metrics.read.sibling_version``, while the same file beside a version 1 witness reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from trainrecord_conformance import strategies as S
from trainrecord_conformance.checks.base import Check, Context, Failed
from trainrecord_conformance.checks.foundry import METRICS, WITNESS
from trainrecord_conformance.targets import Target

READ = frozenset({"read_metrics"})

CORRUPTIONS: dict[str, Callable[[bytes], bytes]] = {
    "NaN": lambda b: b"[NaN," + b[1:] if b != b"[]" else b"[NaN]",
    "Infinity": lambda b: b"[Infinity," + b[1:] if b != b"[]" else b"[-Infinity]",
    "not UTF-8": lambda b: b[:1] + b"\xff" + b[1:],
    "cut": lambda b: b[: len(b) // 2],
    "trailing": lambda b: b + b" x",
    "single quotes": lambda b: b"['row']",
}


def _read_ok(ctx: Context, folder: Path, rows: Any) -> None:
    """The written rows read back as they are (a number's value, not its spelling: a
    reader may give the integer 0 of a number field as 0.0)."""
    out = ctx.ok("read_metrics", {"path": str(folder / "metrics.json")})
    if out["rows"] != rows:
        raise Failed(f"read {out['rows']!r}, wrote {rows!r}")


def _write(folder: Path, rows: Any) -> bytes:
    folder.mkdir(parents=True, exist_ok=True)
    data = json.dumps(rows, allow_nan=False).encode("utf-8")
    (folder / "metrics.json").write_bytes(data)
    return data


def strict_json(ctx: Context, case: tuple[Any, str]) -> None:
    """A valid file reads; the same file made non-strict JSON is refused."""
    rows, how = case
    folder = ctx.folder()
    data = _write(folder, rows)
    _read_ok(ctx, folder, rows)
    (folder / "metrics.json").write_bytes(CORRUPTIONS[how](data))
    ctx.refused("read_metrics", {"path": str(folder / "metrics.json")}, "metrics.file.json")


def sibling_version(ctx: Context, case: tuple[Any, Any, int, int]) -> None:
    """Beside a version 1 witness the file reads; beside another version it is refused."""
    rows, witness, attempt, version = case
    folder = ctx.folder()
    _write(folder, rows)
    name = folder / f"observed.attempt{attempt}.json"
    name.write_text(json.dumps({**witness, "attempt": attempt, "run_record_format": 1}))
    _read_ok(ctx, folder, rows)
    name.write_text(json.dumps({**witness, "attempt": attempt, "run_record_format": version}))
    ctx.refused(
        "read_metrics", {"path": str(folder / "metrics.json")}, "metrics.read.sibling_version"
    )


IRREGULAR = ("folder", "too large")
"""What stands where a reader's file should be: a folder, and (the witness only, whose cap
is 1 MiB) a regular file one byte past the cap, sparse. Never a FIFO or a device here: an
implementation that broke the rule would hang the suite (tests/foundry has them)."""


def regular_file(name: str, op: str, rule: str) -> Callable[[Context, Any], None]:
    """``<kind>.file.regular``: the reader refuses a folder (and a file past its cap) in
    place of its file, naming the rule, rather than raising or reading it."""

    def check(ctx: Context, case: str) -> None:
        folder = ctx.folder(create=True)
        path = folder / name
        if case == "folder":
            path.mkdir()
            (path / "inside.json").write_text("{}", encoding="utf-8")
        else:
            with path.open("wb") as f:
                f.truncate((1 << 20) + 1)
        ctx.refused(op, {"path": str(path)}, rule)

    return check


def checks() -> list[Check]:
    """The reader's checks."""

    def corrupt(t: Target) -> st.SearchStrategy[tuple[Any, str]]:
        return st.tuples(S.valid_instances(METRICS), st.sampled_from(sorted(CORRUPTIONS)))

    def siblings(t: Target) -> st.SearchStrategy[tuple[Any, Any, int, int]]:
        versions = st.one_of(st.just(2), st.integers(0, 0), st.integers(3, 10**6))
        return st.tuples(
            S.valid_instances(METRICS), S.valid_instances(WITNESS), st.integers(0, 20), versions
        )

    return [
        Check("metrics.file.json", "non-strict JSON is refused", READ, corrupt, strict_json),
        Check(
            "metrics.file.regular",
            "a folder in place of metrics.json is refused",
            READ,
            lambda t: st.just("folder"),
            regular_file("metrics.json", "read_metrics", "metrics.file.regular"),
            edges=lambda t: ["folder"],
        ),
        Check(
            "witness.file.regular",
            "a folder, or a file past 1 MiB, in place of the witness is refused",
            frozenset({"read_witness"}),
            lambda t: st.sampled_from(IRREGULAR),
            regular_file("observed.attempt0.json", "read_witness", "witness.file.regular"),
            edges=lambda t: list(IRREGULAR),
        ),
        Check(
            "metrics.read.sibling_version",
            "a witness of another version beside it",
            READ,
            siblings,
            sibling_version,
        ),
    ]
