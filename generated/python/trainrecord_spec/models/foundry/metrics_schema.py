# DO NOT EDIT: generated from spec/schemas/foundry/metrics.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field
from trainrecord_spec._base import StrictModel
from typing_extensions import TypeAliasType


class FoundryMetricsRow(StrictModel):
    """
    One reported number. Every row has exactly these five fields.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    benchmark: Annotated[str, Field(pattern='\\S')]
    """
    The benchmark or dataset name. Text that is not blank (it has a character other than white space).
    """
    metric: Annotated[str, Field(pattern='\\S')]
    """
    The metric name. Text that is not blank.
    """
    horizon: Annotated[int, Field(ge=0)]
    """
    The forecast horizon: an integer, zero or greater. A boolean or a number written with a fraction (1.0) is not an integer.
    """
    seed: Annotated[int, Field(ge=0)]
    """
    The random seed: an integer, zero or greater.
    """
    value: float
    """
    The metric value: a finite number. Booleans, infinity and not-a-number are invalid, and so is an integer too large for a 64-bit float (such as 10**400: its nearest double is infinite).
    """


FoundryMetrics = TypeAliasType(
    "FoundryMetrics",
    Annotated[list[FoundryMetricsRow], Field(min_length=1, title='FoundryMetrics')],
)
"""
Foundry run records v1: metrics.json, a non-empty array with one object per reported number.
"""
