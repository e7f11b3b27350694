"""The canonical-JSON vectors hold for this runtime, byte for byte."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from tests.conftest import SPEC
from trainrecord.canonical import canonical_config, canonical_line, config_sha, line_hash

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
    assert canonical_config(case["input"]) == case["canonical"]
    assert config_sha(case["input"]) == case["sha256"][:16]


def test_seed_config_example() -> None:
    assert config_sha({"lr": 0.001, "epochs": 2}) == "da1dca8eecbe78ba"
