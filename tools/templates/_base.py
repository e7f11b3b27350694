"""The strict base of every generated model.

Strict mode makes the models agree with the JSON Schema oracle: no ``"3"`` or ``true`` for
an integer, no string for a number, no NaN or infinity for a float. Validate JSON text with
``Model.model_validate_json``; a dict parsed from JSON (``Model.model_validate(data)``) is
checked the same way (times and UUIDs are strings with patterns, not ``datetime`` or
``UUID`` fields).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Base class of the generated models: strict, finite, extra fields as each schema says.

    ``model_dump_json()`` writes each field by its JSON name (``schema``, not the Python
    ``schema_``) and keeps the extra fields an open schema allows (a diary line's
    ``x_...``: a model of a closed schema forbids them), so a valid record dumps back as the
    same JSON; an assignment is validated as a field given to the constructor is
    (``row.horizon = "oops"`` raises)."""

    model_config = ConfigDict(
        strict=True,
        allow_inf_nan=False,
        populate_by_name=True,
        serialize_by_alias=True,
        validate_assignment=True,
        extra="allow",
    )
