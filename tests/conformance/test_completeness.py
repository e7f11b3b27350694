"""The suite covers the registry: every rule has a check, or a stated reason it cannot.

The registry (spec/rules/*.json) is the list. A rule with neither a check nor an entry in
NOT_COVERED fails here; an entry in NOT_COVERED is an expected failure whose reason is
printed in the report (-rx), never a pass.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import SPEC
from trainrecord_conformance import strategies
from trainrecord_conformance.checks import all_checks
from trainrecord_conformance.checks.schema import HAND_BROKEN
from trainrecord_conformance.coverage import NOT_COVERED
from trainrecord_conformance.registry import rules


def _registry() -> dict[str, dict]:
    out = {}
    for path in sorted((SPEC / "rules").glob("*.json")):
        for rule in json.loads(path.read_text(encoding="utf-8"))["rules"]:
            out[rule["id"]] = rule
    return out


REGISTRY = _registry()


def test_the_shipped_registry_is_the_spec_registry() -> None:
    assert sorted(rules()) == sorted(REGISTRY), "run make generate"


@pytest.mark.parametrize("rule", sorted(REGISTRY))
def test_every_rule_has_a_strategy_and_a_check(rule: str) -> None:
    checks = all_checks().get(rule, ())
    if not checks:
        if rule in NOT_COVERED:
            pytest.xfail(f"not covered: {NOT_COVERED[rule]}")
        pytest.fail(f"{rule} has no check and no reason in coverage.NOT_COVERED")
    for check in checks:
        assert callable(check.strategy) and callable(check.body)
        assert check.ops, f"{check.name} names no operation"


def test_every_schema_rule_can_be_broken() -> None:
    """Each rule the schemas express (x-rules) has a site the strategies can break (or a
    hand-written breaking strategy, checks.schema.HAND_BROKEN)."""
    expressed = {r for r, v in REGISTRY.items() if v.get("schema", True) and v["kind"] == "refusal"}
    hand = set(HAND_BROKEN)
    missing = sorted(expressed - strategies.schema_rules() - hand - set(NOT_COVERED))
    assert not missing, f"schema rules without a breaking strategy: {missing}"


def test_not_covered_lists_only_uncovered_registry_rules() -> None:
    stale = sorted(r for r in NOT_COVERED if r not in REGISTRY or r in all_checks())
    assert not stale, f"NOT_COVERED entries that are unknown or have a check now: {stale}"


def test_every_check_names_a_registered_rule() -> None:
    unknown = sorted(set(all_checks()) - set(REGISTRY))
    assert not unknown, f"checks for rules missing from spec/rules: {unknown}"


def test_strategies_declare_their_api() -> None:
    assert set(strategies.__all__) <= set(dir(strategies))
    assert "valid_instances" in strategies.__all__ and "breaking_instances" in strategies.__all__
