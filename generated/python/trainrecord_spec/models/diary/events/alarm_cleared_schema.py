# DO NOT EDIT: generated from spec/schemas/diary/events/alarm_cleared.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..common_schema import DiaryLineCommon


class DiaryAlarmCleared(DiaryLineCommon):
    """
    Diary event alarm_cleared: A layer's gradient norm returned to its band after an alarm.
    """

    event: Annotated[Literal['alarm_cleared'], Field(min_length=1)]
    """
    Always "alarm_cleared".
    """
    step: Annotated[int, Field(ge=0)]
    """
    The optimizer step at which the check ran, counting from 0.
    """
    layer: Annotated[str, Field(min_length=1)]
    """
    The module name from model.named_modules().
    """
    diagnosis: Literal['no_gradient', 'vanishing', 'exploding']
    """
    The diagnosis of the alarm that cleared: no_gradient, vanishing or exploding.
    """
    grad_norm: Annotated[float, Field(ge=0.0)]
    """
    The layer's gradient norm at this check.
    """
    baseline: Annotated[float, Field(ge=0.0)]
    """
    The layer's baseline: 10 to the running mean of log10 gradient norm.
    """
