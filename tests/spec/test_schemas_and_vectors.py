"""The spec is sound: schemas against the metaschema, vector files against their schema,
the oracle against every vector (with the rule id), and the generated models against the
oracle on every vector (the differential test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from pydantic import ValidationError

import trainrecord_spec
from tests.conftest import SPEC
from trainrecord.schemas import all_schemas, problems, schema_by_id

SCHEMA_FILES = sorted((SPEC / "schemas").rglob("*.schema.json"))
META_FILES = sorted((SPEC / "meta").glob("*.schema.json"))
VECTOR_FILES = sorted(p for p in (SPEC / "vectors").rglob("*.json") if p.parent.name != "canonical")
_DIARY_LINE_IF_THEN = (
    "DiaryLine selects the event schema with if/then, which datamodel-code-generator drops: "
    "the generated DiaryLine model checks only the common fields. Use DiaryKnownLine (a "
    "discriminated union of the 19 event models) or the event's own model for known events."
)
KNOWN_MODEL_DIFFERENCES: dict[tuple[str, str], str] = {
    ("vectors/diary/line.json", d): _DIARY_LINE_IF_THEN
    for d in (
        "DiaryLine checks a known event against its schema: an alarm without grad_norm is refused",
        "DiaryLine checks fixed values of known events: an alarm with severity info is refused",
        "DiaryLine checks record_version of run_start: 2 is refused",
    )
}
KNOWN_MODEL_DIFFERENCES.update(
    {
        (
            "vectors/diary/events.json",
            f"{d} alarm with a null baseline is refused: only no_gradient has no baseline",
        ): (
            "alarm.schema.json allows baseline null only for diagnosis no_gradient with "
            "if/then, which datamodel-code-generator drops: DiaryAlarm takes a null baseline "
            "for any diagnosis. The runtime confirms a line the model accepts with the oracle "
            "when its schema holds an if (trainrecord.diary.events.fast_validators)."
        )
        for d in ("a vanishing", "an exploding")
    }
)
KNOWN_MODEL_DIFFERENCES.update(
    {
        (
            "vectors/diary/events.json",
            f"{d} alarm with a null grad_norm is refused: only no_gradient is written for a "
            "layer without a gradient",
        ): (
            "alarm.schema.json allows grad_norm null only for diagnosis no_gradient with "
            "if/then (diary.alarm.grad_norm.null), which datamodel-code-generator drops: "
            "DiaryAlarm takes a null grad_norm for any diagnosis. The runtime confirms a line "
            "the model accepts with the oracle (trainrecord.diary.events.fast_validators)."
        )
        for d in ("a vanishing", "an exploding")
    }
)
"""(vector file, case description) -> why the models may disagree with the oracle there."""


def _load(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", SCHEMA_FILES + META_FILES, ids=lambda p: p.name)
def test_schema_is_valid_against_the_2020_12_metaschema(path: Path) -> None:
    schema = _load(path)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].startswith("https://trainrecord.dev/")
    assert schema.get("title") and schema.get("description")


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: p.name)
def test_every_property_has_a_description(path: Path) -> None:
    missing: list[str] = []

    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            for name, sub in (node.get("properties") or {}).items():
                if isinstance(sub, dict) and not sub.get("description") and "$ref" not in sub:
                    missing.append(f"{where}/properties/{name}")
            for key, sub in node.items():
                walk(sub, f"{where}/{key}")
        elif isinstance(node, list):
            for i, sub in enumerate(node):
                walk(sub, f"{where}/{i}")

    walk(_load(path), "#")
    assert not missing, f"properties without a description: {missing}"


def test_schema_ids_are_unique() -> None:
    ids = [_load(p)["$id"] for p in SCHEMA_FILES]
    assert len(ids) == len(set(ids))


def test_shipped_schemas_are_the_spec_schemas() -> None:
    shipped = all_schemas()
    assert sorted(shipped) == sorted(
        p.relative_to(SPEC / "schemas").as_posix() for p in SCHEMA_FILES
    )


@pytest.mark.parametrize("path", VECTOR_FILES, ids=lambda p: p.relative_to(SPEC).as_posix())
def test_vector_file_follows_the_vector_file_schema(path: Path) -> None:
    meta = _load(SPEC / "meta" / "vectors.schema.json")
    errors = list(Draft202012Validator(meta).iter_errors(_load(path)))
    assert not errors, [e.message for e in errors]


def _cases() -> list[tuple[str, str, dict]]:
    out = []
    for path in VECTOR_FILES:
        for group in _load(path):
            for case in group["tests"]:
                out.append((path.relative_to(SPEC).as_posix(), group["schema"], case))
    return out


CASES = _cases()


@pytest.mark.parametrize(
    ("file", "schema_id", "case"), CASES, ids=[f"{f}:{c['description']}" for f, _, c in CASES]
)
def test_oracle_agrees_with_vector(file: str, schema_id: str, case: dict) -> None:
    found = problems(case["data"], schema_id)
    if case["valid"]:
        assert found == [], [str(p) for p in found]
    else:
        assert found, "an invalid vector was accepted"
        assert case["rule"] in {p.rule for p in found}, (
            f"expected rule {case['rule']}, oracle reported {[str(p) for p in found]}"
        )


@pytest.mark.parametrize(
    ("file", "schema_id", "case"), CASES, ids=[f"{f}:{c['description']}" for f, _, c in CASES]
)
def test_models_agree_with_oracle(file: str, schema_id: str, case: dict) -> None:
    if (file, case["description"]) in KNOWN_MODEL_DIFFERENCES:
        pytest.skip(KNOWN_MODEL_DIFFERENCES[(file, case["description"])])
    schema_by_id(schema_id)  # the vector names a real schema
    if schema_id not in trainrecord_spec.MODELS:
        pytest.skip(f"no generated model for {schema_id}")
    text = json.dumps(case["data"])
    try:
        trainrecord_spec.adapter(schema_id).validate_json(text)
        accepted = True
    except ValidationError:
        accepted = False
    assert accepted == case["valid"], f"models {'accepted' if accepted else 'refused'} {text}"
