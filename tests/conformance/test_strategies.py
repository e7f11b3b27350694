"""The strategies agree with the oracle: valid draws are valid, breaking draws break
exactly their rule, and a strategy that drifts from the spec is caught."""

from __future__ import annotations

import math

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from trainrecord.schemas import problems
from trainrecord_conformance import schemagen
from trainrecord_conformance import strategies as S

WITNESS = "https://trainrecord.dev/schemas/foundry/witness.schema.json"
SAMPLE_RULES = [
    "witness.attempt.type",
    "metrics.horizon.negative",
    "metrics.value.type",
    "metrics.row.extra",
    "witness.captured_at.format",
    "diary.alarm.severity.fixed",
    "report.config.batch_size.range",
    "report.progress.words_done.negative",
]


@pytest.mark.parametrize("schema_id", sorted(schemagen.documents()))
@settings(max_examples=5)
@given(data=st.data())
def test_valid_instances_are_valid(schema_id: str, data: st.DataObject) -> None:
    instance = data.draw(S.valid_instances(schema_id))
    assert problems(instance, schema_id) == []


@pytest.mark.parametrize("rule", SAMPLE_RULES)
@settings(max_examples=10)
@given(data=st.data())
def test_breaking_instances_break_exactly_their_rule(rule: str, data: st.DataObject) -> None:
    broken = data.draw(S.breaking_instances(rule))
    assert rule in {p.rule for p in problems(broken.instance, broken.schema_id)}


@given(S.breaking_instances("metrics.value.type", nonfinite=True))
@settings(max_examples=30)
def test_in_process_draws_include_non_finite_numbers(broken: S.Broken) -> None:
    assert S.oracle_rules(broken.instance, broken.schema_id) == {"metrics.value.type"}


def test_a_drifting_strategy_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """If the engine produced an invalid 'valid' witness, the draw raises StrategyDrift."""
    S.valid_instances.cache_clear()
    original = schemagen.gen
    monkeypatch.setattr(
        schemagen,
        "gen",
        lambda raws, *a, **k: original(raws, *a, **k).map(
            lambda w: {**w, "attempt": -1} if isinstance(w, dict) else w
        ),
    )

    @given(S.valid_instances(WITNESS))
    @settings(max_examples=3, database=None)
    def draw(_: object) -> None:
        pass

    with pytest.raises(S.StrategyDrift):
        draw()
    S.valid_instances.cache_clear()


def test_unknown_rules_have_no_breaking_strategy() -> None:
    with pytest.raises(KeyError):
        S.breaking_instances("no.such.rule")


def _has_nonfinite(value: object) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_nonfinite(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_nonfinite(v) for v in value)
    return False


def test_config_hash_is_fuzzed_with_non_finite_floats_in_process_only() -> None:
    """json.dumps writes NaN and Infinity into the configuration form: the in-process target
    gets configurations holding them; an exec target (strict JSON) never does."""
    from trainrecord_conformance.checks.canonical import config_cases
    from trainrecord_conformance.targets import PythonTarget

    with PythonTarget() as target:
        case = find(config_cases(target), lambda c: _has_nonfinite(c["input"]))
    assert "NaN" in case["canonical"] or "Infinity" in case["canonical"]

    class Exec:
        nonfinite = False

    @given(config_cases(Exec()))  # type: ignore[arg-type]
    @settings(max_examples=60, database=None)
    def finite_only(case: dict) -> None:
        assert not _has_nonfinite(case["input"])

    finite_only()


def test_s_configs_can_hold_non_finite_floats() -> None:
    found = find(S.configs(nonfinite=True), _has_nonfinite)
    assert _has_nonfinite(found)
