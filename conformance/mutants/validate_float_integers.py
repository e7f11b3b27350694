"""Mutant: a validator with plain JSON Schema integers (3.0 counts as an integer)."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant
from jsonschema import Draft202012Validator

from trainrecord import schemas
from trainrecord_conformance.operations import validate

BREAKS = "witness.attempt.type"


def plain(data: dict[str, Any]) -> dict[str, Any]:
    """Validate with the stock Draft 2020-12 type checker."""
    if data["schema"] != "https://trainrecord.dev/schemas/foundry/witness.schema.json":
        return validate(data)
    stock = Draft202012Validator(schemas.schema_by_id(data["schema"]), registry=schemas.registry())
    if not list(stock.iter_errors(data["instance"])):
        return {"valid": True, "rules": []}
    return validate(data)


if __name__ == "__main__":
    run_mutant("validate_float_integers", {"validate": plain})
