"""The rule registry is complete and consistent with the schemas and the vectors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.conftest import SPEC

RULE_FILES = sorted((SPEC / "rules").glob("*.json"))


def _load(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))


def registry() -> dict[str, dict]:
    out: dict[str, dict] = {}
    for path in RULE_FILES:
        for rule in _load(path)["rules"]:
            assert rule["id"] not in out, f"duplicate rule id {rule['id']}"
            out[rule["id"]] = rule
    return out


def _x_rules(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        rules = node.get("x-rules")
        if isinstance(rules, dict):
            yield from rules.values()
        for sub in node.values():
            yield from _x_rules(sub)
    elif isinstance(node, list):
        for sub in node:
            yield from _x_rules(sub)


def _vector_rules() -> set[str]:
    out = set()
    for path in (SPEC / "vectors").rglob("*.json"):
        if path.parent.name == "canonical":
            continue
        for group in _load(path):
            out.update(c["rule"] for c in group["tests"] if not c["valid"])
    return out


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.name)
def test_rule_file_follows_its_schema(path: Path) -> None:
    meta = _load(SPEC / "meta" / "rules.schema.json")
    errors = list(Draft202012Validator(meta).iter_errors(_load(path)))
    assert not errors, [e.message for e in errors]


def test_every_schema_rule_is_registered() -> None:
    known = registry()
    missing = sorted(
        {
            r
            for p in (SPEC / "schemas").rglob("*.schema.json")
            for r in _x_rules(_load(p))
            if r not in known
        }
    )
    assert not missing, f"x-rules ids missing from spec/rules: {missing}"


def test_every_vector_rule_is_registered() -> None:
    missing = sorted(_vector_rules() - set(registry()))
    assert not missing, f"vector rules missing from spec/rules: {missing}"


def test_every_schema_refusal_has_an_invalid_vector() -> None:
    covered = _vector_rules()
    lacking = sorted(
        r
        for r, rule in registry().items()
        if rule["kind"] == "refusal" and rule.get("schema", True) and r not in covered
    )
    assert not lacking, f"refusal rules without an invalid vector: {lacking}"
