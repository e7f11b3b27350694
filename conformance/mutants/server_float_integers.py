"""Mutant: a reporting receiver that validates with plain JSON Schema integers (stock
jsonschema: 3.0 counts as an integer), so a report with ``"seq": 3.0`` is stored."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant
from jsonschema import Draft202012Validator

from trainrecord import schemas
from trainrecord.report import receiver
from trainrecord.report.payload import REPORT_SCHEMA_ID, problems
from trainrecord_conformance.operations import serve

BREAKS = "report.server.invalid"


def stock(report: Any) -> list[Any]:
    """No problem when the stock Draft 2020-12 validator accepts the report."""
    schema = schemas.schema_by_id(REPORT_SCHEMA_ID)
    if not list(Draft202012Validator(schema, registry=schemas.registry()).iter_errors(report)):
        return []
    return problems(report)


def lenient(data: dict[str, Any]) -> dict[str, Any]:
    """The reference receiver, judging reports with the stock validator."""
    receiver.problems = stock
    return serve(data)


if __name__ == "__main__":
    run_mutant("server_float_integers", {"serve": lenient})
