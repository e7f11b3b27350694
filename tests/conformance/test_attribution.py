"""Every failure names the rule it breaks and what was found, under that rule: a writer
that corrupts one field of the witness fails the rule of that field, not the checks of
other rules that merely needed a witness on disk; what a refused call leaves behind is
the refusal rule's failure (nothing_on_refusal), not the schema rule whose input was
refused; a file the implementation left that is not JSON is a FAIL naming the rule and
what is there, never a crash of the check. Faulty implementations: conformance/mutants/."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import ROOT
from trainrecord_conformance.runner import RuleOutcome, run_rules
from trainrecord_conformance.targets import ExecTarget

pytestmark = pytest.mark.slow
NEEDS_A_WITNESS = [
    "witness.path.exists",
    "witness.write.atomic_no_overwrite",
    "witness.device.cpu_nulls",
]
"""Rules whose checks write a witness only to test something else about it."""


def run(mutant: str, rules: list[str]) -> dict[str, RuleOutcome]:
    path = ROOT / "conformance" / "mutants" / f"{mutant}.py"
    with ExecTarget(f"{sys.executable} {path}", name=mutant, timeout=60) as target:
        found = run_rules(target, rules, profile="ci", shrink=False)
    return {o.rule: o for o in found}


def messages(outcome: RuleOutcome) -> str:
    return "\n".join(c.message for c in outcome.checks if c.status in ("fail", "error"))


@pytest.mark.parametrize(
    ("mutant", "rule", "named"),
    [
        ("witness_drops_field_on_resume", "witness.fields.missing", "'cpu_threads'"),
        ("witness_config_sha_compact", "canonical.config", "config_sha"),
        ("witness_attempt_not_carried", "witness.attempt.filename", "attempt: 0"),
        ("witness_run_id_unsigned", "witness.write.fields", "experiment_id: 5"),
    ],
)
def test_a_corrupt_witness_field_fails_its_own_rule_only(
    mutant: str, rule: str, named: str
) -> None:
    """Before: each failed witness.path.exists, .write.atomic_no_overwrite and
    .device.cpu_nulls (whose logic is right), with a message naming no rule or no field."""
    found = run(mutant, [rule, *NEEDS_A_WITNESS])
    assert found[rule].status == "fail", found[rule].to_json()
    text = messages(found[rule])
    assert f"[{rule}]" in text and named in text, text
    assert "observed.attempt" in text, text
    for other in NEEDS_A_WITNESS:
        assert found[other].status == "pass", found[other].to_json()


def test_a_refusal_that_leaves_a_folder_fails_nothing_on_refusal_not_the_schema_rule() -> None:
    """Before: 14 schema rules failed ("refused rows left ['.'] behind") and
    metrics.write.nothing_on_refusal, the rule broken, passed."""
    schema_rules = ["metrics.type", "metrics.row.extra", "metrics.horizon.type"]
    found = run("metrics_mkdir_first", [*schema_rules, "metrics.write.nothing_on_refusal"])
    for rule in schema_rules:
        assert found[rule].status == "pass", found[rule].to_json()
    outcome = found["metrics.write.nothing_on_refusal"]
    assert outcome.status == "fail", outcome.to_json()
    text = messages(outcome)
    assert "[metrics.write.nothing_on_refusal]" in text, text
    assert "created the results folder" in text and "metrics." in text, text


def test_a_file_that_is_not_json_is_a_failure_of_the_rule_not_a_crash() -> None:
    """Before: ERROR metrics.write.atomic_replace, "the check crashed: ... JSONDecodeError"."""
    found = run("metrics_rewrites_in_place", ["metrics.write.atomic_replace", "metrics.write.rows"])
    outcome = found["metrics.write.atomic_replace"]
    assert outcome.status == "fail", outcome.to_json()
    text = messages(outcome)
    assert text.startswith("[metrics.write.atomic_replace] metrics.json after the rewrite"), text
    assert "is not one strict JSON document: extra data at char" in text, text
    assert "Traceback" not in text
    assert found["metrics.write.rows"].status == "pass"


def test_a_suite_crash_says_it_is_the_suites() -> None:
    """A check that crashes on its own (not on the implementation's answer) says so."""
    from trainrecord_conformance.checks.base import Check, Context
    from trainrecord_conformance.runner import run_check
    from trainrecord_conformance.targets import make_target

    def body(ctx: Context, value: int) -> None:
        raise KeyError("oops")

    from hypothesis import strategies as st

    check = Check("x.y", "crashes", frozenset(), lambda t: st.just(1), body)
    with make_target("python") as target:
        ctx = Context(target)
        try:
            outcome = run_check(check, ctx, 1, True)
        finally:
            ctx.close()
    assert outcome.status == "error"
    assert outcome.message.startswith("the suite's own check crashed"), outcome.message


def test_a_schema_counterexample_is_json_to_paste_with_its_schema_and_site() -> None:
    """Before: 'counterexample (shrunk): [..., "Broken(schema_id=..., instance={'attempt':
    3.0, ... None ...}, site=...' (a Python repr, cut at 600 characters)."""
    import json

    from trainrecord.schemas import problems
    from trainrecord_conformance.report import summary, to_json

    path = ROOT / "conformance" / "mutants" / "validate_float_integers.py"
    with ExecTarget(f"{sys.executable} {path}", name="float", timeout=60) as target:
        found = run_rules(target, ["witness.attempt.type"], profile="ci")
    text = summary(found, "float", {})
    lines = {k.strip(): v for k, _, v in (x.partition(": ") for x in text.splitlines())}
    assert lines["schema"] == "https://trainrecord.dev/schemas/foundry/witness.schema.json"
    assert lines["site"].startswith("foundry/witness.schema.json#/attempt")
    instance = json.loads(lines["instance"])  # strict JSON, whole
    assert instance["attempt"] == 3.0 and isinstance(instance["attempt"], float)
    assert instance["device_name"] is None and "None" not in lines["instance"]
    valid = json.loads(lines["valid instance"])  # the check's valid twin, whole, valid
    assert type(valid["attempt"]) is int and not problems(valid, lines["schema"])
    [check] = json.loads(to_json(found, "float", {}))["rules"][0]["checks"][:1]
    assert check["counterexample"][1]["instance"] == instance
    assert check["counterexample"][1]["schema"] == lines["schema"]


def test_a_long_or_nonfinite_counterexample_says_so() -> None:
    from trainrecord_conformance.report import as_json

    text = as_json({"a": "x" * 5000}, limit=100)
    assert text.startswith('{"a": "xxx') and "(cut at 100 of 5009 characters" in text
    assert "--json has it whole" in text
    assert as_json([float("nan")]).startswith("[NaN] (holds NaN or Infinity: not strict JSON")
    assert as_json({"v": 1.0, "s": "\u00e9"}) == '{"v": 1.0, "s": "\u00e9"}'
