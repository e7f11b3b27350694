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
