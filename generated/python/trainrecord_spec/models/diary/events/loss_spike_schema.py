# DO NOT EDIT: generated from spec/schemas/diary/events/loss_spike.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..common_schema import DiaryLineCommon


class DiaryLossSpike(DiaryLineCommon):
    """
    Diary event loss_spike: The loss jumped far above its running baseline.
    """

    event: Annotated[Literal['loss_spike'], Field(min_length=1)]
    """
    Always "loss_spike".
    """
    step: Annotated[int, Field(ge=0)]
    """
    The optimizer step at which the check ran, counting from 0.
    """
    severity: Literal['warning']
    """
    Always "warning" for loss_spike.
    """
    value: float
    """
    The loss at this step (finite: a non-finite loss is a nonfinite_loss event).
    """
    baseline: float
    """
    The loss baseline the spike was measured against.
    """
