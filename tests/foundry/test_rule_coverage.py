"""Every Foundry rule is tested: schema rules by the spec vectors (run through the oracle,
the models and ``trainrecord validate``), the others by a test here that names them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import SPEC

HERE = Path(__file__).resolve().parent


def _rules() -> list[dict]:
    return json.loads((SPEC / "rules" / "foundry.json").read_text(encoding="utf-8"))["rules"]


def test_every_schema_rule_has_an_invalid_foundry_vector() -> None:
    broken = set()
    for path in (SPEC / "vectors" / "foundry").glob("*.json"):
        for group in json.loads(path.read_text(encoding="utf-8")):
            broken |= {case["rule"] for case in group["tests"] if not case["valid"]}
    lacking = [r["id"] for r in _rules() if r.get("schema", True) and r["id"] not in broken]
    assert not lacking, lacking


def test_every_other_rule_is_named_by_a_test() -> None:
    sources = "".join(
        p.read_text(encoding="utf-8")
        for p in HERE.glob("test_*.py")
        if p.name != Path(__file__).name
    )
    lacking = [r["id"] for r in _rules() if not r.get("schema", True) and r["id"] not in sources]
    assert not lacking, lacking


def test_rule_ids_belong_to_the_foundry_files() -> None:
    assert all(r["id"].split(".")[0] in ("witness", "metrics") for r in _rules())
