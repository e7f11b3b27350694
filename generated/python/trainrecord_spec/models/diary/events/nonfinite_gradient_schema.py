# DO NOT EDIT: generated from spec/schemas/diary/events/nonfinite_gradient.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .. import common_schema
from ..common_schema import DiaryLineCommon


class DiaryNonfiniteGradient(DiaryLineCommon):
    """
    Diary event nonfinite_gradient: Some layers' gradients held NaN or infinite values.
    """

    event: Annotated[Literal['nonfinite_gradient'], Field(min_length=1)]
    """
    Always "nonfinite_gradient".
    """
    step: Annotated[int, Field(ge=0)]
    """
    The optimizer step at which the check ran, counting from 0.
    """
    severity: Literal['critical']
    """
    Always "critical" for nonfinite_gradient.
    """
    layers: list[common_schema.LayerName]
    """
    The layers whose gradients were not finite.
    """
