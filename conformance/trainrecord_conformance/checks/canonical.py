"""Canonical JSON: the diary line hash and the Foundry config hash, byte for byte.

Inputs are the spec's canonical vectors (``spec/vectors/canonical``) and random bodies
full of what other languages spell differently (floats such as ``1e-07`` and ``1e+16``,
``-0.0``, big integers, non-ASCII, astral and control characters). The expected text is
the definition itself: Python's ``json.dumps`` with the seed's arguments. For a target that
takes Python values (``@nonfinite``), configurations also hold NaN and infinities, which
json.dumps writes as ``NaN``, ``Infinity`` and ``-Infinity`` (the exec protocol is strict
JSON and cannot carry them).
"""

from __future__ import annotations

import hashlib
import json
import math
from importlib import resources
from typing import Any

from hypothesis import strategies as st

from trainrecord_conformance import strategies as S
from trainrecord_conformance.checks.base import Check, Context, Failed
from trainrecord_conformance.targets import Target

NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
"""The texts a vector holds, at the places its ``nonfinite`` lists, for these floats."""


def vector_input(case: dict[str, Any]) -> Any:
    """The input of a canonical vector case, with the float put at each ``nonfinite``
    place (a JSON pointer whose text is ``NaN``, ``Infinity`` or ``-Infinity``)."""
    value = json.loads(json.dumps(case["input"]))  # a copy to change
    for pointer in case.get("nonfinite", ()):
        parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
        parent = value
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        key: Any = int(parts[-1]) if isinstance(parent, list) else parts[-1]
        parent[key] = NONFINITE[parent[key]]
    return value


def vector_cases(form: str, *, nonfinite: bool = True) -> list[dict[str, Any]]:
    """The canonical vectors of one form (``line`` or ``config``), inputs as Python values;
    without ``nonfinite``, the cases with NaN or an infinity are left out."""
    folder = resources.files("trainrecord_spec").joinpath("vectors", "canonical")
    out: list[dict[str, Any]] = []
    for entry in folder.iterdir():
        if entry.name.endswith(".json"):
            data = json.loads(entry.read_text(encoding="utf-8"))
            if data["form"] == form:
                out.extend(
                    {**case, "input": vector_input(case)}
                    for case in data["cases"]
                    if nonfinite or not case.get("nonfinite")
                )
    return out


def _line_case(body: dict[str, Any], prev: str) -> dict[str, Any]:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256((prev + text).encode("utf-8")).hexdigest()
    return {"input": body, "prev": prev, "canonical": text, "sha256": digest}


def _config_case(config: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(config, sort_keys=True)
    return {
        "input": config,
        "canonical": text,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
    }


def line_cases(target: Target) -> st.SearchStrategy[dict[str, Any]]:
    """Vector cases first, then random bodies after random prev hashes."""
    prev = st.one_of(st.just("0" * 64), st.text("0123456789abcdef", min_size=64, max_size=64))
    drawn = st.builds(_line_case, S.canonical_bodies(), prev)
    return st.one_of(st.sampled_from(vector_cases("line", nonfinite=target.nonfinite)), drawn)


def config_cases(target: Target) -> st.SearchStrategy[dict[str, Any]]:
    """Vector cases first, then random configurations (with NaN and infinities for a
    target that can take them)."""
    vectors = st.sampled_from(vector_cases("config", nonfinite=target.nonfinite))
    return st.one_of(vectors, st.builds(_config_case, S.configs(nonfinite=target.nonfinite)))


def line_body(ctx: Context, case: dict[str, Any]) -> None:
    """line_hash gives the exact canonical text and hash."""
    out = ctx.ok("line_hash", {"prev": case["prev"], "body": case["input"]})
    if out["canonical"] != case["canonical"]:
        raise Failed(f"canonical text {out['canonical']!r}, expected {case['canonical']!r}")
    if out["hash"] != case["sha256"]:
        raise Failed(f"hash {out['hash']}, expected {case['sha256']}")


def config_body(ctx: Context, case: dict[str, Any]) -> None:
    """config_hash gives the exact configuration form and config_sha."""
    out = ctx.ok("config_hash", {"config": case["input"]})
    if out["canonical"] != case["canonical"]:
        raise Failed(f"configuration form {out['canonical']!r}, expected {case['canonical']!r}")
    if out["config_sha"] != case["sha256"][:16]:
        raise Failed(f"config_sha {out['config_sha']}, expected {case['sha256'][:16]}")


def checks() -> list[Check]:
    """The two canonical-JSON checks."""
    return [
        Check(
            "canonical.line",
            "line_hash reproduces json.dumps and sha256 byte for byte",
            frozenset({"line_hash"}),
            line_cases,
            line_body,
        ),
        Check(
            "canonical.config",
            "config_hash reproduces json.dumps and config_sha",
            frozenset({"config_hash"}),
            config_cases,
            config_body,
        ),
    ]
