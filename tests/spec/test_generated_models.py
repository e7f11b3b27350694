"""The generated models in use: what their base's docstring promises holds for every valid
vector that has a model."""

from __future__ import annotations

import json

import pytest

import trainrecord_spec
import trainrecord_spec._base
from tests.spec.test_schemas_and_vectors import CASES

VALID = [
    (file, schema_id, case)
    for file, schema_id, case in CASES
    if case["valid"] and schema_id in trainrecord_spec.MODELS
]
IDS = [f"{f}:{c['description']}" for f, _, c in VALID]


def test_there_are_valid_vectors_with_models() -> None:
    assert len(VALID) > 20


@pytest.mark.parametrize(("file", "schema_id", "case"), VALID, ids=IDS)
def test_a_parsed_dict_validates_as_its_json_text_does(
    file: str, schema_id: str, case: dict
) -> None:
    adapter = trainrecord_spec.adapter(schema_id)
    from_text = adapter.validate_json(json.dumps(case["data"]))
    from_dict = adapter.validate_python(json.loads(json.dumps(case["data"])))
    assert from_dict == from_text


def test_the_base_does_not_warn_against_validating_a_parsed_dict() -> None:
    # An API probe: the docstring said "never validate a parsed dict of a record with
    # date-time fields", but no model has a datetime field and parsed dicts validate
    doc = trainrecord_spec._base.__doc__ or ""
    assert "never validate a parsed dict" not in doc
    assert "model_validate(data)" in doc


def _dumped(schema_id: str, text: str) -> str:
    """``text`` validated by the model of ``schema_id`` and dumped back as JSON text."""
    from pydantic import BaseModel

    value = trainrecord_spec.adapter(schema_id).validate_json(text)
    if isinstance(value, BaseModel):  # a model, or a union's member
        return value.model_dump_json()
    return trainrecord_spec.adapter(schema_id).dump_json(value).decode("utf-8")


@pytest.mark.parametrize(("file", "schema_id", "case"), VALID, ids=IDS)
def test_a_valid_record_round_trips_through_its_model(
    file: str, schema_id: str, case: dict
) -> None:
    # An API probe: model_dump_json() of a Reporting model wrote "schema_" (the Python name
    # of the field aliased "schema"), which the schema refuses
    from trainrecord.schemas import problems

    dumped = json.loads(_dumped(schema_id, json.dumps(case["data"])))
    assert [str(p) for p in problems(dumped, schema_id)] == []
    assert dumped == case["data"]


def test_an_assignment_of_a_wrong_type_is_refused() -> None:
    # An API probe: m.horizon = "oops" was accepted, and the model then dumped invalid JSON
    from pydantic import ValidationError

    from trainrecord_spec.models.foundry.metrics_schema import FoundryMetricsRow

    row = FoundryMetricsRow.model_validate_json(
        '{"benchmark": "b", "metric": "m", "horizon": 1, "seed": 0, "value": 0.5}'
    )
    with pytest.raises(ValidationError):
        row.horizon = "oops"  # type: ignore[assignment]
    with pytest.raises(ValidationError):
        row.value = float("nan")
    assert row.horizon == 1 and row.value == 0.5
    row.horizon = 2
    assert row.horizon == 2
