# DO NOT EDIT: generated from spec/schemas/diary/events/nonfinite_loss.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..common_schema import DiaryLineCommon


class DiaryNonfiniteLoss(DiaryLineCommon):
    """
    Diary event nonfinite_loss: The loss was NaN or infinite.
    """

    event: Annotated[Literal['nonfinite_loss'], Field(min_length=1)]
    """
    Always "nonfinite_loss".
    """
    step: Annotated[int, Field(ge=0)]
    """
    The optimizer step at which the check ran, counting from 0.
    """
    severity: Literal['critical']
    """
    Always "critical" for nonfinite_loss.
    """
    value: Literal['NaN', 'Infinity', '-Infinity']
    """
    What the loss was: "NaN", "Infinity" or "-Infinity".
    """
