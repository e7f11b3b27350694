"""The strict base of every generated model.

Strict mode makes the models agree with the JSON Schema oracle: no ``"3"`` or ``true`` for
an integer, no string for a number, no NaN or infinity for a float. Validate JSON text with
``Model.model_validate_json``; strict pydantic refuses date-time and UUID strings given as
Python objects, so never validate a parsed dict of a record with date-time fields.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Base class of the generated models: strict, finite, extra fields as each schema says."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False, populate_by_name=True)
