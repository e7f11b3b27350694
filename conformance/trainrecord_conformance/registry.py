"""The rule registry (``spec/rules/*.json``, shipped in ``trainrecord_spec``).

The registry is the list the suite works from: every rule in it must have a strategy and a
check, or an entry in :data:`trainrecord_conformance.coverage.NOT_COVERED` saying why the
suite cannot test it through an implementation's interface. The completeness test
(``tests/conformance``) enforces that.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources


@dataclass(frozen=True)
class Rule:
    """One rule: id, format, statement, seed section, refusal or guarantee."""

    id: str
    format: str
    statement: str
    section: str
    kind: str
    schema: bool


@cache
def rules() -> dict[str, Rule]:
    """Every rule of the registry, by id, in file order."""
    out: dict[str, Rule] = {}
    folder = resources.files("trainrecord_spec").joinpath("rules")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".json"):
            continue
        data = json.loads(entry.read_text(encoding="utf-8"))
        for rule in data["rules"]:
            out[rule["id"]] = Rule(
                rule["id"],
                data["format"],
                rule["statement"],
                rule["section"],
                rule["kind"],
                rule.get("schema", True),
            )
    return out
