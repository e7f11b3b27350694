# DO NOT EDIT: generated from spec/schemas/diary/events/loss_reduced.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..common_schema import DiaryLineCommon


class DiaryLossReduced(DiaryLineCommon):
    """
    Diary event loss_reduced: The loss passed to step() had several elements; its mean was recorded. Written once per run.
    """

    event: Annotated[Literal['loss_reduced'], Field(min_length=1)]
    """
    Always "loss_reduced".
    """
    step: Annotated[int, Field(ge=0)]
    """
    The optimizer step at which the check ran, counting from 0.
    """
    severity: Literal['info']
    """
    Always "info" for loss_reduced.
    """
    elements: Annotated[int, Field(ge=2)]
    """
    How many elements the loss had (at least 2: a one-element loss needs no reduction).
    """
