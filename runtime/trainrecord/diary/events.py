"""The diary's event types and checking a line against its event schema.

The 19 event types of record_version 1 each have a schema in
``spec/schemas/diary/events/``; a line whose event is not one of them is checked against
the common fields only (the format allows new event types). Checking goes through the
JSON Schema oracle (:mod:`trainrecord.schemas`), so every problem carries its rule id.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import ValidationError

from trainrecord.errors import Problem
from trainrecord.schemas import problems

RECORD_VERSION = 1
"""The record_version this runtime writes and understands."""

EVENT_TYPES: tuple[str, ...] = (
    "run_start",
    "structure",
    "manifest",
    "alarm",
    "alarm_cleared",
    "channels",
    "channels_cleared",
    "certificate",
    "certificate_refused",
    "no_gradients",
    "loss_reduced",
    "repair",
    "loss_spike",
    "loss_recovered",
    "nonfinite_loss",
    "nonfinite_gradient",
    "skipped_step",
    "sink_error",
    "run_end",
)
"""Every event type of record_version 1, in the seed's order."""

COMMON_FIELDS: tuple[str, ...] = ("seq", "time", "event", "prev", "hash")
"""The fields every line carries; the writer adds them, callers never pass them."""

SCHEMA_BASE = "https://trainrecord.dev/schemas/diary/"
COMMON_SCHEMA = SCHEMA_BASE + "common.schema.json"
METRICS_ROW_SCHEMA = SCHEMA_BASE + "metrics-row.schema.json"
SEAL_SCHEMA = SCHEMA_BASE + "record.schema.json"


def event_schema(event: Any) -> str:
    """The ``$id`` of the schema a line of this event type is checked against."""
    if isinstance(event, str) and event in EVENT_TYPES:
        return f"{SCHEMA_BASE}events/{event}.schema.json"
    return COMMON_SCHEMA


def line_problems(line: Any) -> list[Problem]:
    """Every schema problem of one diary line (the event's schema, or the common fields)."""
    event = line.get("event") if isinstance(line, dict) else None
    return problems(line, event_schema(event))


@cache
def _adapter(schema_id: str) -> Any:
    import trainrecord_spec

    return trainrecord_spec.adapter(schema_id)


def fast_problems(instance: Any, schema_id: str) -> list[Problem]:
    """Like :func:`trainrecord.schemas.problems`, with the generated strict model first.

    The models agree with the oracle on every vector (tests/spec) and on generated lines
    (tests/diary); when the model accepts, the instance is valid. When it refuses, the
    oracle is asked, so every problem still names its rule (and the oracle decides).
    """
    try:
        _adapter(schema_id).validate_python(instance)
    except ValidationError:
        return problems(instance, schema_id)
    return []


def fast_line_problems(line: Any) -> list[Problem]:
    """:func:`line_problems` with the generated model as a fast first check."""
    event = line.get("event") if isinstance(line, dict) else None
    if not isinstance(line, dict):
        return problems(line, COMMON_SCHEMA)
    return fast_problems(line, event_schema(event))


@cache
def fast_validators() -> dict[str | None, Any]:
    """``{event: isinstance check}`` from the generated strict models; ``None``: common fields.

    A True answer means the line is valid (the models agree with the oracle); on False the
    caller asks the oracle, which decides and names the rule.
    """
    table: dict[str | None, Any] = {
        event: _adapter(event_schema(event)).validator.isinstance_python for event in EVENT_TYPES
    }
    table[None] = _adapter(COMMON_SCHEMA).validator.isinstance_python
    return table
