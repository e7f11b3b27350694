# DO NOT EDIT: generated from tools/templates/__init__.py by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
"""trainrecord_spec: the generated models, schemas, vectors and rules of trainrecord.

Everything here is produced from ``spec/`` by ``make generate``. The schemas, vectors and
rule registry ship as package data: reach them with :func:`resource` or
``importlib.resources.files("trainrecord_spec")``. Only pydantic is needed to use this
package.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from pydantic import TypeAdapter

from trainrecord_spec._models import MODELS

__all__ = ["MODELS", "adapter", "load_json", "resource", "schema_ids"]


def resource(*parts: str) -> Traversable:
    """A file shipped with the package, e.g. ``resource("schemas", "foundry", "witness.schema.json")``."""
    node = resources.files("trainrecord_spec")
    for part in parts:
        node = node.joinpath(part)
    return node


def load_json(*parts: str) -> Any:
    """Parse a shipped JSON file (a schema, a vector file or a rule registry)."""
    return json.loads(resource(*parts).read_text(encoding="utf-8"))


def schema_ids() -> list[str]:
    """The ``$id`` of every schema that has a generated model."""
    return sorted(MODELS)


@cache
def adapter(schema_id: str) -> TypeAdapter[Any]:
    """A pydantic TypeAdapter for the model generated from the schema with this ``$id``."""
    return TypeAdapter(MODELS[schema_id])
