"""A partial implementation (docs/harness-guide.md, "A Foundry-only harness") against the
suite: what it must answer, and how the suite reports its answers. ``error`` is the
implementation's failure, reported as ERROR and never as a rule failure; ``unsupported``
from ``validate`` for a schema it does not implement skips those examples (never passed).
The harness is tests/conformance/foundry_only_harness.py, with one fault per test."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from trainrecord_conformance.runner import run_rules, select
from trainrecord_conformance.targets import ExecTarget

pytestmark = pytest.mark.slow
HARNESS = Path(__file__).with_name("foundry_only_harness.py")
FOUNDRY_RULES = ["witness.*", "metrics.*", "canonical.config", "harness.*"]
"""The guide's selection for a Foundry-only harness."""


def command(fault: str = "") -> str:
    return f"env FOUNDRY_FAULT={fault} {shlex.quote(sys.executable)} {shlex.quote(str(HARNESS))}"


def outcomes(fault: str, rules: list[str], examples: int | None = 3) -> dict[str, object]:
    with ExecTarget(command(fault), name=f"foundry-only:{fault}", timeout=60) as target:
        found = run_rules(target, rules, profile="ci", examples=examples, shrink=False)
    return {o.rule: o for o in found}


def test_an_error_answer_is_an_error_not_a_rule_failure() -> None:
    """Before: 'FAIL metrics.type ... write_metrics on a valid input gave error: ...'."""
    found = outcomes("crash_metrics", ["metrics.type", "metrics.row.extra"])
    for rule, outcome in found.items():
        assert outcome.status == "error", (rule, outcome.to_json())
        [check] = [c for c in outcome.checks if c.status == "error"]
        assert "write_metrics answered error" in check.message, check.message
        assert "disk on fire" in check.message


def test_validate_unsupported_for_another_format_is_skipped() -> None:
    """A schema the harness does not implement: those rules are skipped, not errors; the
    Foundry schema rules still run through validate and pass."""
    found = outcomes("", ["diary.seq.type", "metrics.horizon.type"])
    diary = found["diary.seq.type"]
    assert diary.status == "skipped", diary.to_json()
    assert "does not validate" in diary.checks[0].message
    metrics = found["metrics.horizon.type"]
    assert metrics.status == "pass", metrics.to_json()
    assert all(c.status == "pass" for c in metrics.checks), metrics.to_json()


def test_validate_error_for_another_format_is_an_error() -> None:
    found = outcomes("validate_error", ["diary.seq.type"])
    assert found["diary.seq.type"].status == "error"


def test_a_schema_answered_both_ways_is_an_error() -> None:
    found = outcomes("validate_flip", ["metrics.horizon.type"])
    outcome = found["metrics.horizon.type"]
    assert outcome.status == "error", outcome.to_json()
    assert any("same way every time" in c.message for c in outcome.checks)


def test_the_guides_foundry_selection_passes_a_foundry_only_harness() -> None:
    """The recipe of the guide: every selected rule passes, or is skipped for an operation
    a Foundry-only harness cannot have (@nonfinite: Python values JSON cannot carry)."""
    rules = select(FOUNDRY_RULES)
    found = outcomes("", rules, examples=None)
    bad = {r: o.status for r, o in found.items() if o.status not in ("pass", "skipped")}
    assert not bad, bad
    skipped = {r for r, o in found.items() if o.status == "skipped"}
    # the protocol's own schema rules go through validate of the harness schemas, which a
    # Foundry-only harness answers unsupported (the suite checks every response anyway)
    assert all(r.startswith("harness.") for r in skipped - {"witness.config.serializable"})
    passed = {r for r, o in found.items() if o.status == "pass"}
    assert {"harness.run.seq.echo", "harness.run.unsupported", "harness.stop.exit"} <= passed
    assert {r for r in rules if r.startswith(("witness.", "metrics."))} - skipped <= passed
