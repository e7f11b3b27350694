# DO NOT EDIT: generated from spec/schemas/diary/events/loss_recovered.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..common_schema import DiaryLineCommon


class DiaryLossRecovered(DiaryLineCommon):
    """
    Diary event loss_recovered: The loss returned near its baseline after a spike.
    """

    event: Annotated[Literal['loss_recovered'], Field(min_length=1)]
    """
    Always "loss_recovered".
    """
    step: Annotated[int, Field(ge=0)]
    """
    The optimizer step at which the check ran, counting from 0.
    """
    value: float
    """
    The loss at this step.
    """
    baseline: float
    """
    The loss baseline.
    """
