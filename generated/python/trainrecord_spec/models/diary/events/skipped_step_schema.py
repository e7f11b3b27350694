# DO NOT EDIT: generated from spec/schemas/diary/events/skipped_step.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .. import common_schema
from ..common_schema import DiaryLineCommon


class DiarySkippedStep(DiaryLineCommon):
    """
    Diary event skipped_step: The GradScaler skipped the optimizer step because gradients were not finite.
    """

    event: Annotated[Literal['skipped_step'], Field(min_length=1)]
    """
    Always "skipped_step".
    """
    step: Annotated[int, Field(ge=0)]
    """
    The optimizer step at which the check ran, counting from 0.
    """
    severity: Literal['info']
    """
    Always "info" for skipped_step.
    """
    scale: Annotated[float, Field(gt=0.0)]
    """
    The GradScaler's scale when the step was skipped. Positive.
    """
    layers: list[common_schema.LayerName]
    """
    The layers whose gradients were not finite.
    """
