"""The diary's event types and checking a line against its event schema.

The 19 event types of record_version 1 each have a schema in
``spec/schemas/diary/events/``; a line whose event is not one of them is checked against
the common fields only (the format allows new event types). Checking goes through the
JSON Schema oracle (:mod:`trainrecord.schemas`), so every problem carries its rule id.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from pydantic import ValidationError

from trainrecord.errors import Problem, safe_value
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


NOT_AN_OBJECT = "the line is not a JSON object"
"""What verify, show, plot and validate say of a diary.jsonl line that is JSON but no object."""


def not_an_object(line: Any) -> Problem:
    """The problem of a diary.jsonl line that is JSON but not an object (``[1, 2]``,
    ``"x"``): ``diary.file.json`` ("every line of diary.jsonl is one strict JSON object"),
    checked before any schema, as spec/README.md's Diary verification orders the checks and
    the conformance suite's ``diary.file.json`` tamper pins it. ``diary.line.type`` is the
    schema's rule for such a value given to the schema (spec/vectors/diary/line.json); a
    line of the file never gets that far."""
    return Problem("diary.file.json", (), NOT_AN_OBJECT, safe_value(line))


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


def _field_schema(schema: Any) -> Any:
    from pydantic_core import core_schema

    if schema.get("type") == "function-after" and schema["schema"].get("type") == "literal":
        schema = schema["schema"]  # Literal["alarm"] with a min_length the literal implies
    if schema.get("type") == "literal" and all(type(v) is int for v in schema.get("expected", ())):
        # pydantic's Literal[1] takes True (True == 1); JSON Schema's const 1 does not
        return core_schema.chain_schema([core_schema.int_schema(strict=True), schema])
    return schema


def _dict_validator(model: Any, omit: frozenset[str]) -> Any:
    """A validator of plain dicts with the checks of a generated model (no model built),
    except those of the fields in ``omit``."""
    from pydantic_core import CoreConfig, SchemaValidator, core_schema

    top = model.__pydantic_core_schema__
    definitions = None
    if top.get("type") == "definitions":
        definitions, top = top["definitions"], top["schema"]
    if top.get("type") != "model" or top["schema"].get("type") != "model-fields":
        return _adapter_for_model(model).validator.isinstance_python
    fields = {
        name: core_schema.typed_dict_field(
            _field_schema(f["schema"]), required=f["schema"].get("type") != "default"
        )
        for name, f in top["schema"]["fields"].items()
        if name not in omit
    }
    config = CoreConfig(strict=True, allow_inf_nan=False)  # the models' own config
    schema: core_schema.CoreSchema = core_schema.typed_dict_schema(
        fields, extra_behavior="ignore", total=True, config=config
    )
    if definitions is not None:
        schema = core_schema.definitions_schema(schema, definitions)
    return SchemaValidator(schema, config).isinstance_python


def _adapter_for_model(model: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(model)


CHAIN_FIELDS = frozenset({"prev", "hash"})
"""Fields the fast checks leave to the chain code (see :func:`fast_validators`)."""


@cache
def fast_validators() -> dict[str | None, Any]:
    """``{event: check}`` built from the generated strict models; ``None``: common fields.

    Each check takes a parsed line and answers True when the line is valid, given two
    things its caller makes sure of, as the chain code (:func:`trainrecord.diary.chain.scan`)
    and the writer (:func:`check_line`) do:

    * ``prev`` and ``hash`` (:data:`CHAIN_FIELDS`) are strings. The checks do not look at
      them: the chain code takes a line on the fast path only when both are strings,
      compares them with the hashes it computes (so a malformed one fails there) and checks
      their format on a range's first line; the writer makes them itself.
    * the check is the one of the line's own event (``table[line["event"]]``), so an event
      check does not test the event name again; the common check does (any event name).

    On any failure the caller asks the oracle, which decides and names the rule. A True
    answer agrees with the oracle (tests/diary).
    """
    import trainrecord_spec

    table: dict[str | None, Any] = {
        event: _confirmed(
            _dict_validator(trainrecord_spec.MODELS[event_schema(event)], CHAIN_FIELDS | {"event"}),
            event_schema(event),
        )
        for event in EVENT_TYPES
    }
    table[None] = _dict_validator(trainrecord_spec.MODELS[COMMON_SCHEMA], CHAIN_FIELDS)
    return table


def _conditional(node: Any) -> bool:
    """Whether a schema holds an ``if`` (which datamodel-code-generator drops)."""
    if isinstance(node, dict):
        return "if" in node or any(_conditional(v) for v in node.values())
    return isinstance(node, list) and any(_conditional(v) for v in node)


def _confirmed(check: Any, schema_id: str) -> Any:
    """``check``, and for a schema with ``if``/``then`` (alarm: a null baseline only for
    no_gradient), which the generated model does not check, the oracle on what it accepts.
    The chain code gives its checks lines without prev and hash: the oracle is asked with
    well-formed stand-ins, whose format the chain code checks itself."""
    from trainrecord.schemas import schema_by_id

    schema = schema_by_id(schema_id)
    if not _conditional(schema):
        return check
    rule = _if_then(schema)
    if rule is not None:  # the oracle is slow (a quarter of a bench diary is alarms: 10 x)

        def quick(line: dict[str, Any]) -> bool:
            return bool(check(line)) and rule(line)

        return quick

    def both(line: dict[str, Any]) -> bool:
        if not check(line):
            return False
        return not problems({**line, "prev": "0" * 64, "hash": "0" * 64}, schema_id)

    return both


_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
}
_NOTES = {"description", "x-rules"}


def _json_key(value: Any) -> tuple[Any, Any]:
    """A JSON scalar as JSON Schema compares it in ``enum`` and ``const``: a number by its
    value whatever its spelling (1 equals 1.0), a boolean apart from numbers (True is not
    1), a string by its text; an array or object raises TypeError (unhashable)."""
    kind = value.__class__
    key = ("number", value) if kind is int or kind is float else (kind, value)
    hash(key)
    return key


def _if_then(schema: dict[str, Any]) -> Callable[[dict[str, Any]], bool] | None:
    """A check of a schema's top-level ``if``/``then`` when both use only ``required`` and
    properties with ``enum``/``const`` (if) and ``type`` (then), the shape the alarm's
    has; None for any other (then the oracle is asked). True: the ``then`` holds or the
    ``if`` does not; a ``then`` that fails leaves the line to the oracle."""
    cond, then = schema.get("if"), schema.get("then")
    if not isinstance(cond, dict) or not isinstance(then, dict) or "else" in schema:
        return None
    if set(cond) - _NOTES - {"required", "properties"} or set(then) - _NOTES - {"properties"}:
        return None
    wanted = cond.get("properties", {})
    if any(set(v) - _NOTES - {"enum", "const"} for v in wanted.values()):
        return None
    typed = then.get("properties", {})
    if any(set(v) - _NOTES - {"type"} for v in typed.values()):
        return None
    if any(not isinstance(v["type"], str) or v["type"] not in _JSON_TYPES for v in typed.values()):
        return None
    required = tuple(cond.get("required", ()))
    try:  # JSON equality as (kind, value) pairs: True is not 1, but 1 is 1.0 (one number)
        allowed = tuple(
            (k, frozenset(_json_key(o) for o in (v["enum"] if "enum" in v else [v["const"]])))
            for k, v in wanted.items()
            if set(v) - _NOTES
        )
    except TypeError:  # an array or object among the options: the oracle answers
        return None
    tests = tuple((k, _JSON_TYPES[v["type"]]) for k, v in typed.items())
    absent = object()

    def holds(line: dict[str, Any]) -> bool:
        for k in required:
            if k not in line:
                return True
        for k, options in allowed:
            value = line.get(k, absent)
            if value is absent:
                continue
            kind = value.__class__  # (_json_key inline: a call per alarm line costs)
            try:
                if (("number", value) if kind is int or kind is float else (kind, value)) not in (
                    options
                ):
                    return True
            except TypeError:  # an array or object: equal to no option
                return True
        for k, test in tests:  # noqa: SIM110 (a loop: all() over a generator costs 2x here)
            if k in line and not test(line[k]):
                return False
        return True

    return holds


def check_line(line: dict[str, Any]) -> list[Problem]:
    """Every schema problem of a line about to be written (fast check first, then the oracle).

    The writer's own prev and hash are well formed by construction, and the check is the
    one of the line's event, which is all the fast check leaves out.
    """
    event = line.get("event")
    valid = fast_validators()
    check = valid.get(event, valid[None]) if isinstance(event, str) else valid[None]
    if check(line):
        return []
    return problems(line, event_schema(event))
