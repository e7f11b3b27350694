"""§8: the seed's examples, taken from the seed text itself when it is present, validate
against reporting.schema.json (oracle and generated model): both complete examples, and the
partial ones (training failed, lesion history entry) merged into a full report. The
examples in spec/vectors/reporting/examples.json are the seed's, unchanged."""

from __future__ import annotations

import copy
import json
import re

import pytest

import trainrecord_spec
from tests.conftest import SEEDS, SPEC
from trainrecord.report import REPORT_SCHEMA_ID, problems
from trainrecord.schemas import problems as oracle_problems

SEED = SEEDS / "reporting-api-v2.txt"
pytestmark = pytest.mark.skipif(not SEED.exists(), reason="seed text not present (../shared/seeds)")


def seed_examples() -> dict[str, dict]:
    """Each example of §8 by its heading, parsed from the seed text."""
    text = SEED.read_text(encoding="utf-8")
    section = text[text.index("\n8. Examples") :]
    out: dict[str, dict] = {}
    heading = None
    depth, start = 0, None
    lines = section.splitlines(keepends=True)
    pos = 0
    for line in lines:
        stripped = line.strip()
        if depth == 0 and stripped and not stripped.startswith("{") and start is None:
            heading = stripped
        for i, ch in enumerate(line):
            if ch == "{":
                if depth == 0:
                    start = pos + i
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0 and start is not None:
                    out[heading] = json.loads(section[start : pos + i + 1])
                    start = None
        pos += len(line)
    return out


def _valid(report: dict) -> None:
    assert oracle_problems(report, REPORT_SCHEMA_ID) == []
    assert problems(report) == []
    trainrecord_spec.adapter(REPORT_SCHEMA_ID).validate_json(json.dumps(report))


def test_the_seed_has_the_four_examples() -> None:
    names = list(seed_examples())
    assert len(names) == 4
    assert names[0].startswith("Training, progress") and names[1].startswith("Training, failed")
    assert names[2].startswith("Lesion, one history entry") and names[3].startswith("Word set")


def test_the_complete_examples_validate() -> None:
    ex = list(seed_examples().values())
    _valid(ex[0])
    _valid(ex[3])


def test_the_failed_example_merged_into_the_full_one_validates() -> None:
    full, failed = list(seed_examples().values())[:2]
    assert set(failed) < set(full)
    _valid({**copy.deepcopy(full), **failed})


def test_the_lesion_history_entry_in_a_full_lesion_report_validates() -> None:
    entry = list(seed_examples().values())[2]
    vectors = json.loads((SPEC / "vectors/reporting/examples.json").read_text(encoding="utf-8"))
    lesion = next(t["data"] for t in vectors[0]["tests"] if t["data"]["kind"] == "lesion")
    merged = copy.deepcopy(lesion)
    merged["history"] = [entry]
    _valid(merged)
    bad = copy.deepcopy(merged)
    del bad["history"][0]["word_selective_other"]
    assert "report.history_entry.fields.missing" in {p.rule for p in problems(bad)}


def test_the_vectors_hold_the_seed_examples_unchanged() -> None:
    ex = list(seed_examples().values())
    vectors = json.loads((SPEC / "vectors/reporting/examples.json").read_text(encoding="utf-8"))
    data = [t["data"] for t in vectors[0]["tests"]]
    assert data[0] == ex[0]
    assert data[1] == {**ex[0], **ex[1]}
    assert data[2]["history"] == [ex[2]]
    assert data[3] == ex[3]
    assert all(t["valid"] for t in vectors[0]["tests"])


def test_the_seed_field_tables_match_the_schema() -> None:
    """Every field named in §5.1's table is a property of every kind's report."""
    text = SEED.read_text(encoding="utf-8")
    table = text[text.index("5.1 Common fields") : text.index("5.2 kind")]
    names = re.findall(r"^([a-z_]+)\t", table, flags=re.MULTILINE)
    schema = trainrecord_spec.load_json("schemas", "reporting", "reporting.schema.json")
    for kind in ("training", "lesion", "wordset"):
        assert set(names) == set(schema["$defs"][f"{kind}_report"]["properties"]), kind


def _table_fields(text: str, start: str, end: str) -> set[str]:
    segment = text[text.index(start) :]
    segment = segment[: segment.index(end)]
    names: set[str] = set()
    for match in re.findall(r"^([a-z_][a-z_, ]*)\t", segment, flags=re.MULTILINE):
        names.update(n.strip() for n in match.split(","))
    names.discard("Field")
    return names


def test_the_seed_kind_tables_match_the_schema() -> None:
    """The fields of §5.2 and §5.4's tables are the properties of the schema's objects."""
    text = SEED.read_text(encoding="utf-8")
    props = {
        name: set(d.get("properties", {}))
        for name, d in trainrecord_spec.load_json("schemas", "reporting", "reporting.schema.json")[
            "$defs"
        ].items()
    }
    training_config = _table_fields(text, "config (from the run's", "\nprogress\n")
    assert training_config == props["training_config"]
    assert (
        _table_fields(text, "\nprogress\n", "initial_validation: the")
        == (props["training_progress"])
    )
    validation = _table_fields(text, "initial_validation: the validation", "history[]")
    assert validation == props["training_validation"]
    units = _table_fields(text, "Each validation also measures", "These unit fields")
    assert validation | units == props["lesion_validation"]
    assert props["lesion_epoch"] == props["training_epoch"] | units
    lesion_config = _table_fields(text, "These unit fields", "progress: as in")
    shared = training_config - {"mode", "pre_name"}
    assert lesion_config | shared == props["lesion_config"]
