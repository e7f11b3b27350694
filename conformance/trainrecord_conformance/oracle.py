"""The oracle the suite judges by: :func:`trainrecord.schemas.problems`.

It validates against a whole schema (``<$id>``) or a part of one (``<$id>#/oneOf/0``), with
the spec's integer and number rules and each error's rule id from ``x-rules``. A report's
``oneOf`` over ``kind`` carries a discriminator, so the oracle judges a report by the branch
it belongs to. This module only gives the suite one name for it.
"""

from __future__ import annotations

from typing import Any

from trainrecord import schemas
from trainrecord.errors import Problem


def schema_problems(instance: Any, pointer: str) -> list[Problem]:
    """Every problem of ``instance`` against the schema or subschema at ``pointer``."""
    return schemas.problems(instance, pointer)
