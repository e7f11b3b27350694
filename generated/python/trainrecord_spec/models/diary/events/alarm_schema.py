# DO NOT EDIT: generated from spec/schemas/diary/events/alarm.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..common_schema import DiaryLineCommon


class DiaryAlarm(DiaryLineCommon):
    """
    Diary event alarm: A layer's gradient norm left its band around the baseline.
    """

    event: Annotated[Literal['alarm'], Field(min_length=1)]
    """
    Always "alarm".
    """
    step: Annotated[int, Field(ge=0)]
    """
    The optimizer step at which the check ran, counting from 0.
    """
    severity: Literal['warning']
    """
    Always "warning" for alarm.
    """
    layer: Annotated[str, Field(min_length=1)]
    """
    The module name from model.named_modules().
    """
    kind: Annotated[str, Field(min_length=1)]
    """
    The module class name, e.g. Conv2d.
    """
    diagnosis: Literal['no_gradient', 'vanishing', 'exploding']
    """
    no_gradient (the norm is 0, or the layer got no gradient and grad_norm is null), vanishing (far below the baseline) or exploding (far above it).
    """
    grad_norm: Annotated[float | None, Field(ge=0.0)]
    """
    The layer's gradient norm at this check: finite (non-finite gradients are nonfinite_gradient events), 0 when the gradient is all zero; null for a no_gradient alarm on a layer that got no gradient at all (no parameter of it has a .grad), which has no norm.
    """
    baseline: Annotated[float | None, Field(ge=0.0)]
    """
    The layer's baseline: 10 to the running mean of log10 gradient norm; null for a no_gradient alarm on a layer that never had a finite non-zero norm, which has no running mean.
    """
    sigma: float | None
    """
    How many standard deviations of log10 gradient norm the norm lies from the baseline, or null when it cannot be computed (a zero norm).
    """
