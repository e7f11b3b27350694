"""The canonical-JSON vectors hold for this runtime, byte for byte."""

from __future__ import annotations

import json
import math

import pytest
from jsonschema import Draft202012Validator

from tests.conftest import SPEC
from trainrecord.canonical import canonical_config, canonical_line, config_sha, line_hash
from trainrecord_conformance.checks.canonical import vector_input

FILES = sorted((SPEC / "vectors" / "canonical").glob("*.json"))


def _doc(name: str) -> dict:
    return json.loads((SPEC / "vectors" / "canonical" / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_canonical_vector_files_follow_their_schema(path) -> None:
    meta = json.loads((SPEC / "meta" / "canonical-vectors.schema.json").read_text())
    Draft202012Validator(meta).validate(json.loads(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("case", _doc("line-hash.json")["cases"], ids=lambda c: c["description"])
def test_line_hash_vector(case: dict) -> None:
    assert canonical_line(case["input"]) == case["canonical"]
    assert line_hash(case["prev"], case["input"]) == case["sha256"]


@pytest.mark.parametrize("case", _doc("config-hash.json")["cases"], ids=lambda c: c["description"])
def test_config_hash_vector(case: dict) -> None:
    config = vector_input(case)  # NaN and infinities put where "nonfinite" says
    assert canonical_config(config) == case["canonical"] == json.dumps(config, sort_keys=True)
    assert config_sha(config) == case["sha256"][:16]


def test_seed_config_example() -> None:
    assert config_sha({"lr": 0.001, "epochs": 2}) == "da1dca8eecbe78ba"


def test_config_hash_writes_nan_and_infinity_as_json_dumps_does() -> None:
    """The seed hashes json.dumps(config, sort_keys=True) with its defaults: NaN, Infinity
    and -Infinity are written as those tokens and hashed, not refused."""
    config = {"lr": math.nan, "epochs": 2}
    assert canonical_config(config) == json.dumps(config, sort_keys=True)
    assert canonical_config(config) == '{"epochs": 2, "lr": NaN}'
    assert config_sha(config) == "ac1bcb6a3c667693"
    other = {"xs": [math.nan, 1.0], "floor": -math.inf, "clip": math.inf}
    assert canonical_config(other) == '{"clip": Infinity, "floor": -Infinity, "xs": [NaN, 1.0]}'


def test_the_config_vectors_pin_a_nan_configuration() -> None:
    cases = [c for c in _doc("config-hash.json")["cases"] if c.get("nonfinite")]
    assert any("NaN" in c["canonical"] for c in cases)
    assert any("-Infinity" in c["canonical"] for c in cases)
    nan = next(c for c in cases if c["canonical"] == '{"epochs": 2, "lr": NaN}')
    assert math.isnan(vector_input(nan)["lr"]) and nan["sha256"][:16] == "ac1bcb6a3c667693"
    # the vector file itself stays strict JSON: the floats are held as text
    assert json.loads(
        (SPEC / "vectors" / "canonical" / "config-hash.json").read_text(encoding="utf-8"),
        parse_constant=lambda token: pytest.fail(f"non-finite token {token} in a vector file"),
    )


def test_line_vectors_hold_no_non_finite_number() -> None:
    """The diary line form refuses NaN (strict JSON lines): no line case may carry one."""
    assert not any(c.get("nonfinite") for c in _doc("line-hash.json")["cases"])
