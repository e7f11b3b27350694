"""The Node implementation reproduces Python's canonical JSON and the oracle's verdicts.

Through the harness process: every canonical-JSON vector byte for byte, a differential
fuzz against ``json.dumps(..., sort_keys=True)`` in both forms (floats, big integers,
surrogates, control characters, key order), and every schema vector with its rule id,
compared with the Python oracle. The configuration form with NaN and infinities, which the
protocol (strict JSON) cannot carry, is checked by calling the Node module directly.
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import SPEC
from tests.typescript.node_harness import NODE_IMPL, Harness, require_node
from trainrecord import schemas
from trainrecord.canonical import canonical_config, canonical_line, config_sha, line_hash
from trainrecord_conformance.checks.canonical import vector_input

pytestmark = pytest.mark.xdist_group("node")


def _vector_cases(form: str) -> list[dict[str, Any]]:
    doc = json.loads((SPEC / "vectors" / "canonical" / f"{form}-hash.json").read_text("utf-8"))
    return doc["cases"]


@pytest.mark.parametrize("case", _vector_cases("line"), ids=lambda c: c["description"])
def test_line_hash_vectors_byte_exact(harness: Harness, case: dict[str, Any]) -> None:
    got = harness.run("line_hash", prev=case["prev"], body=case["input"])
    assert got["canonical"] == case["canonical"]
    assert got["hash"] == case["sha256"]


@pytest.mark.parametrize(
    "case",
    [c for c in _vector_cases("config") if not c.get("nonfinite")],
    ids=lambda c: c["description"],
)
def test_config_hash_vectors_byte_exact(harness: Harness, case: dict[str, Any]) -> None:
    got = harness.run("config_hash", config=case["input"])
    assert got["canonical"] == case["canonical"]
    assert hashlib.sha256(got["canonical"].encode("utf-8")).hexdigest() == case["sha256"]
    assert got["config_sha"] == case["sha256"][:16]


TRICKY_TEXT = st.sampled_from(["\ud800", "\udfff", "\x7f", "\x00", "\u2028", "🔥", "é", "/"])
TEXT = st.text(st.one_of(st.characters(), TRICKY_TEXT), max_size=8)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1e16, 1e15, 1e-4, 1e-5, 5e-324, 1.7976931348623157e308, 2.0]),
    TEXT,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=20,
)


@given(body=st.dictionaries(TEXT, JSON_VALUES, max_size=6))
def test_canonical_forms_match_python(harness: Harness, body: dict[str, Any]) -> None:
    prev = hashlib.sha256(b"x").hexdigest()
    line = harness.run("line_hash", prev=prev, body=body)
    assert line["canonical"] == canonical_line(body)
    assert line["hash"] == line_hash(prev, body)
    config = harness.run("config_hash", config=body)
    assert config["canonical"] == canonical_config(body)
    assert config["config_sha"] == config_sha(body)


def _js(value: Any) -> str:
    """A JavaScript expression for ``value`` as lib/pyjson.js holds it (ints as BigInt,
    floats as number, NaN and infinities included; own properties, even ``__proto__``)."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        return f"{value}n"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)  # Python's repr parses to the same double in JavaScript
    if isinstance(value, str):
        return json.dumps(value)  # \uXXXX escapes: lone surrogates survive
    if isinstance(value, list):
        return "[" + ", ".join(_js(v) for v in value) + "]"
    pairs = ", ".join(f"[{json.dumps(k)}, {_js(v)}]" for k, v in value.items())
    return f"Object.fromEntries([{pairs}])"


def node_config_forms(configs: list[Any]) -> list[str]:
    """canonicalConfig of lib/pyjson.js for each configuration, in one Node process."""
    script = (
        f"const {{ canonicalConfig }} = require({json.dumps(str(NODE_IMPL / 'lib' / 'pyjson.js'))});\n"
        f"for (const c of [{', '.join(_js(c) for c in configs)}]) "
        "process.stdout.write(JSON.stringify(canonicalConfig(c)) + '\\n');\n"
    )
    proc = subprocess.run(
        [require_node(), "-"], input=script, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_config_hash_vectors_with_nan_byte_exact() -> None:
    """NaN, Infinity and -Infinity are written as json.dumps writes them, as the vectors say."""
    cases = [c for c in _vector_cases("config") if c.get("nonfinite")]
    assert cases
    got = node_config_forms([vector_input(c) for c in cases])
    assert got == [c["canonical"] for c in cases]


NONFINITE_VALUES = st.recursive(
    st.one_of(SCALARS, st.sampled_from([math.nan, math.inf, -math.inf])),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=8, deadline=None)
@given(configs=st.lists(st.dictionaries(TEXT, NONFINITE_VALUES, max_size=5), max_size=20))
def test_config_form_with_non_finite_floats_matches_python(configs: list[Any]) -> None:
    assert node_config_forms(configs) == [canonical_config(c) for c in configs]


@given(values=st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=60))
def test_float_repr_matches_python(harness: Harness, values: list[float]) -> None:
    got = harness.run("line_hash", prev="0" * 64, body={"x": values})
    assert got["canonical"] == canonical_line({"x": values})


def _schema_vectors() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for path in sorted((SPEC / "vectors").rglob("*.json")):
        if path.parent.name == "canonical":
            continue
        for group in json.loads(path.read_text("utf-8")):
            for test in group["tests"]:
                out.append((path.stem, group["schema"], test))
    return out


def test_every_schema_vector_agrees_with_the_oracle(harness: Harness) -> None:
    vectors = _schema_vectors()
    assert len(vectors) > 100
    disagreements = []
    for name, schema_id, test in vectors:
        got = harness.run("validate", schema=schema_id, instance=test["data"])
        oracle = {p.rule for p in schemas.problems(test["data"], schema_id)}
        if got["valid"] != test["valid"] or set(got["rules"]) != oracle:
            disagreements.append((name, test["description"], got["rules"], sorted(oracle)))
        elif not test["valid"]:
            assert test["rule"] in got["rules"]
    assert disagreements == []


def test_schema_parts_agree_with_the_oracle(harness: Harness) -> None:
    """validate against `<$id>#<pointer>` (a report kind's oneOf branch), as the suite asks."""
    oracle = pytest.importorskip("trainrecord_conformance.oracle")
    report_id = "https://trainrecord.dev/schemas/reporting/reporting.schema.json"
    branch = {"training": 0, "lesion": 1, "wordset": 2}
    checked = 0
    for name, schema_id, test in _schema_vectors():
        data = test["data"]
        if schema_id != report_id or not isinstance(data, dict) or data.get("kind") not in branch:
            continue
        pointer = f"{report_id}#/oneOf/{branch[data['kind']]}"
        got = harness.run("validate", schema=pointer, instance=data)
        want = {p.rule for p in oracle.schema_problems(data, pointer)}
        assert (got["valid"], set(got["rules"])) == (not want, want), (name, test["description"])
        checked += 1
    assert checked > 100


@pytest.mark.parametrize(
    "body",
    [
        {"\ue000": 1, "🔥": 2, "z": 3},  # code point order differs from UTF-16 code unit order
        {"s": "\x7f\x1f\u2028\ud83d"},  # DEL is escaped; a lone high surrogate stays as is
        {"__proto__": {"a": 1}, "constructor": 2},
        {"x": [1.0, -0.0, 1e22, 1e-7, 123456789.0, 0.5, 2**64, -(2**63)]},
    ],
    ids=["key-order", "escapes", "proto-key", "numbers"],
)
def test_known_pitfalls(harness: Harness, body: dict[str, Any]) -> None:
    line = harness.run("line_hash", prev="0" * 64, body=body)
    assert line["canonical"] == canonical_line(body)
    assert harness.run("config_hash", config=body)["canonical"] == canonical_config(body)
