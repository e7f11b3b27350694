"""The oracle for a part of a schema: the jsonschema oracle applied to one subschema.

:func:`trainrecord.schemas.problems` validates against a whole schema. A report is a
``oneOf`` of three kinds, and the whole-schema oracle reports the errors of every branch;
the suite needs the errors of the branch an instance belongs to. This module validates
against any ``$ref``-able pointer (``<$id>#/oneOf/0``) with the same validator class,
registry and rule mapping.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

from trainrecord import schemas
from trainrecord.errors import Problem


@cache
def _validator(pointer: str) -> Any:
    return schemas.OracleValidator(
        {"$ref": pointer},
        registry=schemas.registry(),
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )


def schema_problems(instance: Any, pointer: str) -> list[Problem]:
    """Every problem of ``instance`` against the subschema at ``pointer``, with rule ids."""
    if "#" not in pointer:
        return schemas.problems(instance, pointer)
    val = _validator(pointer)
    root = schemas.schema_by_id(pointer.split("#", 1)[0])
    fallback = f"{root.get('x-format', 'schema')}.schema"
    found: list[Problem] = []
    for error in val.iter_errors(instance):
        for leaf in schemas._leaf_errors(error):
            found.extend(schemas._to_problems(leaf, fallback))
    return found
