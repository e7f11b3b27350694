"""Write spec/vectors/canonical/*.json: the canonical-JSON vectors (run by hand, then commit).

The expected texts and hashes come from Python's json.dumps and hashlib, which are the
definition the seeds give. Inputs are chosen to trip other languages: Python's float
spelling, integer-valued floats, -0.0, big integers, non-ASCII and control characters,
lone surrogates, and key order of nested objects.

The configuration form also has cases with NaN and infinities, which json.dumps writes as
the tokens NaN, Infinity and -Infinity (the diary line form refuses them). A vector file
is strict JSON, so such an input holds the text "NaN", "Infinity" or "-Infinity" at each
place listed in the case's "nonfinite" (JSON pointers into "input"): a reader puts the
float there before hashing (see spec/meta/canonical-vectors.schema.json).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "spec" / "vectors" / "canonical"
PREV = "0" * 64
PREV2 = hashlib.sha256(b"trainrecord").hexdigest()

INPUTS: list[tuple[str, object]] = [
    ("an empty object is {}", {}),
    (
        "keys are sorted by code point, nested objects too",
        {"b": 1, "a": {"d": 2, "c": [3, {"f": 1, "e": 0}]}},
    ),
    ("uppercase keys sort before lowercase ones", {"b": 1, "B": 2, "a": 3, "_": 4}),
    ("0.1 is written as 0.1", {"x": 0.1}),
    ("0.1 + 0.2 is written with all 17 significant digits", {"x": 0.1 + 0.2}),
    ("1e-07 keeps Python's two-digit exponent", {"x": 1e-07}),
    ("0.0001 is written in positional notation", {"x": 0.0001}),
    ("0.00001 switches to 1e-05", {"x": 0.00001}),
    ("1e+16 is written with a plus sign", {"x": 1e16}),
    ("1e15 as a float is written 1000000000000000.0", {"x": 1e15}),
    ("an integer-valued float keeps .0", {"x": 2.0}),
    ("negative zero is written -0.0", {"x": -0.0}),
    ("the seed's metrics loss 2.305945873260498 is written as is", {"loss": 2.305945873260498}),
    ("the smallest subnormal is 5e-324", {"x": 5e-324}),
    ("the largest double is 1.7976931348623157e+308", {"x": 1.7976931348623157e308}),
    (
        "integers beyond 64 bits are written in full",
        {"x": 123456789012345678901234567890, "y": -(2**70)},
    ),
    ("2**53 + 1 as an integer is exact", {"x": 2**53 + 1}),
    ("non-ASCII text is escaped as \\uXXXX", {"name": "café ünïcödé"}),
    ("characters beyond the BMP are escaped as surrogate pairs", {"s": "🔥 loss"}),
    (
        "control characters use short escapes where JSON has them, else \\u00XX",
        {"s": "a\nb\tc\r\b\f\u0001\u001f\u007f"},
    ),
    ("quotes, backslashes and slashes: / is not escaped", {"s": '"q" \\ /'}),
    ("a lone surrogate is escaped as \\udXXX", {"s": "\ud800"}),
    ("non-ASCII keys are escaped and sorted by code point", {"é": 1, "z": 2, "ä": 3}),
    (
        "a key beyond the BMP sorts after U+E000 (code point order, not UTF-16 code unit order)",
        {"\ue000": 1, "🔥": 2, "z": 3},
    ),
    ("true, false and null are lowercase", {"t": True, "f": False, "n": None}),
    ("arrays keep their order", {"a": [3, 1, 2]}),
    (
        "a diary-like body with mixed types",
        {
            "seq": 0,
            "time": 1764456439.123,
            "event": "run_start",
            "layers": ["conv1.0", "fc"],
            "config": {"lr": 0.001},
        },
    ),
]

CONFIG_ONLY: list[tuple[str, object]] = [
    (
        "NaN is written NaN, as json.dumps writes it, and hashed",
        {"lr": math.nan, "epochs": 2},
    ),
    (
        "infinities are written Infinity and -Infinity, in arrays too",
        {"clip": math.inf, "floor": -math.inf, "xs": [math.nan, 1.0, -math.inf]},
    ),
]
"""Configuration-form cases only: the diary line form refuses non-finite numbers."""

TOKENS = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def strict_input(value: Any, pointer: str = "") -> tuple[Any, list[str]]:
    """``value`` with every non-finite float replaced by its token text, and the JSON
    pointers of the places replaced."""
    if isinstance(value, float) and not math.isfinite(value):
        return TOKENS[repr(value)], [pointer]
    if isinstance(value, dict):
        out, places = {}, []
        for key, item in value.items():
            escaped = key.replace("~", "~0").replace("/", "~1")
            out[key], found = strict_input(item, f"{pointer}/{escaped}")
            places += found
        return out, places
    if isinstance(value, list):
        items = [strict_input(item, f"{pointer}/{i}") for i, item in enumerate(value)]
        return [item for item, _ in items], [p for _, found in items for p in found]
    return value, []


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    line_cases = []
    for i, (desc, body) in enumerate(INPUTS):
        prev = PREV if i % 2 == 0 else PREV2
        text = json.dumps(body, sort_keys=True, separators=(",", ":"))
        line_cases.append(
            {
                "description": desc,
                "input": body,
                "prev": prev,
                "canonical": text,
                "sha256": hashlib.sha256((prev + text).encode("utf-8")).hexdigest(),
            }
        )
    config_cases = []
    for desc, cfg in [
        (
            'the seed\'s example {"lr": 0.001, "epochs": 2} gives da1dca8eecbe78ba',
            {"lr": 0.001, "epochs": 2},
        ),
        *INPUTS,
        *CONFIG_ONLY,
    ]:
        text = json.dumps(cfg, sort_keys=True)
        strict, places = strict_input(cfg)
        case = {"description": desc, "input": strict}
        if places:
            case["nonfinite"] = places
        case["canonical"] = text
        case["sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        config_cases.append(case)
    files = {
        "line-hash.json": {
            "description": "Diary line hash: sha256(prev + json.dumps(body, sort_keys=True, separators=(',', ':'))).",
            "form": "line",
            "cases": line_cases,
        },
        "config-hash.json": {
            "description": "Foundry config hash: json.dumps(config, sort_keys=True) with its defaults (separators, NaN and Infinity written as those tokens); config_sha is the first 16 hex characters of its sha256.",
            "form": "config",
            "cases": config_cases,
        },
    }
    for name, doc in files.items():
        (OUT / name).write_text(
            json.dumps(doc, indent=2, ensure_ascii=True, allow_nan=False) + "\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
