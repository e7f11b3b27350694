"""Foundry run records v1: the bytes of the files the writers write.

spec/README.md ("Files"): the witness and metrics.json are UTF-8 JSON with non-ASCII
written as is (``json.dumps(..., ensure_ascii=False)``), so a benchmark named ``日本`` is
found by ``grep 日本 metrics.json``. Escaping it (``"\\u65e5\\u672c"``, Python's default)
is still JSON that reads back the same, which is why no content check saw it: these checks
look at the bytes. ``witness.write.non_ascii`` writes a witness whose device is ``cpu:``
and text outside ASCII (a ``cpu...`` device keeps the accelerator fields null);
``metrics.write.non_ascii`` rows whose benchmark and metric are. The file must hold each
text as its UTF-8 bytes, in the JSON string the text is (a quote or a backslash escaped,
nothing else), and no ``\\u`` escape of a character outside ASCII. Control characters are
not drawn: how they are escaped is not this rule's business.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from trainrecord_conformance.checks.base import Check, Context, Failed

EDGES = [
    "é",
    "日本",
    "😀",
    "\u0080",
    "ÿ",
    "\u00a0x",
    "a\u2028b\u2029",
    "\ufeff",
    "\U0010fffd",
    'Ω "quoted" \\ back',
    "Zürich-ETTh1 ∑",
]
"""Texts that define the rule: the first character outside ASCII (U+0080) and the last of
Latin-1, the BMP beyond it, an astral character (a surrogate pair when escaped), the line
and paragraph separators JSON allows raw, a BOM inside text, the last plane, and quotes and
a backslash beside them (which JSON does escape)."""

ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u(?!00[0-7][0-9a-fA-F])[0-9a-fA-F]{4}")
"""A \\u escape of a character outside ASCII (U+0080 and up; a surrogate half too): a
backslash that is not itself escaped, then u and four hex digits."""


def _texts() -> st.SearchStrategy[str]:
    """Text with at least one character outside ASCII, no control characters and not
    blank (a free-text field refuses blank text)."""
    outside = st.characters(min_codepoint=0x80, blacklist_categories=("Cs", "Cc"))
    anything = st.characters(blacklist_categories=("Cs", "Cc"))
    return st.builds(
        lambda a, b, c: f"x{a}{b}{c}",
        st.text(anything, max_size=4),
        outside,
        st.text(anything, max_size=4),
    )


def _problem(raw: bytes, texts: list[str], what: str) -> str | None:
    """What is wrong with the bytes of a file that should hold ``texts`` as is."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"{what} is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
    found = ESCAPE.search(raw)
    if found is not None:
        near = raw[max(0, found.start() - 20) : found.end() + 20].decode("utf-8", "replace")
        return (
            f"{what} escapes a character outside ASCII as {found.group().decode()} (near "
            f"{near!r}): write it as is, in UTF-8 (json.dumps(..., ensure_ascii=False))"
        )
    for text in texts:
        spelled = json.dumps(text, ensure_ascii=False).encode("utf-8")
        if spelled not in raw:
            return (
                f"{what} does not hold the text {text!r} as its UTF-8 bytes "
                f"({spelled.decode('utf-8')!r} is not in the file)"
            )
    return None


def _read(path: Path, rule: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise Failed(f"[{rule}] no file to read at {path.name}: {exc.strerror or exc}") from None


def witness_non_ascii(ctx: Context, text: str) -> None:
    """The witness of a device ``cpu:<text>`` holds the device as its UTF-8 bytes."""
    rule = "witness.write.non_ascii"
    folder = ctx.folder()
    device = f"cpu:{text}"
    data = {
        "dir": str(folder),
        "env": {"FOUNDRY_RUN_ID": "1"},
        "config": {"lr": 0.1},
        "device": device,
        "wall_seconds": 7,
    }
    ctx.ok("write_witness", data)
    raw = _read(folder / "observed.attempt0.json", rule)
    problem = _problem(raw, [device], f"the witness of device {device!r}")
    if problem is not None:
        raise Failed(f"[{rule}] {problem}")


def metrics_non_ascii(ctx: Context, case: tuple[str, str]) -> None:
    """metrics.json holds a benchmark and a metric outside ASCII as their UTF-8 bytes."""
    rule = "metrics.write.non_ascii"
    benchmark, metric = case
    folder = ctx.folder()
    rows: list[Any] = [
        {"benchmark": benchmark, "metric": metric, "horizon": 96, "seed": 0, "value": 0.5}
    ]
    ctx.ok("write_metrics", {"dir": str(folder), "rows": rows})
    raw = _read(folder / "metrics.json", rule)
    problem = _problem(raw, [benchmark, metric], "metrics.json")
    if problem is not None:
        raise Failed(f"[{rule}] {problem}")


def checks() -> list[Check]:
    """The two byte checks."""
    return [
        Check(
            "witness.write.non_ascii",
            "a device outside ASCII is written as its UTF-8 bytes",
            frozenset({"write_witness"}),
            lambda t: _texts(),
            witness_non_ascii,
            edges=lambda t: EDGES,
        ),
        Check(
            "metrics.write.non_ascii",
            "a benchmark and metric outside ASCII are written as their UTF-8 bytes",
            frozenset({"write_metrics"}),
            lambda t: st.tuples(_texts(), _texts()),
            metrics_non_ascii,
            edges=lambda t: [(e, EDGES[-1 - i]) for i, e in enumerate(EDGES)],
        ),
    ]
