# DO NOT EDIT: generated from spec/schemas/diary/events/no_gradients.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..common_schema import DiaryLineCommon


class DiaryNoGradients(DiaryLineCommon):
    """
    Diary event no_gradients: A check found no gradients at all. Written once per run; every such check is counted in run_end.counts.checks_without_gradients.
    """

    event: Annotated[Literal['no_gradients'], Field(min_length=1)]
    """
    Always "no_gradients".
    """
    step: Annotated[int, Field(ge=0)]
    """
    The optimizer step at which the check ran, counting from 0.
    """
    severity: Literal['warning']
    """
    Always "warning" for no_gradients.
    """
    message: Annotated[str, Field(min_length=1)]
    """
    What to fix, e.g. call monitor.step() after loss.backward().
    """
