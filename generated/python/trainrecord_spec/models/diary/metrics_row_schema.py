# DO NOT EDIT: generated from spec/schemas/diary/metrics-row.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from trainrecord_spec._base import StrictModel
from typing_extensions import TypeAliasType

Grad = TypeAliasType("Grad", Annotated[float, Field(ge=0.0)])


StuckAdditionalPropertyItem = TypeAliasType(
    "StuckAdditionalPropertyItem", Annotated[int, Field(ge=0)]
)


StuckAdditionalProperty = TypeAliasType(
    "StuckAdditionalProperty",
    Annotated[list[StuckAdditionalPropertyItem], Field(max_length=4, min_length=4)],
)


class DiaryMetricsRow(StrictModel):
    """
    One row of metrics.jsonl: what one check measured. One JSON object per line; rows may carry more fields, which readers ignore.
    """

    step: Annotated[int, Field(ge=0)]
    """
    The optimizer step of the check, counting from 0.
    """
    loss: float | Literal['NaN', 'Infinity', '-Infinity'] | None
    """
    The loss at the check: a finite number, one of "NaN", "Infinity", "-Infinity", or null when step() was given no loss.
    """
    grad: dict[str, Grad | Literal['NaN', 'Infinity'] | None]
    """
    The gradient norm per layer at the check: a non-negative number, or "NaN"/"Infinity" when the gradient was not finite (a norm is never negative: "-Infinity" is refused), or null when the layer got no gradient.
    """
    stuck: dict[str, StuckAdditionalProperty]
    """
    Per producer layer, the stuck-channel counts [certified, constant, silent, decayed].
    """
