"""The JSON Schema oracle: load spec schemas and validate instances against them.

Schemas ship inside ``trainrecord_spec`` (copied there by ``make generate``). This module
builds one ``referencing`` registry over all of them and validates with
``jsonschema.Draft202012Validator`` with the two type rules the spec fixes (see
``spec/README.md``, "The oracle"):

* ``integer`` is an integer token: ``3`` is one, ``3.0``, ``true`` and ``"3"`` are not;
* ``number`` is a finite integer or float, never a boolean; an integer too large for a
  64-bit float (``10**400``: its nearest double is infinite) is not finite.

Every schema error becomes a :class:`~trainrecord.errors.Problem` whose rule id comes from
the ``x-rules`` annotation of the subschema where the error arose: ``{"<keyword>": "<rule
id>"}``, with ``"*"`` as the fallback for any keyword of that subschema.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from trainrecord.errors import Problem, RecordRefused, safe_value

SCHEMA_ROOT = "schemas"


def _is_integer(checker: Any, instance: Any) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


def finite_number(value: Any) -> bool:
    """Whether ``value`` (read from JSON) is a finite number: a finite float, or an int (not
    a bool) whose nearest double is finite (``math.isfinite`` raises ``OverflowError`` on
    ``10**400``). What the schemas' "number" is, and what a reader of a record that may
    hold anything (``show``) takes for a number."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        try:
            float(value)  # an integer whose nearest double is infinite is not finite
        except OverflowError:
            return False
        return True
    return isinstance(value, float) and math.isfinite(value)


def _is_number(checker: Any, instance: Any) -> bool:
    return finite_number(instance)


TYPE_CHECKER = Draft202012Validator.TYPE_CHECKER.redefine_many(
    {"integer": _is_integer, "number": _is_number}
)

_BOUNDS: dict[str, tuple[Any, str]] = {
    "minimum": (lambda value, bound: value < bound, "is less than the minimum of"),
    "maximum": (lambda value, bound: value > bound, "is greater than the maximum of"),
    "exclusiveMinimum": (
        lambda value, bound: value <= bound,
        "is less than or equal to the minimum of",
    ),
    "exclusiveMaximum": (
        lambda value, bound: value >= bound,
        "is greater than or equal to the maximum of",
    ),
}


def _bound(keyword: str) -> Any:
    """``keyword``'s check that also holds an integer too large for a float to its bound.
    jsonschema applies the bounds to "number" instances only, and such an integer is no
    number here (:func:`_is_number`), though it is an integer: ``seq: 10**400`` passed
    ``maximum`` (and the strict models, which compare exactly, refused it)."""
    original = Draft202012Validator.VALIDATORS[keyword]
    broken, words = _BOUNDS[keyword]

    def check(validator: Any, bound: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if _is_integer(None, instance) and not _is_number(None, instance):
            if broken(instance, bound):
                digits = len(str(abs(instance)))
                sign = "a negative" if instance < 0 else "an"
                yield ValidationError(f"{sign} integer of {digits} digits {words} {bound!r}")
            return
        yield from original(validator, bound, instance, schema)

    return check


OracleValidator = jsonschema.validators.extend(
    Draft202012Validator,
    validators={keyword: _bound(keyword) for keyword in _BOUNDS},
    type_checker=TYPE_CHECKER,
)
"""Draft 2020-12 with the spec's integer and number rules."""


def _schema_files() -> Iterator[tuple[str, Any]]:
    root = resources.files("trainrecord_spec").joinpath(SCHEMA_ROOT)
    stack = [(root, "")]
    while stack:
        folder, prefix = stack.pop()
        for entry in folder.iterdir():
            name = f"{prefix}{entry.name}"
            if entry.is_dir():
                stack.append((entry, name + "/"))
            elif entry.name.endswith(".schema.json"):
                yield name, json.loads(entry.read_text(encoding="utf-8"))


@cache
def all_schemas() -> dict[str, dict[str, Any]]:
    """Every shipped schema by its path under ``schemas/`` (e.g. ``foundry/witness.schema.json``)."""
    return dict(sorted(_schema_files()))


@cache
def registry() -> Registry:
    """A registry holding every shipped schema under its ``$id``."""
    reg: Registry = Registry()
    for schema in all_schemas().values():
        # Without "$schema": a $ref to another file's root would otherwise make jsonschema
        # pick the stock Draft202012Validator (validator_for) and drop the oracle's integer
        # and number rules inside that file.
        contents = {k: v for k, v in schema.items() if k != "$schema"}
        reg = reg.with_resource(schema["$id"], Resource.from_contents(contents, DRAFT202012))
    return reg.crawl()


def schema_by_id(schema_id: str) -> dict[str, Any]:
    """The schema whose ``$id`` is ``schema_id``, or whose path under schemas/ is that."""
    for path, schema in all_schemas().items():
        if schema_id in (schema["$id"], path):
            return schema
    raise KeyError(f"no schema with $id or path {schema_id!r}")


@cache
def validator(schema_id: str) -> Draft202012Validator:
    """The oracle validator for one schema, with format checking.

    ``schema_id`` is a schema's ``$id`` or its path under ``schemas/``, optionally followed
    by a JSON pointer into it (``<$id>#/$defs/training_report``) to validate against a part.
    """
    base, _, pointer = schema_id.partition("#")
    schema = schema_by_id(base)
    if pointer:
        schema = {"$ref": f"{schema['$id']}#{pointer}", "x-format": schema.get("x-format")}
    return OracleValidator(
        schema, registry=registry(), format_checker=Draft202012Validator.FORMAT_CHECKER
    )


def _keywords(error: ValidationError) -> dict[str, Any]:
    """The subschema where ``error`` arose; {} for a boolean schema (``false``), which has
    no keywords (an error with a context, from ``oneOf`` or ``anyOf``, is never one)."""
    return error.schema if isinstance(error.schema, dict) else {}


def _rule_for(error: ValidationError, fallback: str) -> str:
    rules = error.schema.get("x-rules") if isinstance(error.schema, dict) else None
    if isinstance(rules, dict):
        return rules.get(error.validator) or rules.get("*") or fallback
    return fallback


def _selected_branch(error: ValidationError) -> list[ValidationError]:
    """The context errors of the branch a ``discriminator`` annotation selects.

    A ``oneOf`` with ``"discriminator": {"propertyName": p}`` (as the schemas carry for the
    code generator) is judged by the branch whose ``p`` the instance matches: the branches
    that fail on ``p`` itself are dropped, so a bad field is reported once, not per branch.
    """
    context = list(error.context or ())
    prop = (_keywords(error).get("discriminator") or {}).get("propertyName")
    if error.validator != "oneOf" or not prop or not isinstance(error.instance, dict):
        return context
    at_prop = (*error.absolute_path, prop)
    failing = {
        sub.relative_schema_path[0] for sub in context if tuple(sub.absolute_path) == at_prop
    }
    kept = [sub for sub in context if sub.relative_schema_path[0] not in failing]
    return kept or context


def _leaf_errors(error: ValidationError) -> Iterator[ValidationError]:
    """Descend into oneOf/anyOf contexts to the branch errors that carry a rule."""
    rules = error.schema.get("x-rules") if isinstance(error.schema, dict) else None
    if error.context and not (isinstance(rules, dict) and error.validator in rules):
        subs = _selected_branch(error)
        merged = _unknown_discriminator(error, subs)
        if merged is not None:
            yield merged  # the most useful problem first: which values the field takes
            subs = [sub for sub in subs if not _at_discriminator(error, sub)]
            yield from _in_every_branch(subs)  # no branch chosen: only what all of them say
            return
        if _lacks_discriminator(error):  # no branch chosen either: its absence comes first
            common = list(_in_every_branch(subs))
            missing = [leaf for leaf in common if _names_discriminator(error, leaf)]
            yield from missing + [leaf for leaf in common if leaf not in missing]
            return
        for sub in subs:
            yield from _leaf_errors(sub)
    else:
        yield error


def _in_every_branch(subs: list[ValidationError]) -> Iterator[ValidationError]:
    """The leaf errors of a ``oneOf`` whose discriminator matched no branch that every
    branch reports (a common field missing): one branch's own fields are no problem of an
    instance that is of no branch (a wrong ``event`` listed every event type's required
    fields, 85 lines for one line)."""
    by_branch: dict[Any, list[ValidationError]] = {}
    for sub in subs:
        branch = sub.relative_schema_path[0] if sub.relative_schema_path else None
        by_branch.setdefault(branch, []).extend(_leaf_errors(sub))

    def key(leaf: ValidationError) -> tuple[Any, ...]:
        return (tuple(leaf.absolute_path), leaf.validator, leaf.message)

    if not by_branch:
        return
    common = set.intersection(*({key(leaf) for leaf in leaves} for leaves in by_branch.values()))
    for leaf in next(iter(by_branch.values())):
        if key(leaf) in common:
            yield leaf


def _lacks_discriminator(error: ValidationError) -> bool:
    """Whether the instance of a discriminated ``oneOf`` lacks its property (``kind``)."""
    prop = (_keywords(error).get("discriminator") or {}).get("propertyName")
    return bool(prop) and isinstance(error.instance, dict) and prop not in error.instance


def _names_discriminator(error: ValidationError, leaf: ValidationError) -> bool:
    """Whether ``leaf`` is the ``required`` error for the discriminator's property."""
    prop = (_keywords(error).get("discriminator") or {}).get("propertyName")
    return (
        leaf.validator == "required"
        and tuple(leaf.absolute_path) == tuple(error.absolute_path)
        and leaf.message.startswith(repr(prop))
    )


def _at_discriminator(error: ValidationError, sub: ValidationError) -> bool:
    prop = (_keywords(error).get("discriminator") or {}).get("propertyName")
    return (
        bool(prop)
        and sub.validator == "const"
        and tuple(sub.absolute_path) == (*error.absolute_path, prop)
    )


def _unknown_discriminator(
    error: ValidationError, subs: list[ValidationError]
) -> ValidationError | None:
    """When no branch of a discriminated ``oneOf`` matches its property (every branch fails
    its ``const``), one error naming every accepted value instead of one per branch."""
    consts = [sub for sub in subs if _at_discriminator(error, sub)]
    if len(consts) < 2:
        return None
    prop = _keywords(error)["discriminator"]["propertyName"]
    values = ", ".join(str(v) for v in dict.fromkeys(sub.validator_value for sub in consts))
    merged = ValidationError.create_from(consts[0])
    merged.parent = consts[0].parent
    merged.message = f"{prop} must be one of {values}"
    return merged


def _to_problems(leaf: ValidationError, fallback: str) -> list[Problem]:
    rule = _rule_for(leaf, fallback)
    path: tuple[str | int, ...] = tuple(leaf.absolute_path)
    if (
        leaf.validator == "required"
        and isinstance(leaf.instance, dict)
        and isinstance(leaf.validator_value, list)
    ):
        names = [
            k
            for k in leaf.validator_value
            if k not in leaf.instance and leaf.message.startswith(repr(k))
        ]
        return [
            Problem(rule, (*path, k), f"required field {k!r} is missing; add it") for k in names[:1]
        ]
    if leaf.validator in ("additionalProperties", "unevaluatedProperties") and isinstance(
        leaf.instance, dict
    ):
        allowed = set(_keywords(leaf).get("properties", {}))
        extra = sorted((k for k in leaf.instance if k not in allowed), key=str)
        return [
            Problem(rule, (*path, k), f"field {k!r} is not allowed here; remove it") for k in extra
        ]
    return [Problem(rule, path, leaf.message, safe_value(leaf.instance))]


def _error_order(error: Any) -> tuple[list[str], int]:
    """Errors by the instance path, then by how deep in the schema they arose."""
    return list(map(str, error.path)), len(error.schema_path)


def problems(instance: Any, schema_id: str) -> list[Problem]:
    """Every problem of ``instance`` against the schema, each with its rule id.

    ``schema_id`` is as for :func:`validator` (a ``#/pointer`` selects a part of a schema).
    """
    val = validator(schema_id)
    schema = val.schema if isinstance(val.schema, dict) else {}  # validator() gives a dict
    fallback = f"{schema.get('x-format', 'schema')}.schema"
    found: list[Problem] = []
    # by the field's path; at one path the nearest schema first (an event's own rule for
    # a field, before the rule of the common part it includes through allOf)
    for error in sorted(val.iter_errors(instance), key=_error_order):
        for leaf in _leaf_errors(error):
            found.extend(_to_problems(leaf, fallback))
    # every branch of an unselected oneOf reports the same missing field: list each once
    return list({(p.rule, p.path, p.message, p.value): p for p in found}.values())


def check(instance: Any, schema_id: str) -> None:
    """Raise :class:`RecordRefused` with every problem when ``instance`` is invalid."""
    found = problems(instance, schema_id)
    if found:
        raise RecordRefused(found)
